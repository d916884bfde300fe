"""Every operation kind is declared once (services/orchestrator/kinds.py): each type of the schemas' union has one
declaration, and every registry — the runner's executors, the reconcile's repairs, the API's start routes and enum
of types, the schemas' parameters and results — is derived from the declarations, with no list of kinds by hand."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

from fastapi.routing import APIRoute

from ferry_control.api.operations import router
from ferry_control.core.config import Settings
from ferry_control.main import create_app
from ferry_control.schemas.operation import OPERATION_TYPES, PARAMS, RESULTS, VARIANTS
from ferry_control.services.orchestrator import register_executors
from ferry_control.services.orchestrator.kinds import BY_NAME, KINDS, repair_of
from ferry_control.services.orchestrator.runner import OperationRunner

BACKEND = Path(__file__).resolve().parents[2] / "ferry_control"
FRONTEND = Path(__file__).resolve().parents[3] / "frontend" / "src"
#: Kinds nothing treats apart from the others: their name written anywhere but their read model's `type` is a list of
#: kinds by hand.
PLAIN = ("start_replication", "stop_replication", "skip_transactions")


def test_every_type_has_exactly_one_declaration() -> None:
    names = [k.name for k in KINDS]
    assert len(names) == len(set(names)), names
    assert set(names) == set(OPERATION_TYPES)
    for kind in KINDS:
        assert VARIANTS[kind.name] is kind.read
        assert PARAMS[kind.name] is kind.params
        assert RESULTS[kind.name] is kind.result


def test_the_runners_executors_are_the_declared_ones() -> None:
    runner = OperationRunner(cast(Any, None), cast(Any, None), cast(Any, None), Settings(), cast(Any, None))
    register_executors(runner)
    assert runner.executors == {k.name: k.executor for k in KINDS}


def test_the_reconciles_repairs_are_the_declared_ones() -> None:
    for kind in KINDS:
        assert repair_of(kind.name) is kind.repair
    assert repair_of("no_such_kind") is None
    assert {k.name for k in KINDS if k.repair is not None} == {
        "switchover",
        "failover",
        "drill",
        "rebuild",
        "consistency_check",
    }


def test_the_apis_routes_and_enum_are_the_declared_ones() -> None:
    # Besides the kinds' starts, one POST acts on an operation of any kind: its cancellation.
    starts = {
        r.name: r for r in router.routes
        if isinstance(r, APIRoute) and "POST" in r.methods and r.name != "cancel_operation"
    }  # fmt: skip
    assert set(starts) == {k.name for k in KINDS if k.route is not None}
    prefix = "/clusters/{cluster_id}/operations/"
    for name, route in starts.items():
        declared = BY_NAME[name].route
        assert declared is not None
        assert route.path == prefix + name.replace("_", "-")
        assert route.summary == declared.summary
        assert route.description == (declared.description or "")
    schema = create_app(Settings(environment="development")).openapi()
    for name, route in starts.items():
        declared = BY_NAME[name].route
        assert declared is not None
        post = schema["paths"]["/api/v1" + route.path]["post"]
        body = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert body.rsplit("/", 1)[1] == declared.request.__name__, name
    listing = schema["paths"]["/api/v1/clusters/{cluster_id}/operations"]["get"]["parameters"]
    (types,) = [p for p in listing if p["name"] == "type"]
    assert types["schema"]["anyOf"][0]["items"]["enum"] == list(OPERATION_TYPES)


def test_no_list_of_kinds_is_written_by_hand() -> None:
    quoted = re.compile("[\"'](" + "|".join(PLAIN) + ")[\"']")
    found = []
    for path in [*BACKEND.rglob("*.py"), *FRONTEND.rglob("*.ts"), *FRONTEND.rglob("*.tsx")]:
        if path.name == "schema.d.ts" or ".test." in path.name:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            # Its read model's `type`, or one operation told apart by its type (not a list of them).
            if quoted.search(line) and not re.search(r"type: Literal\[|=== [\"']", line):
                found.append(f"{path}:{number}: {line.strip()}")
    assert found == [], "kinds named by hand outside their declaration:\n" + "\n".join(found)
