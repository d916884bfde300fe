//! Shared by the integration tests: a real binlog written by a real node, and a way to run the real binary.
//!
//! The fixture binlog, written by server 1 (each line a transaction, `|` a rotation):
//! `0-1-1 1-1-1 0-1-2 1-1-2 0-1-3 | 0-1-4 1-1-3 0-1-5`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ferry_core::binlog::reader::{FileReader, ReadEvent};
use ferry_core::node::{Node, NodeConfig, TxnRequest};
use ferry_core::row::RowOp;
use ferry_core::{DomainId, Gtid};

/// The transactions of the fixture, in binlog order, by file.
pub const FIRST_FILE: [&str; 5] = ["0-1-1", "1-1-1", "0-1-2", "1-1-2", "0-1-3"];
pub const SECOND_FILE: [&str; 3] = ["0-1-4", "1-1-3", "0-1-5"];

/// A data directory whose `binlog/` holds the fixture binlog (two files).
pub struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
        let bump = |domain: DomainId, key: &str| -> Gtid {
            let op = RowOp::Increment { table: "t".into(), key: key.into(), field: "n".into(), by: 1 };
            node.execute(TxnRequest { domain: Some(domain), ops: vec![op], ..Default::default() }, false).unwrap().gtid
        };
        let mut written = Vec::new();
        for (domain, key) in [(0, "a"), (1, "b"), (0, "a"), (1, "c"), (0, "d")] {
            written.push(bump(domain, key).to_string());
        }
        assert_eq!(written, FIRST_FILE);
        node.flush_logs().unwrap();
        written.clear();
        for (domain, key) in [(0, "a"), (1, "b"), (0, "e")] {
            written.push(bump(domain, key).to_string());
        }
        assert_eq!(written, SECOND_FILE);
        drop(node);
        Fixture { dir }
    }

    pub fn binlog_dir(&self) -> PathBuf {
        self.dir.path().join("binlog")
    }

    pub fn file(&self, n: u64) -> PathBuf {
        self.binlog_dir().join(ferry_core::binlog::file_name(n))
    }

    /// Every event of one file, read with the library.
    pub fn events(&self, n: u64) -> Vec<ReadEvent> {
        FileReader::open(&self.file(n)).unwrap().map(Result::unwrap).collect()
    }
}

/// What a run of `ferry-binlog` printed and how it exited.
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl Run {
    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }

    /// The GTIDs of the printed `gtid` lines (text output), in order.
    pub fn gtids(&self) -> Vec<&str> {
        self.stdout
            .lines()
            .filter_map(|l| l.split_once(" gtid "))
            .filter_map(|(_, rest)| rest.split(' ').next())
            .collect()
    }

    /// Asserts a zero exit and returns self, showing stderr when not.
    pub fn ok(self) -> Self {
        assert_eq!(self.code, 0, "ferry-binlog failed: {}", self.stderr);
        self
    }
}

pub fn ferry_binlog(args: &[&str], path: &Path) -> Run {
    let Output { status, stdout, stderr } =
        Command::new(env!("CARGO_BIN_EXE_ferry-binlog")).args(args).arg(path).output().expect("run ferry-binlog");
    Run {
        stdout: String::from_utf8(stdout).unwrap(),
        stderr: String::from_utf8(stderr).unwrap(),
        code: status.code().expect("exited, not killed"),
    }
}
