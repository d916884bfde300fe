//! What goes wrong, said precisely: corrupt and torn events, positions the binlog cannot serve, bad GTID text.

mod support;

use support::{ferry_binlog, Fixture};

#[test]
fn a_flipped_byte_prints_everything_before_the_damaged_event_then_names_its_file_and_offset() {
    let f = Fixture::new();
    let path = f.file(1);
    let events = f.events(1);
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    let damaged = events.iter().find(|e| (e.offset..e.offset + e.len).contains(&(middle as u64))).unwrap();
    bytes[middle] ^= 0x40;
    std::fs::write(&path, bytes).unwrap();

    let run = ferry_binlog(&[], &f.binlog_dir());
    assert_eq!(run.code, 1, "{}", run.stderr);
    let before: Vec<u64> = events.iter().map(|e| e.offset).take_while(|&o| o < damaged.offset).collect();
    assert_eq!(run.lines().len(), before.len());
    assert!(run.lines().last().unwrap().starts_with(&format!("ferry-bin.000001 @{} ", before.last().unwrap())));
    let expected =
        format!("ferry-binlog: error: corrupt binlog event in ferry-bin.000001 at offset {}: ", damaged.offset);
    assert!(run.stderr.starts_with(&expected), "{}", run.stderr);
}

#[test]
fn a_torn_tail_is_reported_at_the_incomplete_event() {
    let f = Fixture::new();
    let last = f.events(2).pop().unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(f.file(2)).unwrap();
    file.set_len(last.offset + last.len - 3).unwrap();

    let run = ferry_binlog(&[], &f.binlog_dir());
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains(&format!("ferry-bin.000002 at offset {}: truncated event", last.offset)),
        "{}",
        run.stderr
    );
    // Everything before it was printed, up to the rows of the transaction it was to commit.
    assert!(run.lines().last().unwrap().starts_with("ferry-bin.000002 @362 rows "), "{}", run.stdout);
}

#[test]
fn a_file_that_is_not_a_binlog_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "hello").unwrap();
    let run = ferry_binlog(&[], &path);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("notes.txt is not a Ferry binlog file"), "{}", run.stderr);
}

#[test]
fn a_start_position_ahead_of_the_binlog_names_the_domain_and_both_gtids() {
    let f = Fixture::new();
    let run = ferry_binlog(&["--start-position", "0-1-9,1-1-3"], &f.binlog_dir());
    assert_eq!(run.code, 1);
    assert!(run.stdout.is_empty());
    assert_eq!(
        run.stderr.trim_end(),
        "ferry-binlog: error: --start-position 0-1-9,1-1-3: domain 0: the replica is at 0-1-9, ahead of the master, whose newest GTID is 0-1-5"
    );
}

#[test]
fn a_start_position_from_another_history_is_diverged() {
    let f = Fixture::new();
    let run = ferry_binlog(&["--start-position", "0-2-3"], &f.binlog_dir());
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("domain 0: the replica's GTID 0-2-3 is not in the master's binlog, which has 0-1-3 there"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_start_position_older_than_the_oldest_file_is_purged() {
    let f = Fixture::new();
    // Reading the second file alone is what a master that purged the first would have.
    let run = ferry_binlog(&["--start-position", "0-1-1,1-1-1"], &f.file(2));
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains(
            "domain 0: the replica is at 0-1-1, but the master's oldest binlog (ferry-bin.000002) starts after 0-1-3"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn a_start_position_in_a_hole_is_refused_in_strict_mode() {
    let f = Fixture::new();
    // The replica claims a GTID below the domain's first one: it is not in the binlog, which jumps past it.
    let run = ferry_binlog(&["--start-position", "0-9-0"], &f.binlog_dir());
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("domain 0: the replica's GTID 0-9-0 falls in a hole of the master's binlog (next is 0-1-1)"),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_gtid_text_exits_2_and_points_at_the_column() {
    let f = Fixture::new();
    let run = ferry_binlog(&["--start-position", "0-1-x"], &f.binlog_dir());
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains("--start-position: invalid GTID text \"0-1-x\" at column 5: expected seq_no"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.ends_with("    0-1-x\n        ^\n"), "{:?}", run.stderr);

    let run = ferry_binlog(&["--stop-position", "0-1-5,0-1-6"], &f.binlog_dir());
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("at column 7: domain 0 appears twice"), "{}", run.stderr);
}

#[test]
fn a_bad_domain_number_is_a_usage_error() {
    let f = Fixture::new();
    let run = ferry_binlog(&["--domain", "x"], &f.binlog_dir());
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--domain"), "{}", run.stderr);
}
