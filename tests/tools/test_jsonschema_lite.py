from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import jsonschema
import pytest

from chainreact.tools.base import schema_from_signature
from chainreact.tools.jsonschema_lite import (
    SchemaError,
    SchemaValidator,
    ValidationError,
    is_valid,
    validate,
    validator_for,
)

# Instances of every JSON type and some edge values; each schema below is checked against all of them.
INSTANCES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    1.0,
    1.5,
    2,
    3,
    10,
    100,
    101,
    1e300,
    "",
    "a",
    "abc",
    "hello world",
    "ABC123",
    [],
    [1],
    [1, 2],
    [1, 1],
    [1, "a"],
    ["a", "b", "c"],
    [1, 2, 3, 4, 5],
    [[1], [1]],
    [True, 1],
    [{"a": 1}, {"a": 1.0}],
    {},
    {"a": 1},
    {"a": "x"},
    {"a": 1, "b": 2},
    {"a": True},
    {"orderId": "A1"},
    {"orderId": 7},
    {"orderId": "A1", "amount": 9.5, "reason": "broken"},
    {"orderId": "A1", "amount": "9", "reason": "x"},
    {"orderId": "A1", "extra": 1},
    {"x-1": 1},
    {"kind": "circle", "r": 2},
    {"kind": "square", "side": 3},
    {"kind": "circle", "side": 3},
    {"tags": ["a", "b"]},
    {"tags": ["a", 1]},
    {"node": {"next": {"next": None}}},
    {"node": {"next": {"next": 5}}},
]

# (schema, draft); draft 7 for the tuple form of items, draft 4 for boolean exclusiveMinimum.
SCHEMAS: list[tuple[Any, str]] = [
    ({"type": "string"}, "2020"),
    ({"type": "integer"}, "2020"),
    ({"type": "number"}, "2020"),
    ({"type": "boolean"}, "2020"),
    ({"type": "null"}, "2020"),
    ({"type": "array"}, "2020"),
    ({"type": "object"}, "2020"),
    ({"type": ["string", "null"]}, "2020"),
    ({"enum": [1, "a", None, [1, 2], {"a": 1}]}, "2020"),
    ({"enum": [True]}, "2020"),
    ({"enum": [1]}, "2020"),
    ({"const": 1}, "2020"),
    ({"const": {"a": 1}}, "2020"),
    ({"minimum": 1, "maximum": 100}, "2020"),
    ({"exclusiveMinimum": 1, "exclusiveMaximum": 100}, "2020"),
    ({"minimum": 1, "exclusiveMinimum": True}, "draft4"),
    ({"multipleOf": 2}, "2020"),
    ({"multipleOf": 0.5}, "2020"),
    ({"minLength": 2, "maxLength": 5}, "2020"),
    ({"type": "string", "pattern": "^[A-Z]+[0-9]*$"}, "2020"),
    ({"type": "array", "items": {"type": "integer"}}, "2020"),
    ({"items": {"type": "integer"}, "minItems": 1, "maxItems": 3}, "2020"),
    ({"uniqueItems": True}, "2020"),
    ({"prefixItems": [{"type": "integer"}, {"type": "string"}]}, "2020"),
    ({"prefixItems": [{"type": "integer"}], "items": False}, "2020"),
    ({"items": [{"type": "integer"}, {"type": "integer"}], "additionalItems": False}, "draft7"),
    ({"type": "object", "properties": {"orderId": {"type": "string"}}, "required": ["orderId"]}, "2020"),
    (
        {
            "type": "object",
            "properties": {
                "orderId": {"type": "string"},
                "amount": {"type": "number"},
                "reason": {"type": "string"},
            },
            "required": ["orderId", "amount", "reason"],
        },
        "2020",
    ),
    ({"properties": {"orderId": {"type": "string"}}, "additionalProperties": False}, "2020"),
    ({"properties": {"a": {}}, "additionalProperties": {"type": "integer"}}, "2020"),
    ({"patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False}, "2020"),
    ({"minProperties": 1, "maxProperties": 1}, "2020"),
    ({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 2}]}, "2020"),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, "2020"),
    ({"oneOf": [{"type": "string", "maxLength": 2}, {"type": "string", "minLength": 2}]}, "2020"),
    ({"allOf": [{"type": "integer"}, {"minimum": 3}]}, "2020"),
    ({"not": {"type": "string"}}, "2020"),
    (
        {
            "oneOf": [
                {
                    "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
                    "required": ["kind", "r"],
                },
                {
                    "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
                    "required": ["kind", "side"],
                },
            ]
        },
        "2020",
    ),
    ({"properties": {"tags": {"type": "array", "items": {"type": "string"}}}}, "2020"),
    (
        {
            "$defs": {"node": {"type": ["object", "null"], "properties": {"next": {"$ref": "#/$defs/node"}}}},
            "properties": {"node": {"$ref": "#/$defs/node"}},
        },
        "2020",
    ),
    ({"definitions": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/definitions/s"}}}, "draft7"),
    (True, "2020"),
    (False, "2020"),
    ({}, "2020"),
    ({"type": "object", "properties": {"a": False}}, "2020"),
]


@dataclass
class _Point:
    x: int
    y: int


def _signature_fn(
    name: str, mode: Literal["a", "b"], pts: list[_Point], limit: int | None = None
) -> None: ...


_VALIDATORS = {
    "2020": jsonschema.Draft202012Validator,
    "draft7": jsonschema.Draft7Validator,
    "draft4": jsonschema.Draft4Validator,
}


@pytest.mark.parametrize(("schema", "draft"), SCHEMAS, ids=[str(i) for i in range(len(SCHEMAS))])
def test_same_verdict_as_jsonschema(schema: Any, draft: str) -> None:
    ref = _VALIDATORS[draft](schema)
    mine = SchemaValidator(schema)
    disagreements = []
    for inst in INSTANCES:
        expected = ref.is_valid(inst)
        got = mine.is_valid(inst)
        if expected != got:
            disagreements.append((inst, expected, got, mine.errors(inst)))
        # errors() and is_valid() agree with each other
        assert (mine.errors(inst) == []) == got
    assert disagreements == []


def test_corpus_has_both_verdicts() -> None:
    # guard against a corpus where everything passes (which would prove nothing)
    valid = invalid = 0
    for schema, draft in SCHEMAS:
        ref = _VALIDATORS[draft](schema)
        for inst in INSTANCES:
            if ref.is_valid(inst):
                valid += 1
            else:
                invalid += 1
    assert valid > 300 and invalid > 800


def test_error_messages_have_json_paths() -> None:
    schema = {
        "type": "object",
        "properties": {
            "orderId": {"type": "string"},
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"qty": {"type": "integer"}}},
            },
            "odd key": {"enum": ["a", "b"]},
        },
        "required": ["orderId", "note"],
        "additionalProperties": False,
    }
    errs = validate({"orderId": 5, "items": [{"qty": 1}, {"qty": "2"}], "odd key": "c", "zzz": 1}, schema)
    assert "$.orderId: expected string, got integer" in errs
    assert "$.items[1].qty: expected integer, got string" in errs
    assert "$: missing required property 'note'" in errs
    assert "$: unexpected property 'zzz'" in errs
    assert any(e.startswith("$['odd key']: \"c\" is not one of") for e in errs)
    assert len(errs) == 5


