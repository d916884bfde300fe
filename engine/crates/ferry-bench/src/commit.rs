//! `ferry-bench commit`: `--clients` connections, each committing single-row increments one at a time, as fast as
//! the servers answer unless `--rate` caps it. Two workloads:
//! - the benchmark (default): a random row among `--keys` in a random domain among `--domains` (0..D) per
//!   transaction; reports commits/s, latency percentiles, and the node's group and fsync counts over the run;
//! - the ledger (`--ledger`): each client increments its own row in its own domain and the run accounts for every
//!   attempt ([`crate::ledger`]): the load the control plane's switchover and failover tests check nothing is lost.
//!
//! Given several `--addr` (a cluster's servers), every client follows the master ([`crate::follow`]).
//!
//! With `--control stdin` the run takes commands on stdin, one per line, each answered by one JSON line on stdout:
//! - `pause`: stop starting transactions; answered once none is in flight: `{"paused": true, "acked": n}`;
//! - `resume`: go on: `{"resumed": true}`;
//! - `stop` (or the end of stdin): end; answered by the summary.
//!
//! It then runs until `stop` unless `--seconds` is given, and its human-readable lines go to stderr, so stdout holds
//! only the answers. Either way the last line on stdout is the summary, one JSON object.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use ferry_client::{Client, ClientError, Commit, Txn};
use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::cpu;
use crate::follow::{self, Follower};
use crate::ledger::{self, Ledger};

/// Length of a run without `--seconds` or `--control`.
const RUN_SECONDS_DEFAULT: f64 = 10.0;

/// Lowest `--rate`: one attempt every thousand seconds.
const RATE_MIN_PER_S: f64 = 0.001;

/// The field every transaction increments.
const FIELD: &str = "n";

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Control {
    /// Commands on stdin, answers on stdout.
    Stdin,
}

#[derive(clap::Args)]
pub struct Args {
    /// The server to write to, or a cluster's servers (separated by commas or the flag repeated) among which every
    /// client follows the master.
    #[arg(long, value_delimiter = ',', default_value = "127.0.0.1:7301")]
    addr: Vec<String>,
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Length of the run [default: 10, or until `stop` with --control].
    #[arg(long)]
    seconds: Option<f64>,
    /// Distinct rows the increments spread over (not with --ledger: one row per client).
    #[arg(long, default_value_t = 100_000)]
    keys: u64,
    /// Domains the transactions spread over (0..D; with --ledger 1..=D, client c writing in 1 + c % D).
    #[arg(long, default_value_t = 1)]
    domains: u32,
    /// Table written to.
    #[arg(long, default_value = "bench")]
    table: String,
    /// Seed of the key and domain choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Attempts per second in all, spread evenly over the clients [default: as fast as the servers answer].
    #[arg(long)]
    rate: Option<f64>,
    /// Each client increments its own row `d<domain>c<client>`; the summary accounts for every attempt: `acked` and
    /// `unknown` per row, `refused`, `acked_gtids`, `master_changes`.
    #[arg(long)]
    ledger: bool,
    /// Take `pause`, `resume` and `stop` commands, one per line.
    #[arg(long, value_enum)]
    control: Option<Control>,
    /// The node's process id (on this machine): its CPU time over the run is reported (`node_cpu_s`,
    /// `commits_per_node_cpu_s`), from `/proc/<pid>/stat`.
    #[arg(long)]
    node_pid: Option<u32>,
}

/// Whether clients may start transactions, and how many are in flight (what `pause` waits for).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Gate {
    /// `pause` was asked: start no transaction until `resume`.
    paused: bool,
    /// The run is ending: start no transaction, end.
    stopping: bool,
    /// Transactions sent and not answered yet.
    in_flight: usize,
}

impl Gate {
    /// Whether a client has something to do: start a transaction, or end.
    fn open(&self) -> bool {
        !self.paused || self.stopping
    }

    /// Lets one transaction start, unless paused or stopping.
    fn begin(&mut self) -> bool {
        if self.paused || self.stopping {
            return false;
        }
        self.in_flight += 1;
        true
    }

    /// One transaction has its answer; returns whether none is in flight now.
    fn end(&mut self) -> bool {
        assert!(self.in_flight > 0, "a transaction ended that had not begun");
        self.in_flight -= 1;
        self.in_flight == 0
    }
}

/// What the clients measured, shared by all of them.
struct Tally {
    /// Latency of each acknowledged commit.
    latencies_us: Histogram<u64>,
    /// Attempts that failed (with --ledger: refused or unknown).
    errors: u64,
    /// The first failure, as the client saw it.
    first_error: Option<String>,
    /// With --ledger: every attempt's outcome.
    ledger: Option<Ledger>,
}

