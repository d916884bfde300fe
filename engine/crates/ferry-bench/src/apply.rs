//! `ferry-bench apply`: the multi-threaded replica benchmark (docs/background.md) at our scale, self-contained.
//! A master gets `--tables` tables of `--rows` rows, then `--txns` single-row increments spread over the tables from 64
//! clients — one domain per table (variant `domains`) or everything in domain 0 (variant `one-domain`, where
//! only the master's commit ids carry parallelism). For each mode and worker count a fresh replica (durability
//! `local`) receives the whole binlog into its relay log first, then its apply alone is timed, and the replica
//! process's CPU time over it measured (`apply_per_replica_cpu_s`).
//!
//! `ferry-bench keepup`: the master under 64 committing clients for `--seconds` while a replica applies; the
//! replica's lag is sampled every second.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use ferry_client::{Client, Txn};
use ferry_core::row::Value;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value as Json};

use crate::cpu;
use crate::nodes::{ferryd_path, BenchNode};

#[derive(clap::Args)]
pub struct Args {
    /// Worker counts to time (each parallel mode is run with each).
    #[arg(long, value_delimiter = ',', default_value = "1,4,10,16")]
    workers: Vec<usize>,
    /// Modes to time: serial, conservative, optimistic.
    #[arg(long, value_delimiter = ',', default_value = "serial,conservative,optimistic")]
    modes: Vec<String>,
    /// Variants: domains (one domain per table) and/or one-domain.
    #[arg(long, value_delimiter = ',', default_value = "domains,one-domain")]
    variants: Vec<String>,
    #[arg(long, default_value_t = 10)]
    tables: u32,
    #[arg(long, default_value_t = 10_000)]
    rows: u32,
    #[arg(long, default_value_t = 100_000)]
    txns: u32,
    /// The ferryd binary (default: beside this one).
    #[arg(long)]
    ferryd: Option<PathBuf>,
}

const CLIENTS: u32 = 64;
const SEED_ROWS_PER_TXN: u32 = 500;

