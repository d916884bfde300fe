"""Specification of read_binlog on a binlog written by a real ferryd node (see conftest.history).

The node committed five transactions over domains 0 and 1, was flushed after the third (so the binlog has
two files), and was stopped with SIGTERM. Checkpoint events are the node's own business: their number is
not part of what is specified here, only that they sit outside transactions.
"""

import shutil

import pytest
from ferry_engine import BinlogCorruptError, read_binlog


def without_checkpoints(events):
    return [e for e in events if e["type"] != "checkpoint"]


class TestEvents:
    def test_a_file_opens_with_its_header_and_frames_each_transaction(self, history):
        events = list(read_binlog(history.first_file))
        assert [e["type"] for e in without_checkpoints(events)] == [
            "format_description",
            "gtid_list",
            *["gtid", "rows", "commit"] * history.in_first_file,
            "rotate",
        ]
        assert events[0]["server_id"] == 1 and events[0]["binlog_version"] == 1
        assert events[1]["gtids"] == [], "the first file was opened on an empty binlog state"
        assert events[-1]["next_file"] == "ferry-bin.000002"

    def test_events_tile_the_file_from_just_after_the_magic_bytes(self, history):
        events = list(read_binlog(history.first_file))
        assert events[0]["offset"] == 4
        for before, after in zip(events, events[1:]):
            assert after["offset"] == before["offset"] + before["len"]
        assert events[-1]["offset"] + events[-1]["len"] == history.first_file.stat().st_size
        assert {e["file"] for e in events} == {"ferry-bin.000001"}

    def test_gtid_events_carry_what_the_node_acknowledged(self, history):
        gtids = [e for e in read_binlog(history.first_file) if e["type"] == "gtid"]
        acked = history.acked[: history.in_first_file]
        assert [e["gtid"] for e in gtids] == [c.gtid for c in acked]
        for event, c in zip(gtids, acked):
            assert (event["domain"], event["server_id"], event["seq_no"]) == (c.domain, c.server, c.seq)
            assert (event["commit_id"], event["commit_ts_us"]) == (c.commit_id, c.commit_ts_us)

    def test_rows_events_hold_before_and_after_images_and_commits_count_them(self, history):
        events = without_checkpoints(read_binlog(history.second_file))
        rows, commit = events[3], events[4]
        assert rows["changes"] == [
            {"table": "t", "key": "a", "before": {"n": 2}, "after": {"n": 3}},
            {"table": "t", "key": "c", "before": None, "after": {"n": 7}},
        ]
        assert (commit["type"], commit["changes"]) == ("commit", 2)

    def test_a_directory_is_read_file_by_file_in_index_order(self, history):
        reader = read_binlog(history.binlog_dir)
        assert reader.files == [str(history.first_file), str(history.second_file)]
        events = list(reader)
        files = [e["file"] for e in events]
        assert files == sorted(files) and set(files) == {"ferry-bin.000001", "ferry-bin.000002"}
        second = [e for e in events if e["file"] == "ferry-bin.000002"]
        assert [e["type"] for e in second[:2]] == ["format_description", "gtid_list"]
        assert second[1]["gtids"] == ["0-1-2", "1-1-1"], "the binlog state when the second file was opened"
        assert [e["gtid"] for e in events if e["type"] == "gtid"] == [c.gtid for c in history.acked]

    def test_the_domain_filter_drops_other_domains_transactions_but_keeps_file_events(self, history):
        events = list(read_binlog(history.binlog_dir, domains=[1]))
        assert [e["gtid"] for e in events if e["type"] == "gtid"] == ["1-1-1", "1-1-2"]
        txn_events = [e["type"] for e in events if e["type"] in ("gtid", "rows", "commit")]
        assert txn_events == ["gtid", "rows", "commit"] * 2
        rows = [e for e in events if e["type"] == "rows"]
        assert {c["key"] for e in rows for c in e["changes"]} == {"b"}
        assert [e["type"] for e in events].count("format_description") == 2


