//! The command line: flag definitions (clap) and their validation into [`Options`].
//!
//! GTID texts are parsed here, after clap, so a bad one is reported with the parser's column and a caret
//! under the offending character rather than clap's one-line summary.

use std::collections::BTreeSet;
use std::path::PathBuf;

use clap::Parser;
use ferry_core::{DomainId, GtidParseError, GtidPosition};

/// Print the events of Ferry binlog files, one per line, like mysqlbinlog; or, with `--from-node … --follow`,
/// the transactions a cluster commits, as they come.
#[derive(Debug, Parser)]
#[command(name = "ferry-binlog", version)]
pub struct Args {
    /// Start as a replica at this GTID position would (e.g. `0-1-10,1-2-5`): print only the transactions
    /// it would be sent. Errors when the binlog cannot serve the position (purged, ahead, diverged, hole).
    #[arg(long, value_name = "POS")]
    pub start_position: Option<String>,

    /// Stop printing a listed domain's transactions once past its GTID (its seq_no is exceeded);
    /// domains not listed are unaffected.
    #[arg(long, value_name = "POS")]
    pub stop_position: Option<String>,

    /// Print only the transactions of these domains (repeatable, or comma-separated). Events outside
    /// transactions (format description, GTID list, checkpoint, rotate) are always printed.
    #[arg(long = "domain", value_name = "D", value_delimiter = ',')]
    pub domains: Vec<DomainId>,

    /// One JSON object per line instead of text.
    #[arg(long)]
    pub json: bool,

    /// Read from nodes instead of files: subscribe as a change consumer to whichever of these nodes
    /// (protocol addresses, comma-separated) is the master, and follow the master across switchovers and
    /// failovers. Needs `--follow` and `--token-file`.
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT…]", value_delimiter = ',', requires_all = ["follow", "token_file"], conflicts_with = "path")]
    pub from_node: Vec<String>,

    /// With `--from-node`: print each transaction as it commits and wait for the next, until SIGINT (or
    /// SIGTERM, or `--stop-position` reached), then print on stderr the position to resume from. Without
    /// `--start-position` it starts with what commits from then on.
    #[arg(long, requires = "from_node")]
    pub follow: bool,

    /// With `--from-node`: a file holding the nodes' consumer token (their `--consumer-token-file`).
    #[arg(long, value_name = "F", requires = "from_node")]
    pub token_file: Option<PathBuf>,

    /// With `--from-node`: the name the nodes list this consumer by (`GET /v1/consumers`).
    #[arg(long, value_name = "NAME", default_value = "ferry-binlog", requires = "from_node")]
    pub name: String,

    /// Check every event of every file instead of printing them: names each damage's file, offset and the
    /// GTIDs around it, and the `--truncate-at` offset that would cut it. Exit 0 when clean or when only the
    /// last file's last write is torn (the node trims that itself), 1 for corruption.
    #[arg(long, conflicts_with_all = ["start_position", "stop_position", "domains", "json", "truncate_at", "from_node"])]
    pub verify: bool,

    /// Cut PATH (the index's last binlog file) at OFFSET, the end of a whole transaction before the damage
    /// (`--verify` names it). Loses every transaction from OFFSET on; without `--i-know` only says which.
    #[arg(long, value_name = "OFFSET", conflicts_with_all = ["start_position", "stop_position", "domains", "json", "from_node"])]
    pub truncate_at: Option<u64>,

    /// Really cut with `--truncate-at` (see docs/operations.md, "A corrupt binlog", for what it loses).
    #[arg(long, requires = "truncate_at")]
    pub i_know: bool,

    /// A binlog file, or a directory holding `ferry-bin.index` (or a node's data directory, whose `binlog/` does).
    #[arg(required_unless_present = "from_node")]
    pub path: Option<PathBuf>,
}

/// What to print, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The binlog to read (empty with `--from-node`).
    pub path: PathBuf,
    /// `--from-node … --follow`: follow a cluster instead of reading files.
    pub remote: Option<Remote>,
    pub start: Option<GtidPosition>,
    pub stop: GtidPosition,
    /// `None` prints every domain.
    pub domains: Option<BTreeSet<DomainId>>,
    pub json: bool,
    /// `--verify` or `--truncate-at`: repair instead of printing.
    pub repair: Option<Repair>,
}

