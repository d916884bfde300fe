//! `ferry-bench demo`: a gentle, endless workload for a demo stack: `--rate` transactions per second spread over
//! `--domains` domains (one table per domain, a few rows each, so every domain's stream is visible), reconnecting
//! when the node goes away. Given several `--addr` (the cluster's servers), it follows the master: a read-only
//! refusal or a lost connection moves it to the next address, so a switchover or failover does not stop it.
//! Prints a line every ten seconds; stops after `--seconds` when given.

use std::time::{Duration, Instant};

use ferry_client::{Client, Txn};
use rand::{Rng, SeedableRng};

use crate::follow::{self, Follower};

#[derive(clap::Args)]
pub struct Args {
    /// The servers to write to, tried in turn until one accepts writes (repeat the flag or separate by commas).
    #[arg(long, value_delimiter = ',', default_value = "127.0.0.1:7301")]
    addr: Vec<String>,
    /// Transactions per second.
    #[arg(long, default_value_t = 20.0)]
    rate: f64,
    /// Domains written: 1..=D (domain d writes table `demo_d`).
    #[arg(long, default_value_t = 3)]
    domains: u32,
    /// Stop after this many seconds (runs until killed when absent).
    #[arg(long)]
    seconds: Option<f64>,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let mut follower = Follower::new(&args.addr)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(std::process::id() as u64);
    let interval = Duration::from_secs_f64(1.0 / args.rate.max(0.1));
    let stop_at = args.seconds.map(|s| Instant::now() + Duration::from_secs_f64(s));
    let (mut committed, mut failed, mut last_report) = (0u64, 0u64, Instant::now());
    let mut client: Option<Client> = None;
    let mut ticker = tokio::time::interval(interval);
    while stop_at.is_none_or(|t| Instant::now() < t) {
        ticker.tick().await;
        if client.is_none() {
            client = follow::connect_to_master(follower.addr()).await;
        }
        let Some(c) = client.as_mut() else {
            failed += 1;
            follower.move_on(); // the ticker paces the retries
            continue;
        };
        let domain = rng.random_range(1..=args.domains.max(1));
        let table = format!("demo_{domain}");
        let key = format!("row{}", rng.random_range(0..20));
        let txn = Txn::new().domain(domain).increment(&table, &key, "hits", 1).increment(&table, "total", "hits", 1);
        match c.transact(txn).await {
            Ok(_) => {
                committed += 1;
                follower.accepted();
            }
            Err(e) => {
                failed += 1;
                if follow::moves_on(&e) {
                    client = None;
                    follower.move_on();
                }
            }
        }
        if last_report.elapsed() >= Duration::from_secs(10) {
            println!("demo workload: {committed} committed, {failed} failed (writing to {})", follower.addr());
            last_report = Instant::now();
        }
    }
    println!("{}", serde_json::json!({"committed": committed, "failed": failed}));
    Ok(())
}
