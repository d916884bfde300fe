//! `ferry-bench demo`: a gentle, endless workload for a demo stack: `--rate` transactions per second spread over
//! `--domains` domains (one table per domain, a few rows each, so every domain's stream is visible), reconnecting
//! when the node goes away. Given several `--addr` (the cluster's servers), it follows the master: a read-only
//! refusal or a lost connection moves it to the next address, so a switchover or failover does not stop it.
//! Prints a line every ten seconds; stops after `--seconds` when given.

use std::time::{Duration, Instant};

use ferry_client::{Client, ClientError, Txn};
use ferry_core::protocol::ErrorCode;
use rand::{Rng, SeedableRng};

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

/// Whether a failed commit means "write somewhere else": the server is read-only (no longer the master),
/// shutting down, or gone.
fn try_next_server(error: &ClientError) -> bool {
    matches!(error, ClientError::Io(_)) || matches!(error.code(), Some(ErrorCode::ReadOnly | ErrorCode::ShuttingDown))
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    anyhow::ensure!(!args.addr.is_empty(), "--addr names no server");
    let mut rng = rand::rngs::StdRng::seed_from_u64(std::process::id() as u64);
    let interval = Duration::from_secs_f64(1.0 / args.rate.max(0.1));
    let stop_at = args.seconds.map(|s| Instant::now() + Duration::from_secs_f64(s));
    let (mut committed, mut failed, mut last_report) = (0u64, 0u64, Instant::now());
    let mut target = 0usize;
    let mut client: Option<Client> = None;
    let mut ticker = tokio::time::interval(interval);
    while stop_at.is_none_or(|t| Instant::now() < t) {
        ticker.tick().await;
        if client.is_none() {
            client = Client::connect(&args.addr[target]).await.ok();
        }
        let Some(c) = client.as_mut() else {
            failed += 1;
            target = (target + 1) % args.addr.len();
            continue;
        };
        let domain = rng.random_range(1..=args.domains.max(1));
        let table = format!("demo_{domain}");
        let key = format!("row{}", rng.random_range(0..20));
        let txn = Txn::new().domain(domain).increment(&table, &key, "hits", 1).increment(&table, "total", "hits", 1);
        match c.transact(txn).await {
            Ok(_) => committed += 1,
            Err(e) => {
                failed += 1;
                if try_next_server(&e) {
                    client = None;
                    target = (target + 1) % args.addr.len();
                }
            }
        }
        if last_report.elapsed() >= Duration::from_secs(10) {
            println!("demo workload: {committed} committed, {failed} failed (writing to {})", args.addr[target]);
            last_report = Instant::now();
        }
    }
    println!("{}", serde_json::json!({"committed": committed, "failed": failed}));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_only_refusal_or_a_lost_connection_moves_to_the_next_server() {
        let read_only =
            ClientError::Server { code: Some(ErrorCode::ReadOnly), raw_code: 7, message: "read-only".into() };
        let lost = ClientError::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(try_next_server(&read_only));
        assert!(try_next_server(&lost));
    }

    #[test]
    fn other_refusals_keep_the_server() {
        let busy = ClientError::Server { code: Some(ErrorCode::Timeout), raw_code: 12, message: "busy".into() };
        assert!(!try_next_server(&busy));
        assert!(!try_next_server(&ClientError::Protocol("bad frame".into())));
    }
}