/// Where and as whom to follow a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub nodes: Vec<String>,
    pub token_file: PathBuf,
    pub name: String,
}

/// The repair path's two steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repair {
    Verify,
    TruncateAt { offset: u64, i_know: bool },
}

/// A flag's value that is not a GTID position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPosition {
    pub flag: &'static str,
    pub error: GtidParseError,
}

impl std::fmt::Display for BadPosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let indent = "    ";
        let pointer = self.error.pointer().replace('\n', &format!("\n{indent}"));
        write!(f, "{}: {}\n{indent}{pointer}", self.flag, self.error)
    }
}

impl Args {
    pub fn into_options(self) -> Result<Options, BadPosition> {
        let parse =
            |flag: &'static str, text: &str| text.parse::<GtidPosition>().map_err(|error| BadPosition { flag, error });
        let start = self.start_position.as_deref().map(|t| parse("--start-position", t)).transpose()?;
        let stop = self.stop_position.as_deref().map(|t| parse("--stop-position", t)).transpose()?.unwrap_or_default();
        let domains = (!self.domains.is_empty()).then(|| self.domains.into_iter().collect());
        let repair = match (self.verify, self.truncate_at) {
            (true, _) => Some(Repair::Verify),
            (false, Some(offset)) => Some(Repair::TruncateAt { offset, i_know: self.i_know }),
            (false, None) => None,
        };
        let remote = (!self.from_node.is_empty()).then(|| Remote {
            nodes: self.from_node,
            token_file: self.token_file.unwrap_or_default(),
            name: self.name,
        });
        Ok(Options { path: self.path.unwrap_or_default(), remote, start, stop, domains, json: self.json, repair })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(argv: &[&str]) -> Result<Options, BadPosition> {
        Args::try_parse_from(std::iter::once("ferry-binlog").chain(argv.iter().copied())).unwrap().into_options()
    }

    #[test]
    fn domains_may_be_repeated_or_comma_separated() {
        let o = options(&["--domain", "3", "--domain", "1,2", "dir"]).unwrap();
        assert_eq!(o.domains, Some(BTreeSet::from([1, 2, 3])));
        assert_eq!(options(&["dir"]).unwrap().domains, None);
    }

    #[test]
    fn positions_are_parsed_and_an_absent_stop_position_stops_nothing() {
        let o = options(&["--start-position", "1-2-5,0-1-10", "f"]).unwrap();
        assert_eq!(o.start.unwrap().to_string(), "0-1-10,1-2-5");
        assert!(o.stop.is_empty());
    }

    #[test]
    fn following_nodes_needs_follow_and_a_token_file_and_no_path() {
        let o = options(&["--from-node", "a:1,b:2", "--follow", "--token-file", "t", "--domain", "1"]).unwrap();
        let remote = o.remote.unwrap();
        assert_eq!(remote.nodes, ["a:1", "b:2"]);
        assert_eq!((remote.token_file.to_str(), remote.name.as_str()), (Some("t"), "ferry-binlog"));
        let refused = |argv: &[&str]| {
            Args::try_parse_from(std::iter::once("ferry-binlog").chain(argv.iter().copied())).unwrap_err().to_string()
        };
        assert!(refused(&["--from-node", "a:1", "--token-file", "t"]).contains("--follow"));
        assert!(refused(&["--from-node", "a:1", "--follow"]).contains("--token-file"));
        assert!(refused(&["--from-node", "a:1", "--follow", "--token-file", "t", "dir"]).contains("cannot be used"));
        assert!(refused(&["--follow", "dir"]).contains("--from-node"));
        assert!(refused(&[]).contains("<PATH>"));
    }

    #[test]
    fn a_bad_position_names_the_flag_and_points_at_the_column() {
        let e = options(&["--stop-position", "0-1-x", "f"]).unwrap_err();
        assert_eq!(e.flag, "--stop-position");
        assert_eq!(e.error.column, 5);
        let text = e.to_string();
        assert!(text.starts_with("--stop-position: invalid GTID text \"0-1-x\" at column 5"), "{text}");
        assert!(text.ends_with("\n    0-1-x\n        ^"), "{text}");
    }
}
