"""The `ferry` driver's models of ferryd's admin API (drivers/ferry_admin.py) agree with the schema the engine
publishes (engine/crates/ferryd/admin-api.schema.json, generated from its types and checked against them by a test
of ferryd): for each answer the driver reads, every field the model reads that the engine writes has a compatible
type, every field the model requires is one the engine always writes, and a null the engine may write is one the
model takes; for each request the driver sends, every field is one the engine reads, of a type it takes, and every
field the engine requires is always sent. A difference fails naming the route, the field and both sides."""

from __future__ import annotations

import copy
import enum
import json
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from ferry_control.drivers import ferry_admin as admin

SCHEMA_FILE = Path(__file__).resolve().parents[3] / "engine" / "crates" / "ferryd" / "admin-api.schema.json"
#: JSON types as the engine's schema names them, by the Python type that holds them.
JSON_TYPES = {bool: {"boolean"}, int: {"integer"}, float: {"number", "integer"}, str: {"string"}}


class Drift:
    """Compares models with the engine's schema document, collecting each difference in words."""

    def __init__(self, document: dict[str, Any]):
        self.document = document
        self.found: list[str] = []

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = self.document["$defs"][schema["$ref"].removeprefix("#/$defs/")]
        return schema

    def kinds(self, schema: dict[str, Any]) -> tuple[set[str], bool, set[str] | None]:
        """The JSON types a schema admits (null aside), whether null is one, and its strings when it lists them."""
        schema = self.resolve(schema)
        types_: set[str] = set()
        values: set[str] | None = None
        nullable = False
        for key in ("anyOf", "oneOf"):
            for member in schema.get(key, ()):
                inner, null, listed = self.kinds(member)
                types_ |= inner
                nullable |= null
                if listed is not None:
                    values = (values or set()) | listed
        declared = schema.get("type")
        for kind in [declared] if isinstance(declared, str) else declared or ():
            if kind == "null":
                nullable = True
            else:
                types_.add(kind)
        if "enum" in schema or "const" in schema:
            listed = set(schema.get("enum", [])) | ({schema["const"]} if "const" in schema else set())
            nullable |= None in listed
            values = (values or set()) | {v for v in listed if v is not None}
            types_ |= {"string"} if any(isinstance(v, str) for v in listed) else set()
        return types_, nullable, values

    def non_null(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The schema of the value when it is not null (a nullable `anyOf` unwrapped)."""
        schema = self.resolve(schema)
        members = [m for m in schema.get("anyOf", ()) if self.resolve(m).get("type") != "null"]
        return self.resolve(members[0]) if len(members) == 1 and len(schema["anyOf"]) == 2 else schema

    def type_(self, where: str, model_type: Any, schema: dict[str, Any], sends: bool) -> None:
        """`model_type` (what the model reads, or sends when `sends`) against the engine's `schema` at `where`."""
        while get_origin(model_type) is Annotated:
            model_type = get_args(model_type)[0]
        optional = False
        if get_origin(model_type) in (Union, types.UnionType):
            members = [a for a in get_args(model_type) if a is not type(None)]
            optional = len(members) < len(get_args(model_type))
            (model_type,) = members
            while get_origin(model_type) is Annotated:
                model_type = get_args(model_type)[0]
        engine, nullable, values = self.kinds(schema)
        shown = ", ".join(sorted(engine)) + (" or null" if nullable else "")
        if nullable and not optional and not sends:
            self.found.append(f"{where}: the engine may write null ({shown}), the model takes no null")
        origin = get_origin(model_type)
        if isinstance(model_type, type) and issubclass(model_type, BaseModel):
            if "object" not in engine:
                self.found.append(
                    f"{where}: the model reads an object ({model_type.__name__}), the engine writes {shown}"
                )
            else:
                self.model(where, model_type, self.non_null(schema), sends)
        elif origin is list:
            if "array" not in engine:
                self.found.append(f"{where}: the model has a list, the engine {shown}")
            else:
                self.type_(f"{where}[]", get_args(model_type)[0], self.non_null(schema).get("items", {}), sends)
        elif origin is dict:
            inner = self.non_null(schema)
            entries = inner.get("additionalProperties")
            if not isinstance(entries, dict):
                entries = next(iter(inner.get("patternProperties", {}).values()), None)
            if "object" not in engine or entries is None:
                self.found.append(f"{where}: the model has an object of entries, the engine {shown}")
            else:
                self.type_(f"{where}{{}}", get_args(model_type)[1], entries, sends)
        elif origin is Literal or isinstance(model_type, type) and issubclass(model_type, enum.Enum):
            mine = {v for v in get_args(model_type)} if origin is Literal else {m.value for m in model_type}
            if "string" not in engine:
                self.found.append(f"{where}: the model has one of {sorted(mine)}, the engine {shown}")
            elif values is not None:
                unknown = mine - values if sends else values - mine
                if unknown:
                    side = "the engine does not take" if sends else "the model does not know"
                    self.found.append(
                        f"{where}: {side} {sorted(unknown)} (model {sorted(mine)}, engine {sorted(values)})"
                    )
        elif model_type in JSON_TYPES:
            if not engine or not (engine <= JSON_TYPES[model_type] if not sends else engine & JSON_TYPES[model_type]):
                self.found.append(f"{where}: the model has {model_type.__name__}, the engine {shown or 'nothing'}")
        elif model_type not in (Any, object):
            self.found.append(f"{where}: the model's type {model_type!r} is not one this check knows")

    def model(self, where: str, model: type[BaseModel], schema: dict[str, Any], sends: bool) -> None:
        schema = self.resolve(schema)
        properties, required = schema.get("properties", {}), set(schema.get("required", ()))
        for name, field in model.model_fields.items():
            here = f"{where}.{name}" if where else name
            if name not in properties:
                if sends:
                    self.found.append(f"{here}: the model sends it, the engine does not read it")
                elif field.is_required():
                    self.found.append(f"{here}: the model requires it, the engine does not write it")
                elif f"{model.__name__}.{name}" not in admin.NOT_WRITTEN:
                    self.found.append(f"{here}: the model reads it, the engine does not write it")
                continue
            if field.is_required() and not sends and name not in required:
                self.found.append(f"{here}: the model requires it, the engine may leave it out")
            annotation = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
            self.type_(here, annotation, properties[name], sends)
        if sends:
            for name in sorted(required - set(model.model_fields)):
                self.found.append(f"{where}.{name}: the engine requires it, the model never sends it")
            for name in sorted(required & set(model.model_fields)):
                if not model.model_fields[name].is_required():
                    self.found.append(f"{where}.{name}: the engine requires it, the model may leave it out")

    def check(self) -> list[str]:
        routes = self.document["routes"]
        for answer, (route, key) in admin.ANSWERS.items():
            if key not in routes.get(route, {}):
                self.found.append(f"{route}: the driver reads its {key} ({answer.__name__}), the engine has none")
            else:
                where = f"{route} answer" if key == "response" else f"{route} {key}"
                self.model(where, answer, routes[route][key], sends=False)
        for request, route in admin.REQUESTS.items():
            if "request" not in routes.get(route, {}):
                self.found.append(f"{route}: the driver sends {request.__name__}, the engine reads no body there")
            else:
                self.model(f"{route} request", request, routes[route]["request"], sends=True)
        return self.found


def engine_schema() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(SCHEMA_FILE.read_text())
    return document


def test_the_drivers_models_agree_with_the_schema_ferryd_publishes() -> None:
    found = Drift(engine_schema()).check()
    assert not found, "the driver's models and ferryd's admin API differ:\n  " + "\n  ".join(found)


def test_a_renamed_retyped_or_dropped_field_is_named_with_its_route_and_both_sides() -> None:
    document = engine_schema()
    drifted = copy.deepcopy(document)
    status = drifted["$defs"]["Status"]
    status["properties"]["readonly"] = status["properties"].pop("read_only")
    status["required"] = [("readonly" if f == "read_only" else f) for f in status["required"]]
    drifted["$defs"]["ConnectionView"]["properties"]["running"] = {"type": "string"}
    drifted["$defs"]["ReplicaInfo"]["properties"]["sent_position"] = {"type": ["string", "null"]}
    drifted["$defs"]["IoState"] = {"type": "string", "enum": ["stopped", "connected", "paused"]}
    drifted["routes"]["POST /v1/wait-for-position"]["request"]["properties"].pop("timeout_ms")
    found = Drift(drifted).check()
    assert "GET /v1/status answer.read_only: the model requires it, the engine does not write it" in found, found
    assert "GET /v1/replication answer.connections[].running: the model has bool, the engine string" in found, found
    assert (
        "GET /v1/replicas answer.replicas[].sent_position: the engine may write null (string or null), "
        "the model takes no null"
    ) in found, found
    assert any("io_state: the model does not know ['paused']" in f for f in found), found
    assert "POST /v1/wait-for-position request.timeout_ms: the model sends it, the engine does not read it" in found
    assert not Drift(document).check()