def test_bool_is_not_integer_and_float_integer_is() -> None:
    assert validate(True, {"type": "integer"}) == ["$: expected integer, got boolean"]
    assert validate(2.0, {"type": "integer"}) == []
    assert validate(2.5, {"type": "integer"}) == ["$: expected integer, got number"]


def test_validate_raises_with_summary() -> None:
    v = SchemaValidator({"required": ["a", "b", "c", "d"]})
    with pytest.raises(ValidationError) as ei:
        v.validate({}, "arguments of tool 'x'")
    assert len(ei.value.errors) == 4
    assert "arguments of tool 'x'" in str(ei.value) and "and 1 more" in str(ei.value)


def test_error_limit_is_marked() -> None:
    errs = SchemaValidator({"items": {"type": "string"}}).errors(list(range(50)), limit=5)
    assert len(errs) == 5
    assert errs[-1] == "... and 46 more errors"


def test_bad_schemas() -> None:
    with pytest.raises(SchemaError, match="pattern"):
        SchemaValidator({"pattern": "("})
    with pytest.raises(SchemaError, match="does not resolve"):
        SchemaValidator({"$ref": "#/$defs/missing"})
    with pytest.raises(SchemaError, match="local"):
        SchemaValidator({"$ref": "https://example.invalid/s.json"})
    with pytest.raises(SchemaError, match="unknown type"):
        SchemaValidator({"type": "str"})


def test_validator_for_caches_by_identity() -> None:
    s = {"type": "string"}
    assert validator_for(s) is validator_for(s)
    assert is_valid("x", s) and not is_valid(1, s)


def test_schemas_from_tool_signatures() -> None:
    # The agent loop validates arguments against schemas made by @tool (pydantic may add $defs/$ref).
    schema = schema_from_signature(_signature_fn)
    ok = {"name": "n", "mode": "a", "pts": [{"x": 1, "y": 2}]}
    bad = {"name": "n", "mode": "c", "pts": [{"x": "1", "y": 2}]}
    ref = jsonschema.Draft202012Validator(schema)
    assert ref.is_valid(ok) and is_valid(ok, schema)
    assert not ref.is_valid(bad)
    errs = validate(bad, schema)
    assert any(e.startswith("$.mode:") for e in errs)
    assert any(e.startswith("$.pts[0]") for e in errs)
