"""How ferryctl prints a rejoin's rewind: the position, the GTIDs cut (or, dry, that would be) per domain, and the
archive kept by the control plane."""

from __future__ import annotations

from ferry_control.ctl.output import Output
from ferry_control.schemas.operation import AnyOperation
from ferry_control.schemas.operation_results import RejoinResult


def render_rewind(out: Output, op: AnyOperation) -> None:
    result = op.result
    if not isinstance(result, RejoinResult) or result.rewind is None:
        return
    rewind = result.rewind
    verb = "would cut" if op.dry_run else "cut"
    out.line(f"rewind to {rewind.to or '(nothing kept)'}:")
    for d in rewind.cut:
        span = d.gtids[0] if len(d.gtids) == 1 else f"{d.gtids[0]} … {d.gtids[-1]}"
        out.line(f"  domain {d.domain}: {verb} {len(d.gtids)} transaction(s), {span}")
    if rewind.archive_id is not None:
        out.line(
            f"archive {rewind.archive_id} ({rewind.archive_name}): "
            f"GET /api/v1/clusters/{op.cluster_id}/archives/{rewind.archive_id}"
        )
    elif rewind.archive_name is not None:
        out.line(f"archive {rewind.archive_name}: left on the server (GET /v1/rewind/archives/{rewind.archive_name})")
