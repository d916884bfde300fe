"""Specification of ferry_engine's GTID and position API: parsing, formatting, errors, and position math."""

import pickle

import pytest
from ferry_engine import Gtid, GtidParseError, GtidPosition, format_position, parse_gtid, parse_position


class TestGtid:
    def test_parses_and_formats_domain_server_seq(self):
        g = Gtid.parse("0-1-100")
        assert (g.domain, g.server, g.seq) == (0, 1, 100)
        assert str(g) == "0-1-100"
        assert repr(g) == "Gtid(0, 1, 100)"
        assert parse_gtid("0-1-100") == g == Gtid(0, 1, 100)

    def test_format_then_parse_is_identity_up_to_the_largest_values(self):
        for g in [Gtid(0, 0, 0), Gtid(7, 3, 12), Gtid(2**32 - 1, 2**32 - 1, 2**64 - 1)]:
            assert Gtid.parse(str(g)) == g

    def test_equal_gtids_hash_alike_and_pickle(self):
        assert len({Gtid(0, 1, 5), Gtid.parse("0-1-5"), Gtid(0, 2, 5)}) == 2
        assert pickle.loads(pickle.dumps(Gtid(3, 2, 1))) == Gtid(3, 2, 1)
        assert Gtid(0, 1, 5) != "0-1-5"

    def test_order_is_seq_order_within_one_domain(self):
        assert Gtid(0, 1, 5) < Gtid(0, 1, 6)
        assert Gtid(0, 9, 5) < Gtid(0, 1, 6), "the server does not take part in the order"
        assert Gtid(0, 1, 6) >= Gtid(0, 2, 6)
        assert max([Gtid(1, 1, 3), Gtid(1, 2, 9), Gtid(1, 1, 4)]) == Gtid(1, 2, 9)

    def test_gtids_of_different_domains_are_not_ordered(self):
        with pytest.raises(TypeError, match="different domains"):
            Gtid(0, 1, 1) < Gtid(1, 1, 2)  # noqa: B015
        with pytest.raises(TypeError):
            sorted([Gtid(1, 1, 1), Gtid(0, 1, 1)])

    def test_numbers_out_of_range_are_refused(self):
        with pytest.raises(OverflowError):
            Gtid(-1, 1, 1)
        with pytest.raises(OverflowError):
            Gtid(2**32, 1, 1)


class TestParseErrors:
    def test_a_bad_character_is_pointed_at_by_its_column(self):
        with pytest.raises(GtidParseError) as info:
            Gtid.parse("0-1-x")
        e = info.value
        assert isinstance(e, ValueError)
        assert (e.column, e.text) == (5, "0-1-x")
        assert "seq_no" in e.reason
        assert e.pointer == "0-1-x\n    ^"
        assert str(e) == "invalid GTID text \"0-1-x\" at column 5: expected seq_no (a decimal number), found 'x'"

    @pytest.mark.parametrize(
        ("text", "column", "says"),
        [
            ("0-1", 4, "end of text"),
            ("0-1-5 ", 6, "after seq_no"),
            ("0_1-5", 2, "'-'"),
            ("4294967296-1-1", 1, "larger than"),
            ("01-1-1", 1, "leading zero"),
            ("", 1, "end of text"),
        ],
    )
    def test_every_error_names_its_column_and_reason(self, text, column, says):
        with pytest.raises(GtidParseError) as info:
            parse_gtid(text)
        assert info.value.column == column
        assert says in info.value.reason
        assert f"column {column}" in str(info.value)

    def test_a_position_naming_a_domain_twice_is_rejected_at_the_second(self):
        with pytest.raises(GtidParseError, match="appears twice") as info:
            parse_position("0-1-1,0-2-2")
        assert info.value.column == 7

    def test_position_separators_are_checked(self):
        with pytest.raises(GtidParseError) as info:
            GtidPosition("0-1-1;1-1-1")
        assert info.value.column == 6
        with pytest.raises(GtidParseError) as info:
            GtidPosition.parse("0-1-1,")
        assert info.value.column == 7


