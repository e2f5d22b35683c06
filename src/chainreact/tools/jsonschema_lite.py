"""A small, fast JSON Schema validator for tool arguments and tool outputs.

`jsonschema` is only a dev dependency, and tool schemas use a small part of the standard, so this module
compiles a schema once into nested closures and reports errors with a JSON path:
`$.orderId: expected string, got integer`.

Supported keywords: type, enum, const, properties, required, additionalProperties (false or a schema),
patternProperties, items (a schema, or a list = tuple form), prefixItems, minItems, maxItems, uniqueItems,
minimum, maximum, exclusiveMinimum, exclusiveMaximum (number form, and the draft-4 boolean form),
multipleOf, minLength, maxLength, pattern, minProperties, maxProperties, anyOf, oneOf, allOf, not,
local $ref (`#/$defs/...`, `#/definitions/...`, any JSON pointer into the same document) and boolean
schemas. Other keywords (format, if/then/else, dependencies, ...) are ignored, as validators do for
unknown keywords. JSON semantics: true is not 1, 1.0 is an integer. `pattern` and `patternProperties`
are ECMA-262 regular expressions run on RE2 (linear time; ecma_regex.py); one RE2 cannot run is a
SchemaError when the schema is compiled.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ChainreactError, ConfigError

__all__ = ["SchemaError", "SchemaValidator", "ValidationError", "compile_schema", "is_valid", "validate",
           "validator_for"]


class SchemaError(ConfigError):
    """The schema itself is unusable (a bad regex, an unresolvable $ref, a keyword of the wrong type)."""


class ValidationError(ChainreactError):
    """An instance does not match its schema. `errors` lists `path: message` strings."""

    def __init__(self, errors: list[str], what: str = "value"):
        self.errors = errors
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        super().__init__(f"{what} does not match its schema: " + "; ".join(errors[:3]) + more)


# A compiled node: check(value, path_stack, errors). Appends "path: message" strings to errors.
_Check = Callable[[Any, list[Any], list[str]], None]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _fmt_path(stack: list[Any]) -> str:
    out = ["$"]
    for seg in stack:
        if isinstance(seg, int):
            out.append(f"[{seg}]")
        elif _IDENT.match(seg):
            out.append("." + seg)
        else:
            out.append("[" + repr(seg) + "]")
    return "".join(out)


def type_name(v: Any) -> str:
    """The JSON type of a Python value, as used in messages."""
    if v is None:
        return "null"
    if v is True or v is False:
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list | tuple):
        return "array"
    if isinstance(v, Mapping):
        return "object"
    return type(v).__name__


def _is_type(v: Any, t: str) -> bool:
    if t == "string":
        return isinstance(v, str)
    if t == "object":
        return isinstance(v, Mapping)
    if t == "array":
        return isinstance(v, list | tuple)
    if t == "integer":
        if isinstance(v, bool):
            return False
        return isinstance(v, int) or (isinstance(v, float) and v.is_integer())
    if t == "number":
        return isinstance(v, int | float) and not isinstance(v, bool)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "null":
        return v is None
    return True  # unknown type names constrain nothing (checked at compile time)


_TYPES = {"string", "object", "array", "integer", "number", "boolean", "null"}


def _json_equal(a: Any, b: Any) -> bool:
    """Equality with JSON semantics: booleans are not numbers, 1 == 1.0, containers compare deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _short(v: Any) -> str:
    import orjson

    try:
        s = orjson.dumps(v).decode()
    except TypeError:
        s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


