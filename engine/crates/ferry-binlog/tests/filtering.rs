//! `--domain`, `--start-position` and `--stop-position`: which transactions are printed.

mod support;

use support::{ferry_binlog, Fixture, SECOND_FILE};

fn count(stdout: &str, kind: &str) -> usize {
    stdout.lines().filter(|l| l.split(' ').nth(2) == Some(kind)).count()
}

#[test]
fn domain_keeps_whole_transactions_of_the_listed_domains_and_every_other_event() {
    let f = Fixture::new();
    let run = ferry_binlog(&["--domain", "1"], &f.binlog_dir()).ok();
    assert_eq!(run.gtids(), ["1-1-1", "1-1-2", "1-1-3"]);
    assert_eq!((count(&run.stdout, "rows"), count(&run.stdout, "commit")), (3, 3));
    for kind in ["format_description", "gtid_list"] {
        assert_eq!(count(&run.stdout, kind), 2, "{kind}");
    }
    assert_eq!((count(&run.stdout, "checkpoint"), count(&run.stdout, "rotate")), (1, 1));
}

#[test]
fn domains_may_be_listed_with_commas_or_repeated() {
    let f = Fixture::new();
    let everything = ferry_binlog(&[], &f.binlog_dir()).ok();
    assert_eq!(ferry_binlog(&["--domain", "0,1"], &f.binlog_dir()).ok().stdout, everything.stdout);
    assert_eq!(ferry_binlog(&["--domain", "1", "--domain", "0"], &f.binlog_dir()).ok().stdout, everything.stdout);
    assert!(ferry_binlog(&["--domain", "7"], &f.binlog_dir()).ok().gtids().is_empty());
}

#[test]
fn start_position_prints_what_a_replica_there_would_be_sent() {
    let f = Fixture::new();
    let run = ferry_binlog(&["--start-position", "0-1-2,1-1-1"], &f.binlog_dir()).ok();
    assert_eq!(run.gtids(), ["1-1-2", "0-1-3", "0-1-4", "1-1-3", "0-1-5"]);
    // A skipped transaction is skipped whole.
    assert_eq!(count(&run.stdout, "rows"), 5);
    // The first file's header is printed, then reading goes on where the replica's stream would start (after 0-1-2:
    // the transactions before it, which finding the start read, are not read again).
    let first: Vec<&str> = run.lines().into_iter().take(3).collect();
    assert!(first[0].starts_with("ferry-bin.000001 @4 format_description"), "{}", run.stdout);
    assert!(first[1].contains(" gtid_list ["), "{}", run.stdout);
    assert!(first[2].contains(" gtid 1-1-2 "), "{}", run.stdout);
}

#[test]
fn start_position_begins_in_the_newest_file_whose_gtid_list_it_has_reached() {
    let f = Fixture::new();
    let run = ferry_binlog(&["--start-position", "0-1-3,1-1-2"], &f.binlog_dir()).ok();
    assert_eq!(run.gtids(), SECOND_FILE);
    assert!(run.lines().iter().all(|l| l.starts_with("ferry-bin.000002 @")), "{}", run.stdout);
}

#[test]
fn a_domain_missing_from_the_start_position_is_printed_from_its_first_transaction() {
    let f = Fixture::new();
    let run = ferry_binlog(&["--start-position", "0-1-4"], &f.binlog_dir()).ok();
    assert_eq!(run.gtids(), ["1-1-1", "1-1-2", "1-1-3", "0-1-5"]);
}

#[test]
fn stop_position_ends_each_listed_domain_after_its_gtid_and_leaves_the_others() {
    let f = Fixture::new();
    let run = ferry_binlog(&["--stop-position", "0-1-2"], &f.binlog_dir()).ok();
    assert_eq!(run.gtids(), ["0-1-1", "1-1-1", "0-1-2", "1-1-2", "1-1-3"]);
    // Reading went on to the end for domain 1.
    assert_eq!(run.lines().last().unwrap().split(' ').nth(2), Some("commit"));
    assert!(run.stdout.contains("ferry-bin.000002 @"));
}

#[test]
fn reading_stops_early_once_every_printed_domain_has_passed_its_stop() {
    let f = Fixture::new();
    let run = ferry_binlog(&["--domain", "0", "--stop-position", "0-1-2"], &f.binlog_dir()).ok();
    assert_eq!(run.gtids(), ["0-1-1", "0-1-2"]);
    // 0-1-3 ended the read: neither the checkpoint after it nor the second file was printed.
    assert_eq!(count(&run.stdout, "checkpoint"), 0);
    assert!(!run.stdout.contains("ferry-bin.000002"), "{}", run.stdout);
}

#[test]
fn start_stop_and_domain_combine() {
    let f = Fixture::new();
    let args = ["--start-position", "0-1-1,1-1-1", "--stop-position", "0-1-4,1-1-2", "--domain", "0,1"];
    let run = ferry_binlog(&args, &f.binlog_dir()).ok();
    assert_eq!(run.gtids(), ["0-1-2", "1-1-2", "0-1-3", "0-1-4"]);
    let json = ferry_binlog(&[&args[..], &["--json"]].concat(), &f.binlog_dir()).ok();
    let gtid_events = json.lines().iter().filter(|l| l.contains(r#""type":"gtid""#)).count();
    assert_eq!(gtid_events, 4);
}
