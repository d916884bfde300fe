//! `ferry-bench consumers`: what change consumers cost and deliver, self-contained. For each consumer count of
//! `--consumers` (0 first: the baseline) a fresh master — with `--semi-sync`, durability `local+network` and one
//! replica confirming — takes `--clients` connections committing single-row increments over `--domains` domains
//! for `--seconds`, while that many consumers (`ferry_client::Subscription`, consumer token) follow it from the
//! start. Per run: the master's commit rate, each consumer's delivered changes per second over the same window,
//! and how long after the writers stop the slowest consumer has everything (`drain_s`). The last line is one JSON
//! object with every run.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use ferry_client::{Client, SubscribeOptions, Subscription, Txn};
use rand::{Rng, SeedableRng};
use serde_json::{json, Value as Json};

use crate::nodes::{ferryd_path, BenchNode};

/// The consumers' token of the benchmark's nodes.
const CONSUMER_TOKEN: &str = "ferry-bench-consumer-token-0123456789";
/// Longest wait for the consumers to receive everything once the writers stop.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(clap::Args)]
pub struct Args {
    /// Consumer counts to run with, each on a fresh master (0: the master's commit rate without consumers).
    #[arg(long, value_delimiter = ',', default_value = "0,1,10")]
    consumers: Vec<usize>,
    /// Committing connections.
    #[arg(long, default_value_t = 64)]
    clients: u32,
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Domains the commits are spread over.
    #[arg(long, default_value_t = 4)]
    domains: u32,
    /// Durability local+network on the master, with one replica confirming (consumers then get a transaction once
    /// the replica has it).
    #[arg(long)]
    semi_sync: bool,
    /// The ferryd binary (default: beside this one).
    #[arg(long)]
    ferryd: Option<PathBuf>,
}

