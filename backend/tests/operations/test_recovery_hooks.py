"""Webhooks at every stage of an automatic recovery: `detected` once the monitor confirms the lost master (beside
the recovery), the failover's own pre and post hooks, and `not_recovered` when the automatic failover ends without
a new master — here because every replica's promotion rule is must_not."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tests.conftest import LiveFactory
from tests.ferryd_cluster import WAIT_S, FerrydCluster
from tests.helpers import WebhookReceiver, register, serve

POLL_INTERVAL_S = 0.2
DETECTION_POLLS = 2


async def test_a_lost_master_calls_detected_then_pre_post_and_not_recovered_when_no_replica_may_replace_it(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    receiver = WebhookReceiver()
    async with serve(receiver) as url:
        hooks = {"failure_detection_webhooks": [url], "recovery_failed_webhooks": [url],
                 "pre_operation_webhooks": [url], "post_operation_webhooks": [url]}  # fmt: skip
        async with live_app(collector_enabled=True, poll_interval_s=POLL_INTERVAL_S, poll_timeout_s=1.0,
                            failover_detection_polls=DETECTION_POLLS, unreachable_after_failures=DETECTION_POLLS,
                            **hooks) as live:  # fmt: skip
            cluster_id, ids = await register(live.client, ferryd, auto_failover=True)
            for name in ("replica1", "replica2"):
                response = await live.client.patch(f"/api/v1/clusters/{cluster_id}/servers/{ids[name]}",
                                                   json={"promotion_rule": "must_not"})  # fmt: skip
                assert response.status_code == 200, response.text
            ferryd.master.kill()
            async with asyncio.timeout(WAIT_S):
                while not any(c.get("stage") == "not_recovered" for c in receiver.calls):
                    receiver.received.clear()
                    await receiver.received.wait()
        stages = [c["stage"] for c in receiver.calls]
        assert stages[0] == "detected", stages
        detected = receiver.calls[0]
        assert (detected["cluster_id"], detected["registered_server_id"], detected["server"]) == (
            cluster_id,
            ids["master"],
            "master",
        )
        [failed] = [c for c in receiver.calls if c["stage"] == "not_recovered"]
        assert failed["cluster_id"] == cluster_id and failed["registered_server_id"] == ids["master"]
        assert failed["operation_id"] is not None and "must_not" in failed["reason"], failed
        assert "post" in stages, "the failover's own hooks ran too"
