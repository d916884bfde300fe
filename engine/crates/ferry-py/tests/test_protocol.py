"""Specification of ferry_engine's protocol constants: they are ferry-core's, as docs/protocol.md documents them."""

from ferry_engine import ERROR_CODES, OPCODES, PROTOCOL_VERSION, ROW_OP_KINDS, VALUE_TYPES


def test_the_protocol_version_is_the_one_nodes_speak():
    assert PROTOCOL_VERSION == 1


def test_client_requests_and_their_answers_have_their_documented_opcodes():
    assert {k: OPCODES[k] for k in ("HELLO", "TRANSACT", "GET", "WAIT_POSITION", "PING")} == {
        "HELLO": 0x01, "TRANSACT": 0x10, "GET": 0x11, "WAIT_POSITION": 0x12, "PING": 0x14,
    }  # fmt: skip
    assert {k: OPCODES[k] for k in ("R_HELLO", "R_COMMITTED", "R_ROW", "R_REACHED", "R_PONG", "R_ERROR")} == {
        "R_HELLO": 0x81, "R_COMMITTED": 0x90, "R_ROW": 0x91, "R_REACHED": 0x92, "R_PONG": 0x94, "R_ERROR": 0xFF,
    }  # fmt: skip
    assert len(set(OPCODES.values())) == len(OPCODES), "no two names share an opcode"


def test_error_codes_are_numbered_from_one_without_gaps_and_named_as_documented():
    assert sorted(ERROR_CODES) == list(range(1, len(ERROR_CODES) + 1))
    assert (ERROR_CODES[7], ERROR_CODES[10], ERROR_CODES[17], ERROR_CODES[19]) == (
        "READ_ONLY", "STRICT_MODE", "POSITION_PURGED", "DIVERGED",
    )  # fmt: skip


def test_row_operations_and_field_values_have_their_tags():
    assert ROW_OP_KINDS == {"PUT": 1, "DELETE": 2, "INCREMENT": 3}
    assert VALUE_TYPES == {"INT": 1, "TEXT": 2}