/// One consumer's count of changes received, and when it had received all of the run's.
struct Follower {
    received: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

async fn follow(addr: String, name: String, received: Arc<AtomicU64>) -> anyhow::Result<()> {
    let mut options = SubscribeOptions::new(&name, CONSUMER_TOKEN);
    options.start = Some(ferry_core::GtidPosition::new());
    let mut sub = Subscription::open(&addr, &options).await.with_context(|| format!("{name} subscribing"))?;
    loop {
        sub.next().await.with_context(|| format!("{name} following"))?;
        received.fetch_add(1, Ordering::Relaxed);
    }
}

async fn one_run(ferryd: &std::path::Path, args: &Args, consumers: usize) -> anyhow::Result<Json> {
    let dir = tempfile::tempdir()?;
    std::fs::create_dir_all(dir.path().join("m"))?;
    let token_file = dir.path().join("m").join("consumer-token");
    std::fs::write(&token_file, CONSUMER_TOKEN)?;
    let token_arg = token_file.to_string_lossy().into_owned();
    let mut master_args = vec!["--consumer-token-file", token_arg.as_str()];
    if args.semi_sync {
        master_args.extend(["--durability", "local+network", "--semi-sync-timeout-ms", "60000"]);
    }
    let master = BenchNode::start(ferryd, &dir.path().join("m"), 1, &master_args)?;
    let replica = if args.semi_sync {
        let replica = BenchNode::start(ferryd, &dir.path().join("r"), 2, &["--read-only"])?;
        replica.post("/v1/replication/m/change-master", json!({"master": master.listen})).await?;
        replica.post("/v1/replication/m/start", json!({})).await?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while master.get("/v1/status").await?["semi_sync"]["replicas_connected"] != 1 {
            anyhow::ensure!(Instant::now() < deadline, "the replica did not connect for semi-sync");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Some(replica)
    } else {
        None
    };
    let mut followers: Vec<Follower> = (0..consumers)
        .map(|i| {
            let received = Arc::new(AtomicU64::new(0));
            let task = tokio::spawn(follow(master.listen.clone(), format!("bench-{i}"), received.clone()));
            Follower { received, task }
        })
        .collect();
    let listed = Instant::now() + Duration::from_secs(30);
    while master.get("/v1/consumers").await?["consumers"].as_array().map_or(0, Vec::len) < consumers {
        anyhow::ensure!(Instant::now() < listed, "the consumers did not all subscribe");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.seconds);
    let writers: Vec<_> = (0..args.clients)
        .map(|i| {
            let (addr, domains) = (master.listen.clone(), args.domains);
            tokio::spawn(async move {
                let mut rng = rand::rngs::StdRng::seed_from_u64(u64::from(i));
                let mut c = Client::connect(&addr).await?;
                let mut n = 0u64;
                while Instant::now() < deadline {
                    let d = rng.random_range(0..domains);
                    let key = rng.random_range(0..100_000).to_string();
                    c.transact(Txn::new().domain(d).increment(&format!("t{d}"), &key, "n", 1)).await?;
                    n += 1;
                }
                anyhow::Ok(n)
            })
        })
        .collect();
    let mut committed = 0u64;
    for w in writers {
        committed += w.await??;
    }
    let window = started.elapsed().as_secs_f64();
    let delivered: Vec<u64> = followers.iter().map(|f| f.received.load(Ordering::Relaxed)).collect();
    // How long until every consumer has all of it.
    let drained = Instant::now();
    while followers.iter().any(|f| f.received.load(Ordering::Relaxed) < committed) {
        if let Some(i) = followers.iter().position(|f| f.task.is_finished()) {
            let why = match followers.swap_remove(i).task.await {
                Ok(Err(e)) => format!("{e:#}"),
                Ok(Ok(())) => "it ended".to_string(),
                Err(e) => e.to_string(),
            };
            anyhow::bail!("a consumer's stream ended before it received everything: {why}");
        }
        anyhow::ensure!(drained.elapsed() < DRAIN_TIMEOUT, "the consumers did not receive everything");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let drain_s = drained.elapsed().as_secs_f64();
    for f in &followers {
        f.task.abort();
    }
    drop(replica);
    let commits_per_s = committed as f64 / window;
    let rates: Vec<f64> = delivered.iter().map(|d| *d as f64 / window).collect();
    let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let mean = if rates.is_empty() { 0.0 } else { rates.iter().sum::<f64>() / rates.len() as f64 };
    println!(
        "{consumers:>2} consumer(s): master {commits_per_s:.0} commits/s; delivered per consumer {} changes/s (mean \
         {mean:.0}); all received {drain_s:.3} s after the writers stopped",
        if rates.is_empty() { "-".to_string() } else { format!("min {min:.0}") },
    );
    Ok(json!({
        "consumers": consumers,
        "master_commits_per_s": commits_per_s.round(),
        "delivered_per_consumer_per_s_min": if rates.is_empty() { Json::Null } else { json!(min.round()) },
        "delivered_per_consumer_per_s_mean": if rates.is_empty() { Json::Null } else { json!(mean.round()) },
        "delivered_total_per_s": (delivered.iter().sum::<u64>() as f64 / window).round(),
        "drain_s": (drain_s * 1000.0).round() / 1000.0,
        "committed": committed,
    }))
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let ferryd = ferryd_path(args.ferryd.as_deref())?;
    println!(
        "consumers: {} clients, {} s per run, {} domain(s), durability {}",
        args.clients,
        args.seconds,
        args.domains,
        if args.semi_sync { "local+network (one replica confirming)" } else { "local" }
    );
    let mut runs = Vec::new();
    for &n in &args.consumers {
        runs.push(one_run(&ferryd, &args, n).await?);
    }
    let baseline = runs.iter().find(|r| r["consumers"] == 0).and_then(|r| r["master_commits_per_s"].as_f64());
    println!(
        "{}",
        json!({
            "bench": "consumers",
            "clients": args.clients,
            "seconds": args.seconds,
            "domains": args.domains,
            "semi_sync": args.semi_sync,
            "master_commits_per_s_without_consumers": baseline,
            "runs": runs,
        })
    );
    Ok(())
}