class _Compiler:
    def __init__(self, root: Any):
        self.root = root
        self.refs: dict[str, _Check] = {}

    def ref(self, ref: str) -> _Check:
        if ref in self.refs:
            return self.refs[ref]
        if not ref.startswith("#"):
            raise SchemaError(f"$ref {ref!r}: only local references (#/...) are supported")
        holder: list[_Check] = []

        # Registered before compiling so recursive schemas terminate; resolved on first use.
        def check(v: Any, p: list[Any], e: list[str]) -> None:
            holder[0](v, p, e)

        self.refs[ref] = check
        target: Any = self.root
        for raw in ref[1:].lstrip("/").split("/") if ref not in ("#", "#/") else []:
            seg = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(target, Mapping) and seg in target:
                target = target[seg]
            elif isinstance(target, list) and seg.isdigit() and int(seg) < len(target):
                target = target[int(seg)]
            else:
                raise SchemaError(f"$ref {ref!r} does not resolve inside the schema")
        holder.append(self.compile(target))
        return check

    def compile(self, schema: Any) -> _Check:
        if schema is True or schema == {}:
            return _accept
        if schema is False:
            return _reject
        if not isinstance(schema, Mapping):
            raise SchemaError(f"a schema must be an object or a boolean, got {type_name(schema)}")
        checks: list[_Check] = []

        if "$ref" in schema:
            checks.append(self.ref(str(schema["$ref"])))

        t = schema.get("type")
        if t is not None:
            types = [t] if isinstance(t, str) else list(t)
            for name in types:
                if name not in _TYPES:
                    raise SchemaError(f"unknown type {name!r} in schema")
            expected = " or ".join(types)
            if len(types) == 1:
                only = types[0]

                def check_type(v: Any, p: list[Any], e: list[str]) -> None:
                    if not _is_type(v, only):
                        e.append(f"{_fmt_path(p)}: expected {expected}, got {type_name(v)}")
            else:

                def check_type(v: Any, p: list[Any], e: list[str]) -> None:
                    if not any(_is_type(v, n) for n in types):
                        e.append(f"{_fmt_path(p)}: expected {expected}, got {type_name(v)}")

            checks.append(check_type)

        if "enum" in schema:
            options = list(schema["enum"])
            shown = ", ".join(_short(o) for o in options[:10]) + (", ..." if len(options) > 10 else "")

            def check_enum(v: Any, p: list[Any], e: list[str]) -> None:
                if not any(_json_equal(v, o) for o in options):
                    e.append(f"{_fmt_path(p)}: {_short(v)} is not one of [{shown}]")

            checks.append(check_enum)

        if "const" in schema:
            const = schema["const"]

            def check_const(v: Any, p: list[Any], e: list[str]) -> None:
                if not _json_equal(v, const):
                    e.append(f"{_fmt_path(p)}: expected {_short(const)}, got {_short(v)}")

            checks.append(check_const)

        self._numeric(schema, checks)
        self._string(schema, checks)
        self._object(schema, checks)
        self._array(schema, checks)
        self._combinators(schema, checks)

        if not checks:
            return _accept
        if len(checks) == 1:
            return checks[0]
        tup = tuple(checks)

        def check_all(v: Any, p: list[Any], e: list[str]) -> None:
            for c in tup:
                c(v, p, e)

        return check_all

    def _numeric(self, schema: Mapping[str, Any], checks: list[_Check]) -> None:
        lo, hi = schema.get("minimum"), schema.get("maximum")
        xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if xlo is True:  # draft 4: a boolean modifying minimum
            xlo, lo = lo, None
        elif xlo is False:
            xlo = None
        if xhi is True:
            xhi, hi = hi, None
        elif xhi is False:
            xhi = None
        mult = schema.get("multipleOf")
        if lo is None and hi is None and xlo is None and xhi is None and mult is None:
            return

        def check_num(v: Any, p: list[Any], e: list[str]) -> None:
            if isinstance(v, bool) or not isinstance(v, int | float):
                return
            if lo is not None and v < lo:
                e.append(f"{_fmt_path(p)}: {_short(v)} is less than the minimum {_short(lo)}")
            if hi is not None and v > hi:
                e.append(f"{_fmt_path(p)}: {_short(v)} is greater than the maximum {_short(hi)}")
            if xlo is not None and v <= xlo:
                e.append(f"{_fmt_path(p)}: {_short(v)} is not greater than {_short(xlo)}")
            if xhi is not None and v >= xhi:
                e.append(f"{_fmt_path(p)}: {_short(v)} is not less than {_short(xhi)}")
            if mult is not None:
                if isinstance(mult, int) and isinstance(v, int):
                    bad = v % mult != 0
                else:
                    q = v / mult
                    bad = not (math.isfinite(q) and abs(q - round(q)) < 1e-9)
                if bad:
                    e.append(f"{_fmt_path(p)}: {_short(v)} is not a multiple of {_short(mult)}")

        checks.append(check_num)

    def _string(self, schema: Mapping[str, Any], checks: list[_Check]) -> None:
        lo, hi, pat = schema.get("minLength"), schema.get("maxLength"), schema.get("pattern")
        if lo is None and hi is None and pat is None:
            return
        rx = _pattern(pat, "pattern") if pat is not None else None

        def check_str(v: Any, p: list[Any], e: list[str]) -> None:
            if not isinstance(v, str):
                return
            if lo is not None and len(v) < lo:
                e.append(f"{_fmt_path(p)}: string shorter than {lo} characters")
            if hi is not None and len(v) > hi:
                e.append(f"{_fmt_path(p)}: string longer than {hi} characters")
            if rx is not None and not _matches(rx, v):
                e.append(f"{_fmt_path(p)}: {_short(v)} does not match pattern {pat!r}")

        checks.append(check_str)

    def _object(self, schema: Mapping[str, Any], checks: list[_Check]) -> None:
        props_schema = schema.get("properties") or {}
        required = list(schema.get("required") or [])
        addl = schema.get("additionalProperties", True)
        pattern_props = schema.get("patternProperties") or {}
        min_p, max_p = schema.get("minProperties"), schema.get("maxProperties")
        if not (props_schema or required or addl is not True or pattern_props or min_p is not None
                or max_p is not None):
            return
        props = {k: self.compile(s) for k, s in props_schema.items()}
        props_items = tuple((k, c) for k, c in props.items() if c is not _accept)
        patterns = tuple((_pattern(k, "patternProperties"), self.compile(s))
                         for k, s in pattern_props.items())
        addl_check = None if addl is True or addl == {} else self.compile(addl)

        def check_obj(v: Any, p: list[Any], e: list[str]) -> None:
            if not isinstance(v, Mapping):
                return
            for k in required:
                if k not in v:
                    e.append(f"{_fmt_path(p)}: missing required property {k!r}")
            for k, c in props_items:
                if k in v:
                    p.append(k)
                    c(v[k], p, e)
                    p.pop()
            if patterns or addl_check is not None:
                for k, val in v.items():
                    matched = k in props
                    for rx, c in patterns:
                        if _matches(rx, k):
                            matched = True
                            p.append(k)
                            c(val, p, e)
                            p.pop()
                    if not matched and addl_check is not None:
                        if addl_check is _reject:
                            e.append(f"{_fmt_path(p)}: unexpected property {k!r}")
                        else:
                            p.append(k)
                            addl_check(val, p, e)
                            p.pop()
            if min_p is not None and len(v) < min_p:
                e.append(f"{_fmt_path(p)}: fewer than {min_p} properties")
            if max_p is not None and len(v) > max_p:
                e.append(f"{_fmt_path(p)}: more than {max_p} properties")

        checks.append(check_obj)

    def _array(self, schema: Mapping[str, Any], checks: list[_Check]) -> None:
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        if isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, schema.get("additionalItems")
        min_i, max_i, unique = schema.get("minItems"), schema.get("maxItems"), schema.get("uniqueItems")
        if items is None and prefix is None and min_i is None and max_i is None and not unique:
            return
        item_check = None if items is None or items is True or items == {} else self.compile(items)
        prefix_checks = tuple(self.compile(s) for s in prefix) if prefix else ()

        def check_arr(v: Any, p: list[Any], e: list[str]) -> None:
            if not isinstance(v, list | tuple):
                return
            n = len(v)
            for i in range(min(n, len(prefix_checks))):
                p.append(i)
                prefix_checks[i](v[i], p, e)
                p.pop()
            if item_check is not None:
                if item_check is _reject and n > len(prefix_checks):
                    e.append(f"{_fmt_path(p)}: no more than {len(prefix_checks)} items allowed")
                else:
                    for i in range(len(prefix_checks), n):
                        p.append(i)
                        item_check(v[i], p, e)
                        p.pop()
            if min_i is not None and n < min_i:
                e.append(f"{_fmt_path(p)}: fewer than {min_i} items")
            if max_i is not None and n > max_i:
                e.append(f"{_fmt_path(p)}: more than {max_i} items")
            if unique:
                for i in range(n):
                    for j in range(i + 1, n):
                        if _json_equal(v[i], v[j]):
                            e.append(f"{_fmt_path(p)}: items {i} and {j} are equal")
                            return

        checks.append(check_arr)

    def _combinators(self, schema: Mapping[str, Any], checks: list[_Check]) -> None:
        if "allOf" in schema:
            checks.extend(self.compile(s) for s in schema["allOf"])
        if "anyOf" in schema:
            any_of = tuple(self.compile(s) for s in schema["anyOf"])

            def check_any(v: Any, p: list[Any], e: list[str]) -> None:
                first: list[str] | None = None
                for c in any_of:
                    sub: list[str] = []
                    c(v, p, sub)
                    if not sub:
                        return
                    if first is None:
                        first = sub
                why = f" (first option: {first[0]})" if first else ""
                e.append(f"{_fmt_path(p)}: does not match any option of anyOf{why}")

            checks.append(check_any)
        if "oneOf" in schema:
            one_of = tuple(self.compile(s) for s in schema["oneOf"])

            def check_one(v: Any, p: list[Any], e: list[str]) -> None:
                matched = 0
                first: list[str] | None = None
                for c in one_of:
                    sub: list[str] = []
                    c(v, p, sub)
                    if not sub:
                        matched += 1
                    elif first is None:
                        first = sub
                if matched == 0:
                    why = f" (first option: {first[0]})" if first else ""
                    e.append(f"{_fmt_path(p)}: does not match any option of oneOf{why}")
                elif matched > 1:
                    e.append(f"{_fmt_path(p)}: matches {matched} options of oneOf, expected exactly one")

            checks.append(check_one)
        if "not" in schema:
            neg = self.compile(schema["not"])

            def check_not(v: Any, p: list[Any], e: list[str]) -> None:
                sub: list[str] = []
                neg(v, p, sub)
                if not sub:
                    e.append(f"{_fmt_path(p)}: must not match the 'not' schema")

            checks.append(check_not)


