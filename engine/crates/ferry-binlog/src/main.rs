//! `ferry-binlog`: prints the events of Ferry binlog files, like mysqlbinlog.
//!
//! Following (`--from-node HOST:PORT[,…] --follow --token-file F`): a cluster's committed transactions as they
//! come, through whichever node is the master, in the same lines; on SIGINT it stops and says on stderr the
//! position to resume from (see `follow`).
//!
//! Repair (docs/operations.md, "A corrupt binlog"): `--verify` checks every event and names each damage (file,
//! offset, GTIDs around it, the offset to cut at); `--truncate-at OFFSET --i-know FILE` cuts the last file there.
//!
//! Exit codes: 0 when everything asked for was printed (following: stopped by a signal or `--stop-position`);
//! 1 when the binlog cannot be read (a corrupt or torn event, after printing everything before it) or cannot
//! serve `--start-position` (following: the nodes refused, naming why); 2 for a bad command line, including GTID
//! text that does not parse.
//!
//! Filters apply to transactions only; format descriptions, GTID lists, checkpoints and rotations are always
//! printed. With `--start-position`, files before the one a replica would start in are skipped, and that file's
//! header is printed (its GTID list shows the state the listed transactions follow); reading then goes on where the
//! replica's stream would start, past the transactions it has that finding the start read (their checkpoints too).

mod cli;
mod dump;
mod filter;
mod follow;
mod format;
mod repair;
mod start;
mod utc;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use ferry_core::binlog::{files_at, index_path};

use crate::cli::{Args, Options, Repair};
use crate::dump::{Dump, DumpError};
use crate::filter::TxnFilter;

const BINLOG_FAILURE: u8 = 1;
const USAGE_FAILURE: u8 = 2;

fn main() -> ExitCode {
    let options = match Args::parse().into_options() {
        Ok(options) => options,
        Err(bad) => return fail(USAGE_FAILURE, &bad),
    };
    if let Some(repair) = options.repair {
        return run_repair(repair, &options.path);
    }
    if let Some(remote) = &options.remote {
        return run_follow(&options, remote);
    }
    let dump = match plan(&options) {
        Ok(dump) => dump,
        Err(message) => return fail(BINLOG_FAILURE, &message),
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    let result = dump.run(&mut out);
    // Flush what was printed before reporting why it stopped, so the error line comes after it.
    let flushed = out.flush();
    match result.and_then(|()| flushed.map_err(DumpError::Output)) {
        Ok(()) => ExitCode::SUCCESS,
        // Nobody is reading any more (`| head`): stop quietly, as other command-line tools do.
        Err(DumpError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(DumpError::Output(e)) => fail(BINLOG_FAILURE, &format!("writing the output: {e}")),
        Err(DumpError::Binlog(e)) => fail(BINLOG_FAILURE, &e),
    }
}

/// `--from-node … --follow`: exit 0 when stopped as asked, 1 when the nodes refused or the output failed; either
/// way stderr ends with the position to resume from.
fn run_follow(options: &Options, remote: &cli::Remote) -> ExitCode {
    let mut out = BufWriter::new(std::io::stdout().lock());
    let (resume, stopped) = follow::run(options, remote, &mut out);
    let _ = out.flush(); // each transaction was flushed as it was printed
    let code = match stopped {
        follow::Stopped::Asked => ExitCode::SUCCESS,
        follow::Stopped::Output(e) => fail(BINLOG_FAILURE, &format!("writing the output: {e}")),
        follow::Stopped::Refused(why) => fail(BINLOG_FAILURE, &why),
    };
    eprintln!("ferry-binlog: stopped; {}", resume.describe());
    code
}

/// `--verify` (exit 0 clean or torn last write, 1 corrupt) and `--truncate-at` (exit 0 cut, 2 without `--i-know`).
fn run_repair(repair: Repair, path: &Path) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match repair {
        Repair::Verify => match repair::verify(&binlog_path(path), &mut out) {
            Ok(repair::Verdict::Clean) | Ok(repair::Verdict::TornTail) => ExitCode::SUCCESS,
            Ok(repair::Verdict::Corrupt) => fail(BINLOG_FAILURE, &"the binlog is corrupt (see above)"),
            Err(e) => fail(BINLOG_FAILURE, &e),
        },
        Repair::TruncateAt { offset, i_know } => match repair::truncate(path, offset, i_know, &mut out) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(USAGE_FAILURE),
            Err(e) => fail(BINLOG_FAILURE, &e),
        },
    }
}

/// Which files to read, from where, and through which filter.
fn plan(options: &Options) -> Result<Dump, String> {
    let files = files_at(&binlog_path(&options.path)).map_err(|e| e.to_string())?;
    let start = match &options.start {
        None => None,
        Some(position) => {
            Some(start::start_point(&files, position).map_err(|e| format!("--start-position {position}: {e}"))?)
        }
    };
    let (first_file, first_offset) = start.as_ref().map_or((0, 0), |s| (s.file_index, s.offset));
    let filter = TxnFilter::new(start, options.domains.clone(), &options.stop);
    Ok(Dump { files, first_file, first_offset, filter, json: options.json })
}

/// A node's data directory keeps its binlog in `binlog/`: accept it as well as the binlog directory itself.
fn binlog_path(path: &Path) -> PathBuf {
    let nested = path.join("binlog");
    if path.is_dir() && !index_path(path).exists() && index_path(&nested).exists() {
        nested
    } else {
        path.to_path_buf()
    }
}

fn fail(code: u8, message: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("ferry-binlog: error: {message}");
    ExitCode::from(code)
}
