"""The MariaDB rebuild's small parts: which data directories it refuses to empty, how it reads a backup's binlog info
file (as 10.11's mariadb-backup writes it), and the copy's pacing to its throttle."""

from __future__ import annotations

import asyncio
import time

import pytest

from ferry_control.drivers.base import CopyThrottle
from ferry_control.drivers.mariadb.copy_pacing import Pacer
from ferry_control.drivers.mariadb.rebuild import datadir_refusal, parse_binlog_info


@pytest.mark.parametrize(
    "datadir", ["/", "/var/lib", "/usr", "/etc", "/data", "relative/dir", "/a/../b", "/var/lib/my sql", "/x/./y"]
)
def test_unsafe_data_directories_are_refused(datadir: str) -> None:
    assert datadir_refusal(datadir) is not None, datadir


@pytest.mark.parametrize("datadir", ["/var/lib/mysql", "/srv/db/mariadb", "/dev/shm/t/s3"])
def test_data_directories(datadir: str) -> None:
    assert datadir_refusal(datadir) is None


def test_binlog_info_as_10_11_writes_it() -> None:
    assert parse_binlog_info("binlog.000001\t325\t\n") == ""
    assert parse_binlog_info("binlog.000003\t1234\t2-1-641,0-1-5,1-1-645\n") == "0-1-5,1-1-645,2-1-641"
    with pytest.raises(ValueError, match="names no GTID position"):
        parse_binlog_info("binlog.000003\t1234\tnot-a-gtid\n")


async def test_the_pacer_holds_the_rate_and_the_pause() -> None:
    throttle = CopyThrottle(mb_s=1.0)
    pacer = Pacer(throttle)
    started = time.monotonic()
    for _ in range(5):
        await pacer.before(100_000)  # 0.5 MB at 1 MB/s: half a second at least
    assert 0.45 <= time.monotonic() - started <= 5.0
    throttle.mb_s = None
    fast = time.monotonic()
    await pacer.before(10_000_000)
    assert time.monotonic() - fast < 0.1
    assert pacer.chunk() == 256 * 1024
    throttle.paused = True
    waiting = asyncio.create_task(pacer.before(1))
    await asyncio.sleep(0.3)  # a pause holds the copy however long it lasts: nothing to wait for but time here
    assert not waiting.done()
    throttle.paused = False
    await asyncio.wait_for(waiting, 5)
