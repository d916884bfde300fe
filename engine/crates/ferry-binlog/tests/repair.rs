//! The repair path of a corrupt binlog (docs/operations.md, "A corrupt binlog"): `--verify` locates the damage,
//! a node refuses to start on it, `--truncate-at OFFSET --i-know` cuts it, and the cut seq_nos are never handed
//! out again.

mod support;

use std::collections::BTreeMap;

use ferry_core::binlog::event::Event;
use ferry_core::binlog::hwm;
use ferry_core::node::{Node, NodeConfig, TxnRequest};
use ferry_core::row::RowOp;
use support::{ferry_binlog, Fixture};

/// Flips a byte in the `Rows` event of the second file's first transaction (0-1-4): two whole transactions
/// (other commit groups) follow it. Returns (the damaged event's offset, the end of the last whole item).
fn damage_second_file(f: &Fixture) -> (u64, u64) {
    let events = f.events(2);
    let gtid_at = events.iter().position(|e| matches!(e.event, Event::Gtid(_))).unwrap();
    let (gtid, rows) = (&events[gtid_at], &events[gtid_at + 1]);
    let path = f.file(2);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[(rows.offset + 6) as usize] ^= 0x20;
    std::fs::write(&path, bytes).unwrap();
    (rows.offset, gtid.offset)
}

#[test]
fn verify_says_ok_for_every_file_of_a_clean_binlog() {
    let f = Fixture::new();
    let run = ferry_binlog(&["--verify"], f.dir.path()).ok();
    assert_eq!(run.lines().len(), 2, "{}", run.stdout);
    assert!(run.lines().iter().all(|l| l.contains(": ok (")), "{}", run.stdout);
}

#[test]
fn a_flipped_byte_is_located_refused_at_start_up_and_cut_with_its_seq_nos_kept_used() {
    let f = Fixture::new();
    let (damaged, cut_at) = damage_second_file(&f);
    let len = std::fs::metadata(f.file(2)).unwrap().len();

    let run = ferry_binlog(&["--verify"], f.dir.path());
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let report = run.lines()[1].to_string();
    assert!(
        report.starts_with(&format!("ferry-bin.000002: CORRUPT at offset {damaged} (checksum mismatch")),
        "{report}"
    );
    assert!(report.contains("before it none in this file, first readable after it 1-1-3"), "{report}");
    assert!(report.contains(&format!("`--truncate-at {cut_at} --i-know`")), "{report}");

    // The node refuses to start, naming the file, the offset and the GTIDs around the damage.
    let err = Node::open(NodeConfig::new(1, f.dir.path()), None).err().expect("refused").to_string();
    assert!(err.contains(&format!("ferry-bin.000002 is corrupt at offset {damaged}")), "{err}");
    assert!(err.contains("after it 1-1-3") && err.contains("ferry-binlog --verify"), "{err}");
    assert_eq!(std::fs::metadata(f.file(2)).unwrap().len(), len, "start-up cut nothing");

    // Without --i-know: only what it would lose.
    let offset = cut_at.to_string();
    let dry = ferry_binlog(&["--truncate-at", &offset], &f.file(2));
    assert_eq!(dry.code, 2, "{}", dry.stderr);
    assert!(dry.stdout.contains("loses") && dry.stdout.contains("0-1-4,1-1-3,0-1-5"), "{}", dry.stdout);
    assert_eq!(std::fs::metadata(f.file(2)).unwrap().len(), len, "nothing was changed");
    // Not at a transaction's end: refused.
    let bad = ferry_binlog(&["--truncate-at", &(cut_at + 1).to_string(), "--i-know"], &f.file(2));
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.contains("not the end of a whole transaction"), "{}", bad.stderr);
    // An older file cannot be cut.
    let old = ferry_binlog(&["--truncate-at", "100", "--i-know"], &f.file(1));
    assert!(old.code == 1 && old.stderr.contains("only the last file can be cut"), "{}", old.stderr);

    ferry_binlog(&["--truncate-at", &offset, "--i-know"], &f.file(2)).ok();
    assert_eq!(std::fs::metadata(f.file(2)).unwrap().len(), cut_at);
    assert_eq!(hwm::read(&f.binlog_dir()).unwrap(), BTreeMap::from([(0, 5), (1, 3)]));
    ferry_binlog(&["--verify"], f.dir.path()).ok();

    // The node starts, and allocates above the cut seq_nos: 0-1-4, 1-1-3 and 0-1-5 never mean two transactions.
    let node = Node::open(NodeConfig::new(1, f.dir.path()), None).unwrap();
    assert_eq!(node.status().gtid_binlog_pos, "0-1-3,1-1-2");
    let bump = |domain| {
        let op = RowOp::Increment { table: "t".into(), key: "z".into(), field: "n".into(), by: 1 };
        node.execute(TxnRequest { domain: Some(domain), ops: vec![op], ..Default::default() }, false).unwrap().gtid
    };
    assert_eq!(bump(0).to_string(), "0-1-6");
    assert_eq!(bump(1).to_string(), "1-1-4");
}

#[test]
fn a_torn_last_write_is_reported_as_the_nodes_to_trim() {
    let f = Fixture::new();
    let last = f.events(2).pop().unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(f.file(2)).unwrap();
    file.set_len(last.offset + last.len - 3).unwrap();
    let run = ferry_binlog(&["--verify"], f.dir.path()).ok();
    assert!(run.lines()[1].contains("torn last write") && run.lines()[1].contains("0-1-5"), "{}", run.stdout);
}
