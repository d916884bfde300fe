//! A real `ferryd` at start-up: a flipped byte in the middle of a binlog file is corruption (the node exits
//! non-zero naming the file, the offset and the GTIDs around it, and cuts nothing), while a torn last write is
//! trimmed (and said so in the log) without losing an acknowledged transaction or reusing its seq_no.

use std::process::Command;

use crate::common::{rt, NodeProc, TOKEN};
use ferry_client::Txn;
use ferry_core::binlog::event::{encode_event, Event, GtidEvent};
use ferry_core::binlog::file_name;
use ferry_core::gtid::Gtid;
use ferry_core::row::Value;

/// Commits `n` transactions one after the other (each its own commit group); returns their GTIDs.
fn commit(node: &NodeProc, from: i64, n: i64) -> Vec<Gtid> {
    let mut c = node.client();
    (from..from + n)
        .map(|i| {
            let txn = Txn::new().put("t", &format!("k{i}"), [("n".to_string(), Value::Int(i))].into());
            rt().block_on(c.transact(txn)).unwrap().gtid
        })
        .collect()
}

#[test]
fn a_flipped_byte_mid_file_stops_start_up_with_the_file_offset_and_gtids() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = NodeProc::start(dir.path(), 1, &[]);
    commit(&node, 0, 30);
    node.stop();
    let txns = node.binlog_transactions();
    let victim = &txns[14];
    let path = node.binlog_dir().join(file_name(1));
    let mut bytes = std::fs::read(&path).unwrap();
    let len = bytes.len();
    bytes[victim.offset as usize + 30] ^= 0x08;
    std::fs::write(&path, &bytes).unwrap();

    std::fs::write(dir.path().join("token"), TOKEN).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ferryd"))
        .args(["--server-id", "1", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--admin-token-file")
        .arg(dir.path().join("token"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "ferryd started on a corrupt binlog:\n{stderr}");
    assert!(out.stdout.is_empty(), "it never reported ready");
    let expected = format!("binlog ferry-bin.000001 is corrupt at offset {}", victim.offset);
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(stderr.contains(&format!("before it {}", txns[13].gtid())), "{stderr}");
    assert!(stderr.contains(&format!("after it {}", txns[15].gtid())), "{stderr}");
    assert!(stderr.contains("ferry-binlog --verify"), "{stderr}");
    assert_eq!(std::fs::read(&path).unwrap().len(), len, "nothing was cut");
}

#[test]
fn a_torn_last_write_is_trimmed_nothing_acknowledged_is_lost_and_its_seq_no_is_not_reused() {
    let dir = tempfile::tempdir().unwrap();
    // No checkpoint after start-up: the torn write is past the last durable point.
    let mut node = NodeProc::start(dir.path(), 1, &["--checkpoint-interval-ms", "3600000"]);
    let acked = commit(&node, 0, 10);
    node.sigkill();
    // The next group's write was torn by the crash: its GTID event and part of its rows reached the disk.
    let torn = Gtid::new(0, 1, acked.last().unwrap().seq + 1);
    let mut group = Vec::new();
    encode_event(&Event::Gtid(GtidEvent { gtid: torn, commit_id: 99, flags: 0, commit_ts_us: 0 }), &mut group);
    encode_event(&Event::Rows { changes: vec![] }, &mut group);
    encode_event(&Event::Commit { changes: 0 }, &mut group);
    let path = node.binlog_dir().join(file_name(1));
    let mut bytes = std::fs::read(&path).unwrap();
    let whole = bytes.len();
    bytes.extend_from_slice(&group[..group.len() - 5]);
    std::fs::write(&path, &bytes).unwrap();

    node.restart();
    let log = node.log();
    assert!(log.contains("binlog tail was torn"), "{log}");
    // Trimmed back to the last whole transaction: what was there before the torn write is intact, and the torn
    // transaction is gone (the node may append events of its own at start-up, e.g. a checkpoint).
    let after = std::fs::read(&path).unwrap();
    assert!(after.len() >= whole && after[..whole] == bytes[..whole], "the whole transactions are intact");
    assert_eq!(node.binlog_gtids(), acked, "every acknowledged transaction is there, and the torn one is not");
    let mut c = node.client();
    for i in 0..10 {
        assert!(rt().block_on(c.get("t", &format!("k{i}"))).unwrap().is_some(), "k{i} lost");
    }
    let next = commit(&node, 10, 1)[0];
    assert!(next.seq > torn.seq, "{next}: the torn transaction's seq_no {torn} was handed out again");
}