class TestTransactions:
    def test_whole_transactions_in_commit_order_across_files(self, history):
        txns = list(read_binlog(history.binlog_dir, transactions=True))
        assert [t["gtid"] for t in txns] == [c.gtid for c in history.acked]
        assert [t["file"] for t in txns] == ["ferry-bin.000001"] * 3 + ["ferry-bin.000002"] * 2
        for t, c in zip(txns, history.acked):
            assert (t["domain"], t["server_id"], t["seq_no"]) == (c.domain, c.server, c.seq)
            assert (t["commit_id"], t["commit_ts_us"]) == (c.commit_id, c.commit_ts_us)
        assert txns[2]["changes"] == [{"table": "t", "key": "a", "before": {"n": 1}, "after": {"n": 2}}]
        assert [c["key"] for c in txns[3]["changes"]] == ["a", "c"]

    def test_a_transaction_spans_its_gtid_event_to_the_end_of_its_commit_event(self, history):
        events = list(read_binlog(history.first_file))
        txns = list(read_binlog(history.first_file, transactions=True))
        gtid_events = [e for e in events if e["type"] == "gtid"]
        commits = [e for e in events if e["type"] == "commit"]
        for t, g, c in zip(txns, gtid_events, commits, strict=True):
            assert (t["offset"], t["end_offset"]) == (g["offset"], c["offset"] + c["len"])
            assert set(t) == {
                "file", "offset", "end_offset", "gtid", "domain", "server_id", "seq_no",
                "commit_id", "flags", "commit_ts_us", "changes",
            }  # fmt: skip

    def test_the_domain_filter_keeps_only_the_given_domains(self, history):
        assert [t["gtid"] for t in read_binlog(history.binlog_dir, transactions=True, domains={0})] == [
            "0-1-1",
            "0-1-2",
            "0-1-3",
        ]
        assert [t["gtid"] for t in read_binlog(history.binlog_dir, transactions=True, domains=1)] == [
            "1-1-1",
            "1-1-2",
        ]
        assert list(read_binlog(history.binlog_dir, transactions=True, domains=[])) == []
        assert list(read_binlog(history.binlog_dir, transactions=True, domains=[7])) == []


class TestDamage:
    @pytest.fixture
    def damaged(self, history, tmp_path):
        """A copy of the first file with one byte in its middle flipped, and the event that byte belongs to."""
        clean = list(read_binlog(history.first_file))
        copy = tmp_path / history.first_file.name
        shutil.copyfile(history.first_file, copy)
        data = bytearray(copy.read_bytes())
        middle = len(data) // 2
        data[middle] ^= 0x5A
        copy.write_bytes(data)
        [hit] = [e for e in clean if e["offset"] <= middle < e["offset"] + e["len"]]
        return copy, clean, hit

    def test_reading_stops_at_the_damaged_event_with_its_file_and_offset(self, damaged):
        path, clean, hit = damaged
        reader = read_binlog(path)
        read = []
        with pytest.raises(BinlogCorruptError) as info:
            for event in reader:
                read.append(event)
        e = info.value
        assert isinstance(e, ValueError)
        assert (e.file, e.offset) == ("ferry-bin.000001", hit["offset"])
        assert f"ferry-bin.000001 at offset {hit['offset']}" in str(e)
        assert e.reason and e.reason in str(e)
        assert read == [c for c in clean if c["offset"] < hit["offset"]], "everything before it was yielded"
        assert list(reader) == [], "the iterator ends after raising"

    def test_transaction_reading_reports_the_same_damaged_event(self, damaged):
        path, _, hit = damaged
        with pytest.raises(BinlogCorruptError) as info:
            list(read_binlog(path, transactions=True))
        assert (info.value.file, info.value.offset) == ("ferry-bin.000001", hit["offset"])

    def test_a_file_that_is_not_a_binlog_is_corrupt_at_offset_zero(self, tmp_path):
        path = tmp_path / "notes.txt"
        path.write_text("hello, binlog")
        with pytest.raises(BinlogCorruptError, match="not a Ferry binlog") as info:
            read_binlog(path)
        assert (info.value.file, info.value.offset) == ("notes.txt", 0)


class TestPaths:
    def test_a_missing_path_raises_file_not_found_when_called(self, tmp_path):
        with pytest.raises(FileNotFoundError) as info:
            read_binlog(tmp_path / "absent")
        assert info.value.filename == str(tmp_path / "absent")

    def test_a_directory_without_an_index_is_refused(self, tmp_path):
        with pytest.raises(ValueError, match="no ferry-bin.index"):
            read_binlog(tmp_path)

    def test_a_file_listed_in_the_index_but_missing_raises_when_reading_reaches_it(self, history, tmp_path):
        shutil.copytree(history.binlog_dir, tmp_path / "binlog")
        (tmp_path / "binlog" / "ferry-bin.000002").unlink()
        reader = read_binlog(tmp_path / "binlog")
        with pytest.raises(FileNotFoundError):
            for event in reader:
                assert event["file"] == "ferry-bin.000001"

    def test_paths_may_be_str_or_pathlike(self, history):
        assert list(read_binlog(str(history.first_file))) == list(read_binlog(history.first_file))
