"""GET /clusters/{id}/topology: the replication graph."""

from __future__ import annotations

from fastapi import APIRouter, Path

from ferry_control.api.deps import CurrentToken, SessionDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.topology import TopologyGraph
from ferry_control.services.topology import TopologyService

router = APIRouter(tags=["topology"], responses=error_responses(401, 404, 422))


@router.get("/clusters/{cluster_id}/topology", response_model=TopologyGraph, summary="Topology graph")
async def get_topology(
    session: SessionDep, _: CurrentToken, cluster_id: int = Path(ge=1, le=ID_MAX, description="The cluster's id.")
) -> TopologyGraph:
    return await TopologyService(session).graph(cluster_id)
