"""The control plane's server ids under their API names (`registered_server_id`, `…_registered_server_id`): a request
body with an old name is refused naming the new one, and an operation's parameters and result stored under the old
names are read under the new ones; the OpenAPI document has no `server_id` left that carries the internal id."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ferry_control.core.config import Settings
from ferry_control.main import create_app
from ferry_control.schemas.operation import RepointRequest, SwitchoverParams, SwitchoverRequest
from ferry_control.schemas.operation_results import FailoverResult, SwitchoverResult
from ferry_control.schemas.registered_ids import new_name, renamed_field_message, stored_id


def test_the_new_name_of_each_old_one() -> None:
    assert new_name("server_id") == "registered_server_id"
    assert new_name("candidate_server_id") == "candidate_registered_server_id"
    assert new_name("old_master_server_id") == "old_master_registered_server_id"
    for not_old in (
        "registered_server_id",
        "candidate_registered_server_id",
        "reported_server_id",
        "origin_server_id",
        "name",
        "xserver_id",
    ):
        assert new_name(not_old) is None, not_old
    assert renamed_field_message("name") is None
    assert "send master_registered_server_id" in (renamed_field_message("master_server_id") or "")


def test_a_request_with_an_old_name_is_refused() -> None:
    with pytest.raises(ValidationError) as refused:
        SwitchoverRequest.model_validate({"candidate_server_id": 2})
    assert [(e["loc"], e["type"]) for e in refused.value.errors()] == [(("candidate_server_id",), "extra_forbidden")]
    with pytest.raises(ValidationError):
        RepointRequest.model_validate({"server_id": 3, "master_registered_server_id": 2})
    assert SwitchoverRequest.model_validate({"candidate_registered_server_id": 2}).candidate_registered_server_id == 2


def test_rows_stored_under_the_old_names_read_under_the_new_ones() -> None:
    params = SwitchoverParams.model_validate({"candidate_server_id": 2, "expected_master_server_id": 1})
    assert (params.candidate_registered_server_id, params.expected_master_registered_server_id) == (2, 1)
    assert params.stored() == {"candidate_registered_server_id": 2, "expected_master_registered_server_id": 1}
    result = SwitchoverResult.model_validate({
        "old_master_server_id": 1, "new_master_server_id": 2,
        "switch": {"old_master_server_id": 1, "new_master_server_id": 2, "connection": "main",
                   "old_master_was_read_only": False, "candidate_was_read_only": True,
                   "others": [{"server_id": 3, "connection": "main"}, [4, "main"]]},
        "parallel_apply_raised": [{"server_id": 3, "connection": "main", "previous": {}, "raised": {}}],
    })  # fmt: skip
    assert (result.old_master_registered_server_id, result.new_master_registered_server_id) == (1, 2)
    assert result.switch is not None
    assert [o.registered_server_id for o in result.switch.others] == [3, 4]
    assert result.switch.old_master_registered_server_id == 1
    assert result.stored()["switch"]["others"][0] == {"registered_server_id": 3, "connection": "main"}
    assert "old_master_server_id" not in result.stored()
    # A row with both names (never written) keeps the new one.
    both = FailoverResult.model_validate({"new_master_server_id": 5, "new_master_registered_server_id": 6})
    assert both.new_master_registered_server_id == 6
    assert FailoverResult.model_validate({"role_moves_to_server_id": 7}).role_moves_to_registered_server_id == 7


def test_a_stored_value_is_read_under_either_name() -> None:
    assert stored_id({"candidate_server_id": 2}, "candidate_registered_server_id") == 2
    assert (
        stored_id({"candidate_registered_server_id": 3, "candidate_server_id": 2}, "candidate_registered_server_id")
        == 3
    )
    assert stored_id({}, "candidate_registered_server_id") is None


def test_the_api_names_no_internal_id_server_id() -> None:
    """Every field and parameter of the OpenAPI document that ends in `server_id` without being a
    `…registered_server_id` is one that carries a server's own server_id (MariaDB's, the number in its GTIDs); the
    server paths name their parameter `registered_server_id`."""
    schema = create_app(Settings(environment="development")).openapi()
    own = {
        (name, field)
        for name, component in schema["components"]["schemas"].items()
        for field in component.get("properties") or {}
        if field.endswith("server_id") and not field.endswith("registered_server_id")
    }
    assert own == {
        ("AlignedTransaction", "origin_server_id"), ("ErrantDomainRead", "server_id"),
        ("FailedPollServer", "server_id"), ("NeverReceived", "origin_server_id"), ("PositionRow", "server_id"),
        ("ServerRead", "reported_server_id"), ("ServerTransaction", "origin_server_id"),
        ("TopologyNode", "reported_server_id"),
    }  # fmt: skip
    parameters = {
        (parameter["in"], parameter["name"])
        for operations in schema["paths"].values()
        for operation in operations.values()
        for parameter in operation.get("parameters", [])
        if parameter["name"].endswith("server_id")
    }
    assert parameters == {
        ("path", "registered_server_id"),
        ("query", "registered_server_id"),
        ("query", "replica_registered_server_id"),
    }
    assert "/api/v1/clusters/{cluster_id}/servers/{registered_server_id}/maintenance" in schema["paths"]
