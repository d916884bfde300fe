//! `--from-node … --follow`: a cluster's committed transactions as they come, like `mysqlbinlog
//! --read-from-remote-server --stop-never`. It subscribes as a change consumer (the nodes' consumer token, never
//! their admin token) to whichever node is the master and follows the master across switchovers and failovers
//! (`ferry_client::MasterSubscription`), printing each transaction's events in the same text or JSON lines as a
//! file's. SIGINT or SIGTERM (or `--stop-position` reached) stops it between two transactions; it then says on
//! stderr the position to resume from with `--start-position`: nothing missed, nothing printed twice.

use std::io::Write;
use std::time::Duration;

use ferry_client::{is_final, FollowOptions, Followed, MasterSubscription, SubscribeOptions};
use ferry_core::binlog::reader::ReadEvent;
use ferry_core::GtidPosition;

use crate::cli::{Options, Remote};
use crate::filter::TxnFilter;
use crate::format;

/// Heartbeat interval asked of the nodes: how soon a stopped master or a switchover is noticed.
const HEARTBEAT: Duration = Duration::from_millis(500);

/// How following ended.
#[derive(Debug)]
pub enum Stopped {
    /// SIGINT, SIGTERM, `--stop-position` reached, or nobody reads the output any more.
    Asked,
    /// The output could not be written.
    Output(std::io::Error),
    /// Following cannot go on (a wrong token, a position a new master cannot serve, …).
    Refused(String),
}

/// What was printed so far: where to resume.
pub struct Resume {
    /// After the last transaction printed, per domain; `None` before any node said where it starts.
    pub position: Option<GtidPosition>,
}

impl Resume {
    /// The line for stderr.
    pub fn describe(&self) -> String {
        match &self.position {
            Some(p) => format!("resume with --start-position '{p}'"),
            None => "no node was followed: nothing was printed".to_string(),
        }
    }
}

/// Follows until stopped; `out` gets every event line, flushed after each transaction.
pub fn run(options: &Options, remote: &Remote, out: &mut impl Write) -> (Resume, Stopped) {
    let mut resume = Resume { position: options.start.clone() };
    let token = match std::fs::read_to_string(&remote.token_file) {
        Ok(t) => t.trim().to_string(),
        Err(e) => {
            let why = format!("reading --token-file {}: {e}", remote.token_file.display());
            return (resume, Stopped::Refused(why));
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return (resume, Stopped::Refused(format!("starting the runtime: {e}"))),
    };
    let stopped = runtime.block_on(follow(options, remote, token, out, &mut resume));
    (resume, stopped)
}

async fn follow(
    options: &Options,
    remote: &Remote,
    token: String,
    out: &mut impl Write,
    resume: &mut Resume,
) -> Stopped {
    use tokio::signal::unix::{signal, SignalKind};
    let mut subscribe = SubscribeOptions::new(&remote.name, &token);
    subscribe.start = options.start.clone();
    subscribe.domains = options.domains.iter().flatten().copied().collect();
    subscribe.heartbeat = HEARTBEAT;
    let mut changes = match MasterSubscription::new(&remote.nodes, FollowOptions::new(subscribe)) {
        Ok(c) => c,
        Err(e) => return Stopped::Refused(e.to_string()),
    };
    let mut filter = TxnFilter::new(None, options.domains.clone(), &options.stop);
    let (mut interrupt, mut terminate) = match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
        (Ok(i), Ok(t)) => (i, t),
        (Err(e), _) | (_, Err(e)) => return Stopped::Refused(format!("installing the signal handlers: {e}")),
    };
    loop {
        // A stop ends the wait for the next transaction; what was printed is whole transactions only.
        let next = tokio::select! {
            next = changes.next() => next,
            _ = interrupt.recv() => return Stopped::Asked,
            _ = terminate.recv() => return Stopped::Asked,
        };
        match next {
            Ok(Followed::Subscribed { node, position }) => {
                eprintln!("ferry-binlog: following {node} from '{position}'");
                resume.position.get_or_insert(position);
            }
            Ok(Followed::NoMaster { why }) => eprintln!("ferry-binlog: no master to follow yet ({why})"),
            Ok(Followed::Change(change)) => {
                if filter.admit(change.gtid) {
                    if let Err(e) = print(out, &change.events, options.json) {
                        return match e.kind() {
                            std::io::ErrorKind::BrokenPipe => Stopped::Asked,
                            _ => Stopped::Output(e),
                        };
                    }
                    resume.position.get_or_insert_with(GtidPosition::new).set(change.gtid);
                }
                if filter.reached() {
                    return Stopped::Asked;
                }
            }
            Err(e) if is_final(&e) => return Stopped::Refused(e.to_string()),
            Err(e) => return Stopped::Refused(format!("following stopped: {e}")),
        }
    }
}

fn print(out: &mut impl Write, events: &[ReadEvent], json: bool) -> std::io::Result<()> {
    for read in events {
        let line = if json { format::json_line(read) } else { format::text_line(read) };
        writeln!(out, "{line}")?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resume_line_names_the_position_or_says_nothing_was_printed() {
        let some = Resume { position: Some("0-1-5,1-2-3".parse().unwrap()) };
        assert_eq!(some.describe(), "resume with --start-position '0-1-5,1-2-3'");
        assert!(Resume { position: None }.describe().contains("nothing was printed"));
    }
}
