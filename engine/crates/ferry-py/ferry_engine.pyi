"""Type stub of ferry_engine: Python bindings for Ferry's engine core (GTID math, the binary protocol's constants, and
the check and decoding of a change consumer's transactions)."""

from collections.abc import Iterable, Iterator
from typing import TypedDict, final

__all__ = [
    "ERROR_CODES",
    "OPCODES",
    "PROTOCOL_VERSION",
    "ROW_OP_KINDS",
    "VALUE_TYPES",
    "DecodedRowChange",
    "DecodedTransaction",
    "Gtid",
    "GtidParseError",
    "GtidPosition",
    "decode_transaction",
    "format_position",
    "parse_gtid",
    "parse_position",
    "__version__",
]

__version__: str

class GtidParseError(ValueError):
    """GTID or position text was rejected; the message is the core's, naming the column."""

    text: str
    """The whole text that was parsed."""
    column: int
    """1-based column of the offending character (one past the end for a truncated text)."""
    reason: str
    """What was expected at that column."""
    pointer: str
    """The text, a newline, and a caret under the column."""

@final
class Gtid:
    """One global transaction id, `domain-server-seq`.

    Equal and hashed on all three numbers. `<`, `<=`, `>`, `>=` compare seq_no within one domain and raise
    TypeError for GTIDs of different domains (sort mixed domains with `key=lambda g: (g.domain, g.seq)`).
    """

    def __new__(cls, domain: int, server: int, seq: int) -> Gtid: ...
    @staticmethod
    def parse(text: str) -> Gtid: ...
    @property
    def domain(self) -> int: ...
    @property
    def server(self) -> int: ...
    @property
    def seq(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    def __lt__(self, other: Gtid, /) -> bool: ...
    def __le__(self, other: Gtid, /) -> bool: ...
    def __gt__(self, other: Gtid, /) -> bool: ...
    def __ge__(self, other: Gtid, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class GtidPosition:
    """A replication position: at most one GTID per domain. Immutable, hashable, printed sorted by domain.

    Methods taking another position accept a GtidPosition or its text.
    """

    def __new__(cls, text: str = "") -> GtidPosition: ...
    @staticmethod
    def parse(text: str) -> GtidPosition: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Gtid]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def get(self, domain: int) -> Gtid | None: ...
    def domains(self) -> list[int]: ...
    def is_ahead_of(self, other: GtidPosition | str) -> bool:
        """True when, for every domain `other` has, this position's seq_no is at least as high."""
    def difference(self, other: GtidPosition | str) -> dict[int, int]:
        """Transactions this position leads `other` by, per domain it leads in."""
    def join(self, other: GtidPosition | str) -> GtidPosition:
        """The least position ahead of both."""
    def to_dict(self) -> dict[int, str]: ...

def parse_gtid(text: str) -> Gtid: ...
def parse_position(text: str) -> GtidPosition: ...
def format_position(gtids: Iterable[Gtid | str]) -> str:
    """Canonical position text; two GTIDs of one domain raise ValueError."""

# The node's binary protocol (docs/protocol.md), as ferry-core defines it.

PROTOCOL_VERSION: int
"""The protocol version this build speaks (every frame carries it)."""
OPCODES: dict[str, int]
"""Opcodes by name: requests (`HELLO`, `TRANSACT`, `GET`, `WAIT_POSITION`, `PING`, …) and responses (`R_HELLO`,
`R_COMMITTED`, `R_ROW`, `R_REACHED`, `R_PONG`, …, `R_ERROR` for a refusal)."""
ERROR_CODES: dict[int, str]
"""The names of the error codes an `R_ERROR` frame carries (`7: "READ_ONLY"`, …)."""
ROW_OP_KINDS: dict[str, int]
"""Tags of a Transact request's operations: `PUT`, `DELETE`, `INCREMENT`."""
VALUE_TYPES: dict[str, int]
"""Tags of a row field's value: `INT`, `TEXT`."""

# A change consumer's transactions (docs/protocol.md, "Change subscriptions").

class DecodedRowChange(TypedDict):
    table: str
    key: str
    before: dict[str, int | str] | None
    """The row before the change (None: it did not exist, or the master logs no before images)."""
    after: dict[str, int | str] | None
    """The row after the change (None: deleted)."""

class DecodedTransaction(TypedDict):
    gtid: str
    domain: int
    server: int
    seq: int
    commit_id: int
    """The master's commit group."""
    commit_ts_us: int
    """Commit time on the server that first committed it, microseconds since the Unix epoch."""
    flags: int
    changes: list[DecodedRowChange]

def decode_transaction(file: str, end_offset: int, events: bytes) -> DecodedTransaction:
    """Checks (every event's checksum, a GTID event first, row events, a commit event last) and decodes the events of
    one `R_REPL_TXN` frame, which ends at `end_offset` of the node's binlog `file`; ValueError says what is wrong."""
