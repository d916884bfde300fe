"""Shapes shared by every endpoint: the error body, GTID position text validated by core/gtid.py, pages."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from ferry_control.core.gtid import GtidParseError, GtidPosition

#: Largest id of a row (ids are 32-bit integers in the database); larger ones are refused with 422, not looked up.
ID_MAX = 2_147_483_647


class ErrorDetail(BaseModel):
    code: str = Field(description="A stable, machine-readable code.", examples=["not_found"])
    message: str = Field(description="What was wrong, for a person.", examples=["cluster 42 does not exist"])
    details: Any = Field(None, description="Per-field problems for validation errors (loc, message, type, ctx).")


class ErrorBody(BaseModel):
    """Every error answer has this body."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"error": {"code": "not_found", "message": "cluster 42 does not exist"}}]}
    )

    error: ErrorDetail


def _position(text: str) -> str:
    try:
        return str(GtidPosition.parse(text))
    except GtidParseError as e:
        raise PydanticCustomError(
            "gtid_position",
            "malformed GTID position at column {column}: {reason}",
            {"column": e.column, "reason": e.reason, "text": e.text},
        ) from None


GtidPositionText = Annotated[
    str,
    AfterValidator(_position),
    Field(
        description="A GTID position: `domain-server-seq` per domain, comma-separated; returned sorted by domain.",
        examples=["0-1-100,1-2-50"],
    ),
]


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses=` entries for the given error statuses, all with the ErrorBody model."""
    descriptions = {
        400: "Bad request",
        401: "No or invalid API token",
        403: "The token's role may not do this",
        404: "An id in the path does not exist",
        409: "Conflicts with the current state",
        422: "Validation error (the body, query or path is malformed)",
        429: "Too many requests from this token (see Retry-After)",
        502: "A server could not be reached or failed",
        503: "Not available now (a role check: the server does not hold the role)",
    }
    return {s: {"model": ErrorBody, "description": descriptions.get(s, "Error")} for s in statuses}