class TestPosition:
    def test_prints_canonically_sorted_by_domain(self):
        p = GtidPosition.parse("1-2-50, 0-1-100")
        assert str(p) == "0-1-100,1-2-50"
        assert repr(p) == "GtidPosition('0-1-100,1-2-50')"
        assert parse_position(str(p)) == p

    def test_the_empty_text_is_the_empty_position(self):
        assert GtidPosition() == GtidPosition("") == parse_position("")
        assert len(GtidPosition()) == 0 and not GtidPosition()
        assert str(GtidPosition()) == ""

    def test_is_a_collection_of_gtids_keyed_by_domain(self):
        p = GtidPosition("0-1-100,1-2-50")
        assert len(p) == 2
        assert list(p) == [Gtid(0, 1, 100), Gtid(1, 2, 50)]
        assert p.domains() == [0, 1]
        assert p.get(1) == Gtid(1, 2, 50)
        assert p.get(7) is None
        assert p.to_dict() == {0: "0-1-100", 1: "1-2-50"}

    def test_is_an_immutable_hashable_value(self):
        assert len({GtidPosition("0-1-1,1-1-1"), GtidPosition("1-1-1, 0-1-1")}) == 1
        assert pickle.loads(pickle.dumps(GtidPosition("0-1-9"))) == GtidPosition("0-1-9")
        assert GtidPosition("0-1-9") != "0-1-9"

    def test_ahead_of_seed_example(self):
        # Server 4 at (A4, B3) is ahead of server 5 at (A3, B3), and not the other way round.
        s4 = GtidPosition("1-1-4,2-2-3")
        s5 = GtidPosition("1-1-3,2-2-3")
        assert s4.is_ahead_of(s5)
        assert not s5.is_ahead_of(s4)

    def test_ahead_of_needs_every_domain_of_the_other(self):
        assert GtidPosition("0-1-10,1-2-5").is_ahead_of("0-1-9")
        assert not GtidPosition("0-1-10").is_ahead_of("0-1-9,1-2-5")
        assert GtidPosition("0-1-10").is_ahead_of("0-7-10"), "only seq_no counts, not the server"
        assert GtidPosition().is_ahead_of(GtidPosition())
        p = GtidPosition("0-1-3,5-5-5")
        assert p.is_ahead_of(p)

    def test_difference_counts_the_transactions_self_leads_by_per_domain(self):
        d = GtidPosition("0-1-10,1-2-5,2-3-1").difference(GtidPosition("0-1-4,1-2-7"))
        assert d == {0: 6, 2: 1}, "domain 1 trails and is left out; domain 2 is missing there and counts from 0"
        assert GtidPosition("0-1-4").difference("0-1-4") == {}

    def test_join_is_the_least_upper_bound(self):
        a = GtidPosition("0-1-10,1-2-5")
        b = GtidPosition("0-3-7,1-2-9,2-1-1")
        j = a.join(b)
        assert j == GtidPosition("0-1-10,1-2-9,2-1-1")
        assert j.is_ahead_of(a) and j.is_ahead_of(b)
        for upper in [GtidPosition("0-1-10,1-1-9,2-1-1"), GtidPosition("0-1-11,1-2-9,2-1-4,3-1-1")]:
            assert upper.is_ahead_of(a) and upper.is_ahead_of(b)
            assert upper.is_ahead_of(j), "any upper bound of a and b is ahead of their join"
        assert set(j.domains()) == set(a.domains()) | set(b.domains())
        assert a.join(a) == a

    def test_other_positions_may_be_given_as_text_and_bad_text_still_raises(self):
        with pytest.raises(GtidParseError):
            GtidPosition("0-1-1").is_ahead_of("0-1-")
        with pytest.raises(TypeError):
            GtidPosition("0-1-1").join(5)


class TestFormatPosition:
    def test_formats_gtids_or_their_text_canonically(self):
        assert format_position([Gtid(2, 1, 1), "0-1-5", Gtid(1, 3, 3)]) == "0-1-5,1-3-3,2-1-1"
        assert format_position(iter([])) == ""
        assert format_position(GtidPosition("1-1-1,0-2-2")) == "0-2-2,1-1-1"

    def test_two_gtids_of_one_domain_are_not_a_position(self):
        with pytest.raises(ValueError, match="domain 0 appears twice"):
            format_position(["0-1-5", "0-2-6"])

    def test_bad_items_raise(self):
        with pytest.raises(GtidParseError) as info:
            format_position(["0-1-5", "1-1-?"])
        assert info.value.column == 5
        with pytest.raises(TypeError):
            format_position([(0, 1, 5)])
        with pytest.raises(TypeError):
            format_position("0-1-5")