impl Tally {
    fn new(ledger: bool) -> anyhow::Result<Self> {
        Ok(Tally {
            latencies_us: Histogram::new(3)?,
            errors: 0,
            first_error: None,
            ledger: ledger.then(Ledger::default),
        })
    }

    /// Records one attempt on `key` at `server`; fails on an outcome the ledger cannot account for.
    fn record(
        &mut self,
        key: &str,
        server: &str,
        result: Result<Commit, ClientError>,
        latency: Duration,
    ) -> anyhow::Result<()> {
        match &result {
            Ok(_) => self.latencies_us.record((latency.as_micros() as u64).max(1))?,
            Err(e) => {
                self.errors += 1;
                self.first_error.get_or_insert_with(|| e.to_string());
            }
        }
        if let Some(ledger) = &mut self.ledger {
            let outcome = ledger::outcome(result)
                .with_context(|| format!("{server}: a failure the ledger cannot account for (on row {key})"))?;
            ledger.record(key, server, outcome);
        }
        Ok(())
    }

    fn acked(&self) -> u64 {
        self.latencies_us.len()
    }
}

/// What the run's clients share.
struct Shared {
    args: Args,
    /// Start and in-flight accounting; the run's main task pauses, resumes and stops the clients through it.
    gate: watch::Sender<Gate>,
    tally: Mutex<Tally>,
    /// When the clients stop starting transactions (none: at `stop`).
    deadline: Option<Instant>,
}

impl Shared {
    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.tally.lock().expect("no client panics holding the tally")
    }
}

async fn one_client(shared: Arc<Shared>, id: usize) -> anyhow::Result<()> {
    let args = &shared.args;
    let mut follower = Follower::new(&args.addr)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(args.seed.wrapping_mul(1_000_003).wrapping_add(id as u64));
    let own_row = args.ledger.then(|| ledger::key_of(id, args.domains));
    let mut gate = shared.gate.subscribe();
    let mut client: Option<Client> = None;
    let mut pace = args.rate.map(|rate| pace_of(rate, args.clients, id));
    loop {
        let stopping = gate.wait_for(Gate::open).await.context("the run ended without stopping its clients")?.stopping;
        if stopping || shared.deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(());
        }
        let connection = match &mut client {
            Some(c) => c,
            None => match follow::connect_to_master(follower.addr()).await {
                Some(c) => client.insert(c),
                None => {
                    tokio::time::sleep(follower.move_on()).await;
                    continue;
                }
            },
        };
        let (key, domain) = match &own_row {
            Some((key, domain)) => (key.clone(), *domain),
            None => (format!("k{}", rng.random_range(0..args.keys.max(1))), rng.random_range(0..args.domains.max(1))),
        };
        if let Some(pace) = &mut pace {
            tokio::select! {
                _ = pace.tick() => {}
                // A pause or the end does not wait for the next tick.
                _ = gate.wait_for(|g| g.paused || g.stopping) => continue,
            }
        }
        // Paused (or stopped) while waiting: nothing may start; no await between this check and the send.
        let mut began = false;
        // A silent modification: nobody waits for a transaction to begin, only for the last to end.
        shared.gate.send_if_modified(|g| {
            began = g.begin();
            false
        });
        if !began {
            continue;
        }
        let started = Instant::now();
        let result = connection.transact(Txn::new().domain(domain).increment(&args.table, &key, FIELD, 1)).await;
        let latency = started.elapsed();
        shared.gate.send_if_modified(Gate::end);
        let accepted = result.is_ok();
        let moves_on = result.as_ref().err().is_some_and(follow::moves_on);
        shared.tally().record(&key, follower.addr(), result, latency)?;
        if accepted {
            follower.accepted();
        } else if moves_on {
            client = None;
            tokio::time::sleep(follower.move_on()).await;
        }
    }
}

/// Client `id`'s ticks, one per attempt: `clients / rate` seconds apart, the clients' ticks spread over that period.
fn pace_of(rate: f64, clients: usize, id: usize) -> tokio::time::Interval {
    let period = pace_period(rate, clients);
    let first = tokio::time::Instant::now() + period.mul_f64(id as f64 / clients as f64);
    let mut pace = tokio::time::interval_at(first, period);
    // After a pause (or a slow answer) go on at the rate rather than catch up with a burst.
    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    pace
}

/// Time between one client's attempts for `rate` attempts per second over `clients` clients.
fn pace_period(rate: f64, clients: usize) -> Duration {
    Duration::from_secs_f64(clients.max(1) as f64 / rate.max(RATE_MIN_PER_S))
}