async fn seed_and_load(master: &BenchNode, args: &Args, one_domain: bool) -> anyhow::Result<()> {
    let domain = |table: u32| if one_domain { 0 } else { table + 1 };
    let mut c = Client::connect(&master.listen).await?;
    for t in 0..args.tables {
        for start in (0..args.rows).step_by(SEED_ROWS_PER_TXN as usize) {
            let txn = (start..(start + SEED_ROWS_PER_TXN).min(args.rows))
                .fold(Txn::new().domain(domain(t)), |txn, r| {
                    txn.put(&format!("sbtest{t}"), &format!("{r}"), [("k".to_string(), Value::Int(0))].into())
                });
            c.transact(txn).await?;
        }
    }
    let per_client = args.txns / CLIENTS;
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (addr, tables, rows) = (master.listen.clone(), args.tables, args.rows);
            tokio::spawn(async move {
                let mut rng = rand::rngs::StdRng::seed_from_u64(u64::from(i));
                let mut c = Client::connect(&addr).await?;
                for _ in 0..per_client {
                    let t = rng.random_range(0..tables);
                    let d = if one_domain { 0 } else { t + 1 };
                    c.transact(Txn::new().domain(d).increment(
                        &format!("sbtest{t}"),
                        &rng.random_range(0..rows).to_string(),
                        "k",
                        1,
                    ))
                    .await?;
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// One timed apply: a fresh replica receives everything, then applies it with the SQL side's clock running.
async fn time_apply(
    ferryd: &std::path::Path,
    dir: &std::path::Path,
    master: &BenchNode,
    target: &str,
    mode: &str,
    workers: usize,
    domains: usize,
) -> anyhow::Result<Json> {
    let replica = BenchNode::start(ferryd, dir, 2, &[])?;
    let domain_max = if mode == "serial" { 1 } else { (workers * 2 / domains.max(1)).max(1).min(workers) };
    let domain_max = if domains == 1 { workers } else { domain_max };
    replica
        .post("/v1/replication/m/change-master", json!({"master": master.listen, "parallel_mode": mode, "workers": workers, "domain_workers_max": domain_max}))
        .await?;
    replica.post("/v1/replication/m/start", json!({"sql_paused": true})).await?;
    let target_pos: ferry_core::GtidPosition = target.parse()?;
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let received: ferry_core::GtidPosition =
            replica.connection().await?["received_position"].as_str().unwrap_or_default().parse()?;
        if received.is_ahead_of(&target_pos) {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "the relay log never received everything");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = replica.get("/v1/status").await?["counters"].clone();
    let cpu_before = cpu::process_cpu_s(replica.pid())?;
    let started = Instant::now();
    replica.post("/v1/replication/m/resume-sql", json!({})).await?;
    replica.wait_for(target, Duration::from_secs(300)).await?;
    let secs = started.elapsed().as_secs_f64();
    let cpu_s = cpu::process_cpu_s(replica.pid())? - cpu_before;
    let after = replica.get("/v1/status").await?["counters"].clone();
    let delta = |k: &str| after[k].as_u64().unwrap_or(0).saturating_sub(before[k].as_u64().unwrap_or(0));
    let avg_group = delta("commits") as f64 / delta("groups").max(1) as f64;
    let conn = replica.connection().await?;
    let applied = conn["transactions_applied"].as_u64().unwrap_or(0);
    Ok(json!({
        "mode": mode, "workers": workers, "domain_workers_max": domain_max,
        "applied": applied, "seconds": (secs * 1000.0).round() / 1000.0,
        "apply_per_s": (applied as f64 / secs).round(),
        "replica_cpu_s": (cpu_s * 100.0).round() / 100.0, "apply_per_replica_cpu_s": cpu::per_cpu_s(applied, cpu_s),
        "conflicts": conn["conflicts"], "retries": conn["retries"],
        "replica_avg_group_size": (avg_group * 100.0).round() / 100.0, "replica_fsyncs": delta("fsyncs"),
    }))
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let ferryd = ferryd_path(args.ferryd.as_deref())?;
    let mut all = Vec::new();
    for variant in &args.variants {
        let one_domain = match variant.as_str() {
            "domains" => false,
            "one-domain" => true,
            other => anyhow::bail!("unknown variant {other:?}: expected domains or one-domain"),
        };
        let dir = tempfile::tempdir()?;
        let master = BenchNode::start(&ferryd, &dir.path().join("master"), 1, &[])?;
        let loading = Instant::now();
        seed_and_load(&master, &args, one_domain).await.context("loading the master")?;
        let target = master.binlog_pos().await?;
        println!("{variant}: master loaded in {:.1}s, at {target}", loading.elapsed().as_secs_f64());
        let domains = if one_domain { 1 } else { args.tables as usize };
        let mut serial_rate = None;
        for mode in &args.modes {
            let worker_counts: Vec<usize> = if mode == "serial" { vec![1] } else { args.workers.clone() };
            for workers in worker_counts {
                let run_dir = dir.path().join(format!("replica-{mode}-{workers}"));
                let mut run = time_apply(&ferryd, &run_dir, &master, &target, mode, workers, domains).await?;
                std::fs::remove_dir_all(&run_dir).ok();
                let rate = run["apply_per_s"].as_f64().unwrap_or(0.0);
                if mode == "serial" {
                    serial_rate = Some(rate);
                }
                if let Some(serial) = serial_rate {
                    run["speedup_vs_serial"] = json!((rate / serial * 100.0).round() / 100.0);
                }
                run["variant"] = json!(variant);
                println!("{run}");
                all.push(run);
            }
        }
    }
    println!("{}", json!({"apply_runs": all}));
    Ok(())
}

#[derive(clap::Args)]
pub struct KeepUpArgs {
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    #[arg(long, default_value_t = 64)]
    clients: u32,
    #[arg(long, default_value_t = 4)]
    domains: u32,
    /// The replica's apply mode and workers.
    #[arg(long, default_value = "optimistic")]
    mode: String,
    #[arg(long, default_value_t = 16)]
    workers: usize,
    #[arg(long)]
    ferryd: Option<PathBuf>,
}

/// The master under load while a replica applies: lag sampled every second.
pub async fn keep_up(args: KeepUpArgs) -> anyhow::Result<()> {
    let ferryd = ferryd_path(args.ferryd.as_deref())?;
    let dir = tempfile::tempdir()?;
    let master = BenchNode::start(&ferryd, &dir.path().join("master"), 1, &[])?;
    let replica = BenchNode::start(&ferryd, &dir.path().join("replica"), 2, &[])?;
    let domain_max = (args.workers / args.domains.max(1) as usize).max(1);
    replica
        .post("/v1/replication/m/change-master", json!({"master": master.listen, "parallel_mode": args.mode, "workers": args.workers, "domain_workers_max": domain_max}))
        .await?;
    replica.post("/v1/replication/m/start", json!({})).await?;
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let load: Vec<_> = (0..args.clients)
        .map(|i| {
            let (addr, domains) = (master.listen.clone(), args.domains);
            tokio::spawn(async move {
                let mut rng = rand::rngs::StdRng::seed_from_u64(u64::from(i));
                let mut c = Client::connect(&addr).await?;
                let mut n = 0u64;
                while Instant::now() < deadline {
                    let d = rng.random_range(0..domains);
                    c.transact(Txn::new().domain(d).increment(
                        &format!("t{d}"),
                        &rng.random_range(0..100_000).to_string(),
                        "n",
                        1,
                    ))
                    .await?;
                    n += 1;
                }
                anyhow::Ok(n)
            })
        })
        .collect();
    let mut samples = Vec::new();
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let conn = replica.connection().await?;
        let lag = conn["lag"].as_object().cloned().unwrap_or_default();
        let seconds = lag.values().filter_map(|l| l["seconds"].as_f64()).fold(0.0, f64::max);
        let transactions = lag.values().filter_map(|l| l["transactions"].as_u64()).max().unwrap_or(0);
        println!("t={:>3}s lag {seconds:.3}s {transactions} txns", samples.len() + 1);
        samples.push(json!({"t": samples.len() + 1, "lag_s": seconds, "lag_txns": transactions}));
    }
    let mut committed = 0;
    for t in load {
        committed += t.await??;
    }
    let final_conn = replica.connection().await?;
    let final_lag = final_conn["lag"].as_object().cloned().unwrap_or_default();
    let final_s = final_lag.values().filter_map(|l| l["seconds"].as_f64()).fold(0.0, f64::max);
    let final_txns = final_lag.values().filter_map(|l| l["transactions"].as_u64()).max().unwrap_or(0);
    let max_s = samples.iter().filter_map(|s| s["lag_s"].as_f64()).fold(0.0, f64::max);
    let max_txns = samples.iter().filter_map(|s| s["lag_txns"].as_u64()).max().unwrap_or(0);
    let target = master.binlog_pos().await?;
    let catch_up = Instant::now();
    replica.wait_for(&target, Duration::from_secs(300)).await?;
    println!(
        "{}",
        json!({
            "master_commits_per_s": (committed as f64 / args.seconds as f64).round(),
            "lag_max_s": max_s, "lag_max_txns": max_txns,
            "lag_final_s": final_s, "lag_final_txns": final_txns,
            "caught_up_after_load_s": (catch_up.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
            "mode": args.mode, "workers": args.workers, "samples": samples,
        })
    );
    Ok(())
}
