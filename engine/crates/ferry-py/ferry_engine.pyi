"""Type stub of ferry_engine: Python bindings for Ferry's engine core (GTID math and binlog reading)."""

from collections.abc import Iterable, Iterator
from os import PathLike
from typing import Generic, Literal, TypedDict, TypeVar, final, overload

__all__ = [
    "BinlogCorruptError",
    "BinlogReader",
    "Gtid",
    "GtidParseError",
    "GtidPosition",
    "format_position",
    "parse_gtid",
    "parse_position",
    "read_binlog",
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

class BinlogCorruptError(ValueError):
    """A binlog file holds bytes that are not a valid event where one should be."""

    file: str
    """Name of the binlog file (without its directory)."""
    offset: int
    """Byte offset of the damaged event in that file (0 for bad magic bytes)."""
    reason: str
    """The core's reason: checksum mismatch, truncation, malformed body, misplaced event…"""

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

# _Row, _RowChange, _TransactionDict and _EventDict exist for annotations only, not at run time
# (import them under `if typing.TYPE_CHECKING:`).

_Row = dict[str, int | str]

class _RowChange(TypedDict):
    table: str
    key: str
    before: _Row | None
    after: _Row | None

class _TransactionDict(TypedDict):
    file: str
    offset: int
    end_offset: int
    gtid: str
    domain: int
    server_id: int
    seq_no: int
    commit_id: int
    flags: int
    commit_ts_us: int
    changes: list[_RowChange]

class _EventDict(TypedDict, total=False):
    """An event: `file`, `offset`, `len` and `type` always; the rest depends on `type`.

    format_description: binlog_version, server_id, created_at_us, server_version;
    gtid_list: gtids; gtid: the transaction header keys; rows: changes (list); commit: changes (count);
    checkpoint: checkpoint_file, checkpoint_offset; rotate: next_file.
    """

    file: str
    offset: int
    len: int
    type: Literal["format_description", "gtid_list", "gtid", "rows", "commit", "checkpoint", "rotate"]
    binlog_version: int
    server_id: int
    created_at_us: int
    server_version: str
    gtids: list[str]
    gtid: str
    domain: int
    seq_no: int
    commit_id: int
    flags: int
    commit_ts_us: int
    changes: list[_RowChange] | int
    checkpoint_file: str
    checkpoint_offset: int
    next_file: str

_T = TypeVar("_T", covariant=True)

@final
class BinlogReader(Generic[_T]):
    """The lazy iterator `read_binlog` returns; it ends after the last file or after raising."""

    @property
    def files(self) -> list[str]: ...
    def __iter__(self) -> BinlogReader[_T]: ...
    def __next__(self) -> _T: ...

@overload
def read_binlog(
    path: str | PathLike[str],
    *,
    domains: int | Iterable[int] | None = None,
    transactions: Literal[False] = False,
) -> BinlogReader[_EventDict]: ...
@overload
def read_binlog(
    path: str | PathLike[str],
    *,
    domains: int | Iterable[int] | None = None,
    transactions: Literal[True],
) -> BinlogReader[_TransactionDict]: ...
