//! `ferryd`: the Ferry node server. Parses the command line, opens (and recovers) the node, then serves the
//! binary protocol on `--listen` and the admin HTTP API on `--admin` until SIGINT or SIGTERM.
//!
//! Once both sockets are bound it prints one JSON line to stdout, `{"event":"ready","listen":…,"admin":…}`,
//! so scripts and tests that ask for port 0 learn the real addresses.

mod admin;
mod auth;
mod clone;
mod config;
mod consumers;
mod dump;
mod expiry;
mod frames;
mod metrics;
mod plaintext;
mod quiesced;
mod replicas;
mod replication;
mod server;
mod subscribe;

use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::auth::Credentials;
use crate::config::Args;
use crate::metrics::Metrics;

/// mimalloc: the commit path allocates many small, short-lived buffers; glibc malloc showed up at ~12% of the
/// node's CPU under load.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let args = Args::parse();
    // Only in builds with the `failpoints` feature (tests): injects the I/O errors named in FAILPOINTS.
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    // Before anything else: from here on SIGTERM or SIGINT ends in a clean stop, also one that arrives while the
    // node opens or the instant it first answers (with the handlers installed only once serving, a signal in
    // between took the default action and killed the process mid-start).
    let mut stop_signals = StopSignals::install()?;
    let config = args.node_config()?;
    let admin_limits = args.admin_limits()?;
    let protocol_timeouts = args.protocol_timeouts()?;
    let consumer_limits = args.consumer_limits()?;
    let credentials = Credentials::load(args.admin_token_file.as_deref(), args.consumer_token_file.as_deref())?;
    let token = credentials.admin.clone();
    let metrics = Arc::new(Metrics::new());
    let node = tokio::task::spawn_blocking({
        let metrics = metrics.clone();
        move || ferry_core::node::Node::open(config, Some(metrics))
    })
    .await?
    .context("opening the node")?;
    // A read-only replica stays read-only across restarts whatever the command line: the flag in the data
    // directory decides once it was ever set; without it, `--read-only` or a configured replication connection
    // makes the node read-only, and that is recorded at once, so the next start keeps it. A node that starts
    // writable without a flag records nothing: once it replicates, its next start is read-only.
    let durable = node.durable_read_only();
    if let ferry_core::node::read_only_flag::DurableReadOnly::Damaged(why) = &durable {
        tracing::error!("{why}");
    }
    let replicates = !replication::config::load(&node.config().data_dir.join("replication.json"))
        .context("reading replication settings")?
        .is_empty();
    // An unfinished clone keeps the node read-only and its replication stopped, whatever else says otherwise.
    let unfinished_clone = clone::record::read(&*node.config().fs, &node.config().data_dir)
        .map_err(anyhow::Error::msg)
        .context("reading the clone record")?;
    if let Some(r) = &unfinished_clone {
        tracing::warn!(clone_id = %r.clone_id, donor = %r.donor, state = ?r.state, "this node's clone is unfinished: read-only, replication not started");
    }
    let read_only = durable.at_start(args.read_only, replicates) || unfinished_clone.is_some();
    if read_only {
        tokio::task::spawn_blocking({
            let node = node.clone();
            move || node.set_read_only_durably(true)
        })
        .await?
        .context("recording the read-only flag at start")?;
    }
    if read_only != args.read_only {
        tracing::warn!(
            read_only,
            flag = ?durable.decided(),
            replicates,
            "starting {} whatever --read-only says: {}",
            if read_only { "read-only" } else { "writable" },
            if durable.decided().is_some() { "the node's recorded read-only flag decides" } else { "it replicates" }
        );
    }
    let recovery = node.recovery();
    tracing::info!(
        server_id = args.server_id,
        position = %node.position(),
        read_only = node.is_read_only(),
        replayed = recovery.replayed_txns,
        tail_bytes_cut = recovery.tail.bytes_cut,
        "node opened"
    );
    let checkpointer = node.start_checkpointer();

    let listener =
        TcpListener::bind(&args.listen).await.with_context(|| format!("binding --listen {}", args.listen))?;
    let admin_listener =
        TcpListener::bind(&args.admin).await.with_context(|| format!("binding --admin {}", args.admin))?;
    plaintext::warn_at_start(token.is_some(), listener.local_addr()?, admin_listener.local_addr()?);
    let (stop_tx, stop_rx) = watch::channel(false);
    let advertised =
        Advertised::new(args.advertise_host.as_deref(), listener.local_addr()?, admin_listener.local_addr()?);
    let ready = serde_json::json!({
        "event": "ready",
        "server_id": args.server_id,
        "listen": listener.local_addr()?.to_string(),
        "admin": admin_listener.local_addr()?.to_string(),
    });
    println!("{ready}");

    let registry = Arc::new(replicas::ReplicaRegistry::default());
    let held = unfinished_clone.map(|r| format!("clone {} from {} is unfinished", r.clone_id, r.donor));
    let replication = replication::Replication::load(node.clone(), token.clone(), advertised.clone(), held)
        .context("loading replication settings")?;
    let consumers = Arc::new(consumers::ConsumerRegistry::default());
    let streams = quiesced::Streams {
        replication: replication.clone(),
        replicas: registry.clone(),
        consumers: consumers.clone(),
    };
    let cloning = clone::Cloning::load(
        node.clone(),
        token.clone(),
        streams,
        listener.local_addr()?.to_string(),
        args.clone_chunk_bytes,
        args.clone_durable_bytes,
    )
    .context("loading the clone state")?;
    let donations = Arc::new(clone::donor::Donations::new(clone::donor::DonorLimits {
        retention: std::time::Duration::from_secs(args.clone_retention_s),
        snapshots_max: args.clone_snapshots_max.max(1),
    }));
    let context = server::Context {
        node: node.clone(),
        credentials,
        replicas: registry.clone(),
        consumers: consumers.clone(),
        consumer_limits,
        timeouts: protocol_timeouts,
        donations,
        cloning: cloning.clone(),
    };
    let server = tokio::spawn(server::serve(listener, context, stop_rx.clone()));
    let expiry = Arc::new(expiry::Expiry::new(args.expiry_policy()));
    let expirer = tokio::spawn(expiry::run(expiry.clone(), node.clone(), registry.clone(), stop_rx.clone()));
    let state = admin::AppState {
        node: node.clone(),
        token,
        metrics,
        replicas: registry,
        consumers,
        consumer_limits,
        replication: replication.clone(),
        advertised,
        expiry,
        checksums: admin::ChecksumGate::default(),
        cloning,
        fences: Arc::new(
            admin::fence::Fences::load(node.config().fs.clone(), &node.config().data_dir)
                .map_err(anyhow::Error::msg)
                .context("loading the fencing tokens (fences.json)")?,
        ),
    };
    let admin = tokio::spawn(admin::serve(admin_listener, state, admin_limits, stop_rx));

    stop_signals.received().await;
    tracing::info!("shutting down");
    if let Some(semi_sync) = node.semi_sync() {
        semi_sync.stop(); // a commit waiting out a long semi-sync timeout does not hold the stop
    }
    let _ = stop_tx.send(true);
    replication.shutdown().await;
    let _ = server.await;
    let _ = admin.await;
    let _ = expirer.await;
    tokio::task::spawn_blocking(move || {
        node.stop();
        checkpointer.thread().unpark();
        let _ = checkpointer.join();
    })
    .await?;
    Ok(())
}

/// The addresses this node tells others (status, and replicas to their masters): the bound addresses, with
/// the host replaced by `--advertise-host` when given (a node bound to 0.0.0.0 is reached by a name).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Advertised {
    pub listen: String,
    pub admin: String,
}

impl Advertised {
    fn new(host: Option<&str>, listen: std::net::SocketAddr, admin: std::net::SocketAddr) -> Self {
        let show = |addr: std::net::SocketAddr| match host {
            Some(h) => format!("{h}:{}", addr.port()),
            None => addr.to_string(),
        };
        Advertised { listen: show(listen), admin: show(admin) }
    }
}

/// SIGTERM and SIGINT, caught from the moment they are installed; a signal received before `received` is awaited is
/// kept and ends the wait at once.
struct StopSignals {
    term: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn install() -> anyhow::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(StopSignals {
            term: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
            interrupt: signal(SignalKind::interrupt()).context("installing the SIGINT handler")?,
        })
    }

    async fn received(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}
