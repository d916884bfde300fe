"""Specification of ferry_engine.decode_transaction on bad input: bytes that are not one whole transaction are refused
with what is wrong and where (a real node's transactions are decoded by the backend's subscription tests)."""

import pytest

from ferry_engine import decode_transaction


def test_a_truncated_event_is_refused_naming_the_file_and_offset():
    with pytest.raises(ValueError) as refused:
        decode_transaction("ferry-bin.000001", 10, b"junk")
    message = str(refused.value)
    assert message.startswith("a bad transaction ending at ferry-bin.000001:10: event at offset 6 of ferry-bin.000001")
    assert "truncated event" in message


def test_an_empty_transaction_and_an_impossible_end_are_refused():
    with pytest.raises(ValueError, match="an empty transaction"):
        decode_transaction("ferry-bin.000001", 4, b"")
    with pytest.raises(ValueError, match="a transaction of 4 bytes cannot end at offset 2"):
        decode_transaction("ferry-bin.000001", 2, b"junk")
