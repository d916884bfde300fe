"""A server's change consumers, read from it now: GET …/servers/{id}/consumers."""

from __future__ import annotations

from fastapi import APIRouter, Path

from ferry_control.api.deps import CurrentToken, DriversDep, SessionDep, SettingsDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.consumer import ServerConsumersRead
from ferry_control.services.consumers import describe

router = APIRouter(prefix="/clusters/{cluster_id}/servers", tags=["servers"], responses=error_responses(401, 404, 422))


@router.get(
    "/{registered_server_id}/consumers",
    response_model=ServerConsumersRead,
    summary="A server's change consumers with their position and lag per domain",
    responses=error_responses(409),
)
async def get_consumers(
    session: SessionDep,
    settings: SettingsDep,
    drivers: DriversDep,
    _: CurrentToken,
    cluster_id: int = Path(ge=1, le=ID_MAX, description="The cluster's id."),
    registered_server_id: int = Path(ge=1, le=ID_MAX, description="The registered server's id."),
) -> ServerConsumersRead:
    """The applications reading the server's committed changes apart from its replicas (ferryd's change consumers,
    docs/protocol.md "Change subscriptions"), each with its position and lag per domain, and the last ones it cut off
    for not reading; `supported` false for a kind that lists binlog readers among its replicas (MariaDB). Read from
    the server now: 409 `server_unreachable` when it does not answer within `poll_timeout_s`."""
    return await describe(session, drivers, cluster_id, registered_server_id, settings.collection.poll_timeout_s)