def _pattern(pattern: Any, keyword: str) -> Any:
    """A schema's regular expression on RE2 (ecma_regex.py): no pattern can make validation backtrack."""
    from .builtin.linear_re import PatternError
    from .ecma_regex import compile_ecma

    if not isinstance(pattern, str):
        raise SchemaError(f"{keyword}: expected a string, got {type_name(pattern)}")
    try:
        return compile_ecma(pattern)
    except PatternError as exc:
        raise SchemaError(f"{keyword}: {exc}") from None


def _matches(rx: Any, text: str) -> bool:
    try:
        return rx.search(text) is not None
    except UnicodeEncodeError:  # a lone surrogate: not text RE2 (UTF-8) can read, so no match
        return False


def _accept(v: Any, p: list[Any], e: list[str]) -> None:
    return None


def _reject(v: Any, p: list[Any], e: list[str]) -> None:
    e.append(f"{_fmt_path(p)}: no value is allowed here")


class SchemaValidator:
    """A compiled schema. Compile once (e.g. per tool), validate many times."""

    __slots__ = ("_check", "schema")

    def __init__(self, schema: Any):
        self.schema = schema
        self._check = _Compiler(schema).compile(schema)

    def errors(self, instance: Any, limit: int = 20) -> list[str]:
        """All violations as `path: message` strings (at most `limit`, the last one saying so)."""
        errs: list[str] = []
        self._check(instance, [], errs)
        if len(errs) > limit:
            errs = [*errs[: limit - 1], f"... and {len(errs) - limit + 1} more errors"]
        return errs

    def is_valid(self, instance: Any) -> bool:
        errs: list[str] = []
        self._check(instance, [], errs)
        return not errs

    def validate(self, instance: Any, what: str = "value") -> None:
        """Raise ValidationError listing the violations, if any."""
        errs = self.errors(instance)
        if errs:
            raise ValidationError(errs, what)


def compile_schema(schema: Any) -> SchemaValidator:
    return SchemaValidator(schema)


_cache: dict[int, tuple[Any, SchemaValidator]] = {}


def validator_for(schema: Any) -> SchemaValidator:
    """A cached validator for a schema object (keyed by identity; the schema is kept alive with it, so
    callers should pass long-lived schemas such as a tool's `parameters`)."""
    hit = _cache.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    v = SchemaValidator(schema)
    if len(_cache) >= 1024:
        _cache.clear()
    _cache[id(schema)] = (schema, v)
    return v


def validate(instance: Any, schema: Any) -> list[str]:
    """The violations of `instance` against `schema` (empty when valid)."""
    return validator_for(schema).errors(instance)


def is_valid(instance: Any, schema: Any) -> bool:
    return validator_for(schema).is_valid(instance)
