//! Reading whole files and directories: one line per event, in binlog order, in text or JSON.

mod support;

use support::{ferry_binlog, Fixture, FIRST_FILE, SECOND_FILE};

#[test]
fn a_directory_prints_every_event_of_every_file_across_the_rotation() {
    let f = Fixture::new();
    let run = ferry_binlog(&[], &f.binlog_dir()).ok();
    let events: Vec<_> = f.events(1).into_iter().chain(f.events(2)).collect();
    let lines = run.lines();
    assert_eq!(lines.len(), events.len());
    for (line, ev) in lines.iter().zip(&events) {
        let prefix = format!("{} @{} {}", ev.file, ev.offset, ev.event.type_name());
        assert!(line.starts_with(&prefix), "{line:?} should start with {prefix:?}");
    }
    let all: Vec<&str> = FIRST_FILE.iter().chain(&SECOND_FILE).copied().collect();
    assert_eq!(run.gtids(), all);
    let rotate = f.events(1).last().unwrap().offset;
    assert!(lines.contains(&format!("ferry-bin.000001 @{rotate} rotate next_file=ferry-bin.000002").as_str()));
    assert!(lines.contains(&"ferry-bin.000002 @43 gtid_list [0-1-3,1-1-2]"));
}

#[test]
fn text_lines_show_headers_gtids_images_and_commits() {
    let f = Fixture::new();
    let run = ferry_binlog(&[], &f.file(1)).ok();
    let lines = run.lines();
    assert!(lines[0].starts_with("ferry-bin.000001 @4 format_description server_id=1 binlog_version=1 server_version="));
    assert_eq!(lines[1], "ferry-bin.000001 @43 gtid_list []");
    assert!(lines[2]
        .starts_with("ferry-bin.000001 @56 gtid 0-1-1 commit_id=1 flags=0x11(transactional,before_images) ts=20"));
    assert!(lines[2].ends_with('Z'));
    assert_eq!(lines[3], "ferry-bin.000001 @98 rows changes=1: t[\"a\"] none -> {n: 1}");
    assert_eq!(lines[4], "ferry-bin.000001 @141 commit changes=1");
    // The second increment of row a logs its before image.
    assert!(lines.contains(&"ferry-bin.000001 @294 rows changes=1: t[\"a\"] {n: 1} -> {n: 2}"));
    assert!(lines.iter().any(|l| l.contains(" checkpoint file=ferry-bin.000001 offset=")));
}

#[test]
fn a_single_file_is_read_alone() {
    let f = Fixture::new();
    let run = ferry_binlog(&[], &f.file(2)).ok();
    assert_eq!(run.gtids(), SECOND_FILE);
    assert!(run.lines().iter().all(|l| l.starts_with("ferry-bin.000002 @")));
}

#[test]
fn json_lines_match_the_events_the_library_reads() {
    let f = Fixture::new();
    let run = ferry_binlog(&["--json"], &f.binlog_dir()).ok();
    let events: Vec<_> = f.events(1).into_iter().chain(f.events(2)).collect();
    let values: Vec<serde_json::Value> = run.lines().iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(values.len(), events.len());
    for (v, ev) in values.iter().zip(&events) {
        assert_eq!(v["file"], ev.file.as_str());
        assert_eq!(v["offset"], ev.offset);
        assert_eq!(v["len"], ev.len);
        assert_eq!(v["type"], ev.event.type_name());
    }
    let first_gtid = &values[2];
    assert_eq!(first_gtid["gtid"], serde_json::json!({"domain": 0, "server": 1, "seq": 1}));
    assert_eq!(first_gtid["commit_id"], 1);
    assert_eq!(
        values[3]["changes"],
        serde_json::json!([{"table": "t", "key": "a", "before": null, "after": {"n": 1}}])
    );
    let checkpoint = values.iter().find(|v| v["type"] == "checkpoint").unwrap();
    assert_eq!(checkpoint["checkpoint_file"], "ferry-bin.000001");
    assert!(checkpoint["checkpoint_offset"].is_u64());
}

#[test]
fn a_nodes_data_directory_is_read_through_its_binlog_directory() {
    let f = Fixture::new();
    let from_data_dir = ferry_binlog(&[], f.dir.path()).ok();
    assert_eq!(from_data_dir.stdout, ferry_binlog(&[], &f.binlog_dir()).ok().stdout);
}

#[test]
fn a_directory_without_an_index_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = ferry_binlog(&[], dir.path());
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("has no ferry-bin.index"), "{}", run.stderr);
}