/// The next command line; never when there is no control input, `None` at the end of it.
async fn next_command(commands: &mut Option<Lines<BufReader<Stdin>>>) -> anyhow::Result<Option<String>> {
    match commands {
        Some(lines) => Ok(lines.next_line().await.context("reading commands from stdin")?),
        None => std::future::pending().await,
    }
}

async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

/// One answer on stdout (it flushes at the newline).
fn say(answer: &Value) {
    println!("{answer}");
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    Follower::new(&args.addr)?;
    let answers_on_stdout = args.control.is_some();
    let report = |line: String| if answers_on_stdout { eprintln!("{line}") } else { println!("{line}") };
    // The node's group and fsync counts only mean something for one node: several servers' counters would mix the
    // master's commits with the replicas' applies.
    let mut node = match args.addr.as_slice() {
        [one] => Some(Client::connect(one).await.with_context(|| format!("connecting to {one}"))?),
        _ => None,
    };
    let before = match &mut node {
        Some(c) => Some(c.stats().await?),
        None => None,
    };
    let seconds = args.seconds.or(if args.control.is_some() { None } else { Some(RUN_SECONDS_DEFAULT) });
    let node_pid = args.node_pid;
    let cpu_before = (node_pid.map(cpu::process_cpu_s).transpose()?, cpu::own_cpu_s().ok());
    let started = Instant::now();
    let deadline = seconds.map(|s| started + Duration::from_secs_f64(s));
    let mut commands = args.control.map(|Control::Stdin| BufReader::new(tokio::io::stdin()).lines());
    let (clients, ledger) = (args.clients, args.ledger);
    let shared = Arc::new(Shared {
        gate: watch::Sender::new(Gate::default()),
        tally: Mutex::new(Tally::new(ledger)?),
        deadline,
        args,
    });
    let mut tasks = JoinSet::new();
    for id in 0..clients {
        tasks.spawn(one_client(shared.clone(), id));
    }
    let mut gate = shared.gate.subscribe();
    loop {
        tokio::select! {
            command = next_command(&mut commands) => match command?.as_deref().map(str::trim) {
                Some("pause") => {
                    shared.gate.send_modify(|g| g.paused = true);
                    gate.wait_for(|g| g.in_flight == 0).await?;
                    say(&json!({"paused": true, "acked": shared.tally().acked()}));
                }
                Some("resume") => {
                    shared.gate.send_modify(|g| g.paused = false);
                    say(&json!({"resumed": true}));
                }
                Some("stop") | None => break,
                Some("") => {}
                Some(other) => say(&json!({"error": format!("unknown command {other:?}: pause, resume or stop")})),
            },
            () = until(deadline) => break,
            // A client ends before the run does only at the deadline, or on a failure that ends the run.
            Some(ended) = tasks.join_next() => ended??,
        }
    }
    shared.gate.send_modify(|g| g.stopping = true);
    while let Some(ended) = tasks.join_next().await {
        ended??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_after = (node_pid.map(cpu::process_cpu_s).transpose()?, cpu::own_cpu_s().ok());
    assert_eq!(shared.gate.borrow().in_flight, 0, "every client has ended, none with a transaction in flight");
    let node_figures = match (&mut node, before) {
        (Some(node), Some(before)) => Some(node.stats().await.map(|after| (before, after))),
        _ => None,
    };

    let tally = shared.tally();
    let latencies = &tally.latencies_us;
    let commits = latencies.len();
    let commits_per_s = commits as f64 / elapsed;
    let p50_ms = latencies.value_at_quantile(0.50) as f64 / 1000.0;
    let p99_ms = latencies.value_at_quantile(0.99) as f64 / 1000.0;
    let mut figures = json!({
        "commits_per_s": (commits_per_s * 10.0).round() / 10.0,
        "p50_ms": p50_ms,
        "p99_ms": p99_ms,
        "commits": commits,
        "errors": tally.errors,
        "clients": clients,
        "seconds": (elapsed * 100.0).round() / 100.0,
    });
    let mut cpu_line = String::new();
    if let (Some(before), Some(after)) = (cpu_before.0, cpu_after.0) {
        let node_cpu_s = after - before;
        figures["node_cpu_s"] = json!((node_cpu_s * 100.0).round() / 100.0);
        figures["commits_per_node_cpu_s"] = json!(cpu::per_cpu_s(commits, node_cpu_s));
        cpu_line += &format!(
            "  node CPU {node_cpu_s:.2}s ({:.2} cores, {:.0} commits per CPU-second)",
            node_cpu_s / elapsed,
            cpu::per_cpu_s(commits, node_cpu_s).unwrap_or(0.0)
        );
    }
    if let (Some(before), Some(after)) = (cpu_before.1, cpu_after.1) {
        let bench_cpu_s = after - before;
        figures["bench_cpu_s"] = json!((bench_cpu_s * 100.0).round() / 100.0);
        cpu_line += &format!("  load generator CPU {bench_cpu_s:.2}s");
    }
    report(format!("clients {clients}  elapsed {elapsed:.2}s  commits {commits}  errors {}", tally.errors));
    if !cpu_line.is_empty() {
        report(format!("CPU:{cpu_line}"));
    }
    if let Some(e) = &tally.first_error {
        report(format!("first error: {e}"));
    }
    let mut line = format!("commits/s {commits_per_s:.0}  p50 {p50_ms:.3} ms  p99 {p99_ms:.3} ms");
    if let Some(node_figures) = node_figures {
        match node_figures {
            Ok((before, after)) => {
                let groups = after.groups - before.groups;
                let fsyncs = after.fsyncs - before.fsyncs;
                let node_commits = after.commits - before.commits;
                let avg_group_size = if groups > 0 { node_commits as f64 / groups as f64 } else { 0.0 };
                line += &format!("  groups {groups}  avg group {avg_group_size:.2}  fsyncs {fsyncs}");
                figures["avg_group_size"] = json!((avg_group_size * 100.0).round() / 100.0);
                figures["fsyncs"] = json!(fsyncs);
                figures["groups"] = json!(groups);
            }
            Err(e) => line += &format!("  (no node figures: {e})"),
        }
    }
    report(line);
    if let Some(ledger) = &tally.ledger {
        assert_eq!(ledger.acked_total(), commits, "the ledger and the latencies count the same acknowledgements");
        let summary = ledger.summary();
        report(format!("ledger: refused {}, master changes {}", summary["refused"], summary["master_changes"]));
        figures.as_object_mut().expect("an object").extend(summary);
    }
    say(&figures);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paused_gate_starts_nothing_and_says_when_the_last_transaction_ends() {
        let mut gate = Gate::default();
        assert!(gate.open());
        assert!(gate.begin() && gate.begin());
        gate.paused = true;
        assert!(!gate.open());
        assert!(!gate.begin(), "paused: nothing starts");
        assert!(!gate.end(), "one is still in flight");
        assert!(gate.end(), "none in flight: pause can answer");
        gate.paused = false;
        assert!(gate.begin());
    }

    #[test]
    fn a_stopping_gate_lets_paused_clients_end_and_starts_nothing() {
        let mut gate = Gate { paused: true, ..Gate::default() };
        gate.stopping = true;
        assert!(gate.open(), "paused clients wake to end");
        assert!(!gate.begin());
        gate.paused = false;
        assert!(!gate.begin());
    }

    #[test]
    fn the_rate_is_shared_by_the_clients() {
        assert_eq!(pace_period(1000.0, 8), Duration::from_millis(8));
        assert_eq!(pace_period(10.0, 1), Duration::from_millis(100));
        assert_eq!(pace_period(0.0, 1), Duration::from_secs(1000), "a rate of zero is the lowest rate");
    }

    #[test]
    #[should_panic(expected = "had not begun")]
    fn ending_what_never_began_is_a_bug() {
        Gate::default().end();
    }

    fn tally_record(tally: &mut Tally, result: Result<Commit, ClientError>) -> anyhow::Result<()> {
        tally.record("d1c0", "a:1", result, Duration::from_micros(250))
    }

    #[test]
    fn the_tally_counts_failures_and_acknowledgements_alike_in_both_workloads() {
        for ledger in [false, true] {
            let mut tally = Tally::new(ledger).unwrap();
            let commit = Commit { gtid: ferry_core::gtid::Gtid::new(1, 1, 1), commit_id: 1, commit_ts_us: 1 };
            tally_record(&mut tally, Ok(commit)).unwrap();
            let read_only = ClientError::Server {
                code: Some(ferry_core::protocol::ErrorCode::ReadOnly),
                raw_code: 7,
                message: "read-only".into(),
            };
            tally_record(&mut tally, Err(read_only)).unwrap();
            assert_eq!((tally.acked(), tally.errors), (1, 1));
            assert_eq!(tally.first_error.as_deref(), Some("READ_ONLY: read-only"));
            assert_eq!(tally.ledger.map(|l| l.summary()["refused"].clone()), ledger.then(|| json!(1)));
        }
    }

    #[test]
    fn a_failure_the_ledger_cannot_account_for_ends_the_run_only_with_the_ledger() {
        let garbled = || Err(ClientError::Protocol("garbled".into()));
        assert!(tally_record(&mut Tally::new(false).unwrap(), garbled()).is_ok());
        assert!(tally_record(&mut Tally::new(true).unwrap(), garbled()).is_err());
    }
}
