"""Splitting a long list of ids for `IN (…)`: each database bounds the parameters of one statement (SQLite 32,766,
PostgreSQL 65,535), so a query over thousands of clusters is made in chunks."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

#: Ids in one `IN (…)`.
CHUNK_IDS_MAX = 500

T = TypeVar("T")


def chunked(items: Sequence[T], size: int = CHUNK_IDS_MAX) -> Iterator[Sequence[T]]:
    """`items` in consecutive slices of at most `size`."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
