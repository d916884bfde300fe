//! `ferry-bench`: load benchmarks for Ferry nodes. Every command prints human-readable lines and ends with one
//! line holding a single JSON object of its figures.
//!
//! - `commit`: many connections each committing small single-row transactions against a running node, or (with
//!   `--ledger`) the accounted load of the control plane's switchover and failover tests.
//! - `fsync`: the raw fsync latency of the disk under a directory (what per-transaction fsync is bound by).
//! - `demo`: a gentle endless workload over several domains, for the demo stack of `make up`.
//! - `apply`: parallel apply on a replica (the multi-threaded replica benchmark of docs/background.md),
//!   self-contained (starts its own nodes).
//! - `keepup`: a replica applying while the master is under load; its lag over time.
//! - `consumers`: change consumers following a master under load: changes delivered per second to each, against
//!   the master's commit rate with and without them (self-contained).
//!
//! Beside them: `cpu` (a process's CPU time, for figures per CPU-second), `follow` (how a client follows the
//! master among a cluster's servers), `ledger` (the outcome of every attempt of `commit --ledger`), `nodes` (the
//! ferryd processes a self-contained benchmark starts).

mod apply;
mod commit;
mod consumers;
mod cpu;
mod demo;
mod follow;
mod fsync;
mod ledger;
mod nodes;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "ferry-bench", version, about = "Ferry benchmarks; the last line of output is one JSON object")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Commit throughput and latency of a running node, or an accounted load following a cluster's master.
    Commit(commit::Args),
    /// Raw fsync latency of the disk holding --dir.
    Fsync(fsync::Args),
    /// A gentle endless workload over several domains (for demos).
    Demo(demo::Args),
    /// Replica apply rate by mode and worker count (starts its own master and replicas).
    Apply(apply::Args),
    /// Replica lag while the master is under load (starts its own master and replica).
    Keepup(apply::KeepUpArgs),
    /// Changes delivered per second to change consumers against the master's commit rate (starts its own nodes).
    Consumers(consumers::Args),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Commit(args) => {
            // One thread drives every connection: the load generator then takes as little CPU from the node
            // under test as it can (on a small machine they share the cores).
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(commit::run(args))
        }
        Command::Fsync(args) => fsync::run(args),
        Command::Apply(args) => {
            tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(apply::run(args))
        }
        Command::Keepup(args) => {
            tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(apply::keep_up(args))
        }
        Command::Consumers(args) => {
            tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(consumers::run(args))
        }
        Command::Demo(args) => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(demo::run(args))
        }
    }
}
