//! `ferry-bench commit`: `--clients` connections, each committing single-row increments (random key among
//! `--keys`, domain spread over `--domains`) for `--seconds`; reports commits/s, latency percentiles, and the
//! node's group and fsync counts over the run.

use std::time::{Duration, Instant};

use anyhow::Context;
use ferry_client::{Client, Txn};
use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};

#[derive(clap::Args)]
pub struct Args {
    /// The node's protocol address.
    #[arg(long, default_value = "127.0.0.1:7301")]
    addr: String,
    #[arg(long, default_value_t = 64)]
    clients: usize,
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Distinct rows the increments spread over.
    #[arg(long, default_value_t = 100_000)]
    keys: u64,
    /// Domains the transactions spread over (0..D).
    #[arg(long, default_value_t = 1)]
    domains: u32,
    /// Table written to.
    #[arg(long, default_value = "bench")]
    table: String,
    /// Seed of the key and domain choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

struct ClientResult {
    latencies_us: Histogram<u64>,
    errors: u64,
    first_error: Option<String>,
}

async fn one_client(args: &Args, id: usize, deadline: Instant) -> anyhow::Result<ClientResult> {
    let mut client = Client::connect(&args.addr).await.with_context(|| format!("connecting to {}", args.addr))?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(args.seed.wrapping_mul(1_000_003).wrapping_add(id as u64));
    let mut result = ClientResult { latencies_us: Histogram::new(3)?, errors: 0, first_error: None };
    while Instant::now() < deadline {
        let key = format!("k{}", rng.random_range(0..args.keys.max(1)));
        let domain = rng.random_range(0..args.domains.max(1));
        let started = Instant::now();
        match client.transact(Txn::new().domain(domain).increment(&args.table, &key, "n", 1)).await {
            Ok(_) => result.latencies_us.record(started.elapsed().as_micros().max(1) as u64)?,
            Err(e) => {
                result.errors += 1;
                result.first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    Ok(result)
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let args = std::sync::Arc::new(args);
    let mut control = Client::connect(&args.addr).await.with_context(|| format!("connecting to {}", args.addr))?;
    let before = control.stats().await?;
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(args.seconds);
    let tasks: Vec<_> = (0..args.clients)
        .map(|id| {
            let args = args.clone();
            tokio::spawn(async move { one_client(&args, id, deadline).await })
        })
        .collect();
    let mut latencies = Histogram::<u64>::new(3)?;
    let (mut errors, mut first_error) = (0u64, None);
    for task in tasks {
        let r = task.await??;
        latencies.add(&r.latencies_us)?;
        errors += r.errors;
        if first_error.is_none() {
            first_error = r.first_error;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let after = control.stats().await?;
    let commits = latencies.len();
    let groups = after.groups - before.groups;
    let fsyncs = after.fsyncs - before.fsyncs;
    let node_commits = after.commits - before.commits;
    let commits_per_s = commits as f64 / elapsed;
    let p50_ms = latencies.value_at_quantile(0.50) as f64 / 1000.0;
    let p99_ms = latencies.value_at_quantile(0.99) as f64 / 1000.0;
    let avg_group_size = if groups > 0 { node_commits as f64 / groups as f64 } else { 0.0 };
    println!("clients {}  elapsed {:.2}s  commits {}  errors {}", args.clients, elapsed, commits, errors);
    if let Some(e) = first_error {
        println!("first error: {e}");
    }
    println!("commits/s {commits_per_s:.0}  p50 {p50_ms:.3} ms  p99 {p99_ms:.3} ms  groups {groups}  avg group {avg_group_size:.2}  fsyncs {fsyncs}");
    let figures = serde_json::json!({
        "commits_per_s": (commits_per_s * 10.0).round() / 10.0,
        "p50_ms": p50_ms,
        "p99_ms": p99_ms,
        "avg_group_size": (avg_group_size * 100.0).round() / 100.0,
        "fsyncs": fsyncs,
        "groups": groups,
        "commits": commits,
        "errors": errors,
        "clients": args.clients,
        "seconds": (elapsed * 100.0).round() / 100.0,
    });
    println!("{figures}");
    Ok(())
}
