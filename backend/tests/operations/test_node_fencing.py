"""ferryd keeps the fencing tokens the control plane sends (drivers/fencing.py, docs/node-api.md): against a real
three-node ferryd cluster, an instance's change sent with its token after another holder raised the fence with the
next one (a reconcile's takeover: raise_fences.py) is refused `stale_fence` and changes nothing — across a restart of
the node too —, its holder is told (as the runner's operation context stops its work: a lost lock), and the failure
is typed `lock_lost`; the new holder's changes, a later operation's, and changes sent outside any operation are
accepted."""

from __future__ import annotations

import pytest

from ferry_control.core.config import Settings
from ferry_control.drivers.base import IoState
from ferry_control.drivers.factory import DriverFactory
from ferry_control.drivers.fencing import Acting, StaleFence, acting_for, scope_of
from ferry_control.models import ServerKind
from ferry_control.services.orchestrator.failures import failure_of
from tests.ferryd_cluster import FerrydCluster

CLUSTER = 41


@pytest.fixture
async def drivers(settings: Settings):  # type: ignore[no-untyped-def]
    factory = DriverFactory(settings)
    yield factory
    await factory.aclose()


async def test_a_stale_instances_move_is_refused_after_a_takeover(
    drivers: DriverFactory, ferryd: FerrydCluster, settings: Settings
) -> None:
    ferryd.converge()
    master, replica1, replica2 = (drivers.for_address(ServerKind.ferry, n.admin) for n in ferryd.nodes)
    told: list[str] = []
    stale = Acting(scope_of(CLUSTER), lambda: 1, told.append)
    with acting_for(stale):  # the first instance's operation: its changes land while it holds the cluster
        assert await master.set_read_only(True) is True
    with acting_for(Acting(scope_of(CLUSTER), lambda: 2)):  # a reconcile took the cluster over: the next token
        assert [await d.raise_fence() for d in (master, replica1, replica2)] == [True, True, True]
    with acting_for(stale), pytest.raises(StaleFence) as refused:  # the woken instance's pending call
        await replica2.stop_replication("main")
    assert refused.value.code == "stale_fence" and "seen token 2" in refused.value.message, refused.value
    assert told and "stale" in told[0], told
    assert failure_of(refused.value, None, None).kind == "lock_lost"
    assert (await replica2.replica_connections())[0].io_state is not IoState.stopped, "the stale stop changed nothing"
    with acting_for(stale), pytest.raises(StaleFence):  # on a node the reconcile had nothing to change on, too
        await master.set_read_only(False)
    assert (await master.status()).read_only is True
    ferryd.replica2.stop()
    ferryd.replica2.start(same_ports=True)  # the node keeps the token it saw (fences.json)
    restarted = DriverFactory(settings)  # new connections (the old keep-alive ones died with the process)
    try:
        with acting_for(stale), pytest.raises(StaleFence):
            await restarted.for_address(ServerKind.ferry, ferryd.replica2.admin).stop_replication("main")
    finally:
        await restarted.aclose()
    with acting_for(Acting(scope_of(CLUSTER), lambda: 3)):  # a later operation
        await replica1.stop_replication("main")
    await replica1.start_replication("main")  # an operator's call, outside any operation: no token, not fenced
    with acting_for(Acting(scope_of(CLUSTER + 1), lambda: 1)):  # another cluster's tokens never compare
        assert await master.set_read_only(False) is False
