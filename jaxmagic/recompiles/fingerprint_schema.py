"""The fingerprint file's schema (``jaxmagic-fingerprint/2``, JSON Schema draft 7) and its reading:
any file that is not a fingerprint is one ``FingerprintError`` naming the file, the field and what
was expected, never a traceback.

The schema is checked by ``fastjsonschema`` (a maintained validator with no dependencies, which
compiles a schema into plain Python once: ``jsonschema`` takes about a second to import, more than
``diff``'s whole start-up may). What JSON Schema cannot say is checked here: the reader refuses
``NaN`` and infinite figures, numbers of more than 30 digits, fields given twice, and nesting
deeper than the format has; a function's ``compilations`` equals its programs kept plus those
``cut``.

>>> import json
>>> data = {"format": FORMAT, "versions": {}, "functions": {"step": {"defined_at": None, "compilations": 1,
...         "programs": [{"signature": "()", "call_site": None, "causes": [], "facts": None}]}}, "timing": {}}
>>> parse_fingerprint_text(json.dumps(data).replace('"causes": []', '"causes": [{"kind": "guess"}]'), "fp.json")
Traceback (most recent call last):
...
jaxmagic.recompiles.fingerprint_schema.FingerprintError: fp.json: functions.step.programs[0].causes[0].kind: expected one of first_call, shape, ..., unknown, found 'guess'
"""

from __future__ import annotations

import functools
import json
import math
import os
from typing import Any, Callable, cast

from jaxmagic.recompiles.causes import CAUSE_KINDS
from jaxmagic.words.untrusted import shown_name

FORMAT = "jaxmagic-fingerprint/2"
FORMATS_READ = ("jaxmagic-fingerprint/1", FORMAT)  # /1: no ``cut`` (every compilation was kept, at most 1,000)
LARGEST_COUNT = 2**53  # counts and bytes: exact in a float
LARGEST_FIGURE = 1e30  # FLOPs and seconds
LONGEST_NUMBER = 30  # digits


def _count(what: str) -> dict:
    return {"type": "integer", "minimum": 0, "maximum": LARGEST_COUNT, "description": f"{what}: a whole number ≥ 0"}


def _figure(what: str) -> dict:
    return {"type": "number", "minimum": 0, "maximum": LARGEST_FIGURE, "description": f"{what}: a finite number ≥ 0"}


# Shared parts, each validated by one function of the compiled validator (``$ref``), not repeated.
_DEFINITIONS = {
    "counts": {
        "type": "object",
        "additionalProperties": _count("a count"),
        "description": "an object of names to whole numbers",
    },
    "line_counts": {
        "type": "object",
        "additionalProperties": {"$ref": "#/definitions/counts"},
        "description": "an object of source lines to counts",
    },
}


def _counts(what: str) -> dict:
    return {"$ref": "#/definitions/counts"}


def _text(what: str, *, optional: bool = False) -> dict:
    if optional:
        return {"type": ["string", "null"], "description": f"{what}: text or null"}
    return {"type": "string", "description": f"{what}: text"}


def _record(properties: dict, required: tuple[str, ...], what: str) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
        "description": what,
    }


_CAUSE = _record(
    {
        "kind": {"enum": list(CAUSE_KINDS), "description": f"one of {', '.join(CAUSE_KINDS)}"},
        "argument": _text("the argument", optional=True),
        "before": _text("the value before", optional=True),
        "after": _text("the value after", optional=True),
    },
    ("kind",),
    "a cause: an object with kind, argument, before and after",
)
_MEMORY = _counts("bytes")
_FACTS = _record(
    {
        "equations": _counts("equations"),
        "ops": _counts("ops"),
        "fusions": _count("fusions"),
        "flops": _figure("FLOPs"),
        "bytes_accessed": _figure("bytes accessed"),
        "transcendentals": _figure("transcendentals"),
        "memory": _MEMORY,
        "peak_bytes": _count("peak bytes"),
        "collectives": _counts("collectives"),
        "lines": {"$ref": "#/definitions/line_counts"},
        "line_collectives": {"$ref": "#/definitions/line_counts"},
        "line_text": {"type": "object", "additionalProperties": _text("a line's code"), "description": "line_text"},
    },
    ("ops", "fusions", "flops", "bytes_accessed", "transcendentals", "memory", "collectives", "lines"),
    "the program's facts: an object, or null",
) | {"type": ["object", "null"]}
_PROGRAM = _record(
    {
        "signature": _text("the signature"),
        "call_site": _text("the call site", optional=True),
        "causes": {
            "type": "array",
            "items": {"$ref": "#/definitions/cause"},
            "description": "causes: a list of causes",
        },
        "facts": {"$ref": "#/definitions/facts"},
    },
    ("signature",),
    "a program: an object with signature, call_site, causes and facts",
)
_FUNCTION = _record(
    {
        "defined_at": _text("where it was defined", optional=True),
        "compilations": _count("compilations"),
        "cut": _count("compilations not kept"),
        "programs": {"type": "array", "items": {"$ref": "#/definitions/program"}, "description": "programs: a list"},
    },
    ("programs",),
    "a function: an object with defined_at, compilations and programs",
)
_DEFINITIONS.update(cause=_CAUSE, facts=_FACTS, program=_PROGRAM, function=_FUNCTION)
SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "jaxmagic compile fingerprint",
    "definitions": _DEFINITIONS,
    **_record(
        {
            "format": {"enum": list(FORMATS_READ), "description": f"the format: {' or '.join(FORMATS_READ)}"},
            "versions": {
                "type": "object",
                "additionalProperties": _text("a version"),
                "description": "versions: names to text",
            },
            "functions": {
                "type": "object",
                "additionalProperties": {"$ref": "#/definitions/function"},
                "description": "functions: an object",
            },
            "timing": {
                "type": "object",
                "additionalProperties": {
                    "type": "array",
                    "items": _figure("seconds"),
                    "description": "a function's compile times: a list of seconds",
                },
                "description": "timing: an object",
            },
        },
        ("format", "functions"),
        "a fingerprint: an object with format, versions, functions and timing",
    ),
}


class FingerprintError(ValueError):
    """A file that is not a fingerprint: one line naming the file, the field and what was expected."""


class _Refused:
    """A number JSON reading would turn into NaN, an infinity or a number too long to be a count:
    kept as what it was, so that the schema refuses it at its field."""

    def __init__(self, shown: str):
        self.shown = shown

    def __repr__(self) -> str:
        return self.shown


def _constant(name: str) -> _Refused:
    return _Refused(name)


def _float(text: str) -> float | _Refused:
    number = float(text)
    return number if math.isfinite(number) else _Refused(f"{text[:20]} (not finite)")


def _int(text: str) -> int | _Refused:
    if len(text.lstrip("-")) > LONGEST_NUMBER:
        return _Refused(f"a number of {len(text.lstrip('-')):,} digits")
    return int(text)


def _object(pairs: list[tuple[str, Any]]) -> dict:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise FingerprintError(f"the field {shown_name(twice)!r} is given twice in one object")
    return found


@functools.lru_cache(maxsize=1)
def _validator() -> Callable[[Any], Any]:
    import fastjsonschema

    # fastjsonschema's older releases infer no callable type for what compile returns: say it
    return cast(Callable[[Any], Any], fastjsonschema.compile(SCHEMA))


def parse_fingerprint_text(text: str, name: str) -> dict:
    """The JSON of a fingerprint, read and checked against ``SCHEMA``; ``FingerprintError`` (one
    line, starting with ``name``) for anything else."""
    try:
        data = json.loads(text, parse_constant=_constant, parse_float=_float, parse_int=_int, object_pairs_hook=_object)
    except FingerprintError as exc:
        raise FingerprintError(f"{name}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise FingerprintError(f"{name}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise FingerprintError(f"{name}: nested deeper than a fingerprint is (not a jaxmagic fingerprint)") from None
    return check_fingerprint_json(data, name)


def check_fingerprint_json(data: Any, name: str) -> dict:
    """``data`` if it is a fingerprint's JSON (the schema, then what it cannot say); else one
    ``FingerprintError`` naming ``name``, the field and what was expected."""
    import fastjsonschema

    if not isinstance(data, dict) or data.get("format") not in FORMATS_READ:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise FingerprintError(
            f"{name}: not a jaxmagic fingerprint (expected format {' or '.join(FORMATS_READ)}, found "
            f"{shown_name(repr(found), 80)}); write one with `python -m jaxmagic watch --fingerprint FILE`"
        )
    try:
        _validator()(data)
    except fastjsonschema.JsonSchemaValueException as exc:
        raise FingerprintError(f"{name}: {_field(exc.name)}: {_expected(exc)}") from None
    except RecursionError:
        raise FingerprintError(f"{name}: nested deeper than a fingerprint is") from None
    for function, entry in data["functions"].items():
        kept, cut = len(entry["programs"]), entry.get("cut", 0)
        if entry.get("compilations", kept + cut) != kept + cut:
            raise FingerprintError(
                f"{name}: functions.{shown_name(function, 80)}.compilations: expected {kept + cut:,} "
                f"(its programs kept plus those cut), found {entry['compilations']:,}"
            )
    return data


def _field(path: str | None) -> str:
    return shown_name((path or "").removeprefix("data").lstrip(".") or "the file", 160)


def _expected(exc) -> str:
    definition = exc.definition if isinstance(exc.definition, dict) else {}
    rule = exc.rule
    if rule == "required":
        missing = [f for f in definition.get("required", ()) if isinstance(exc.value, dict) and f not in exc.value]
        return f"missing {', '.join(missing) or 'a field'} ({definition.get('description', 'an object')})"
    if rule == "additionalProperties" and isinstance(exc.value, dict):
        unknown = sorted(set(exc.value) - set(definition.get("properties", {})))
        shown = ", ".join(repr(shown_name(k, 60)) for k in unknown[:3])
        return f"unknown field {shown} ({definition.get('description', 'an object')})"
    what = definition.get("description", "another value")
    if rule == "enum":
        return f"expected {_short_enum(definition)}, found {_value(exc.value)}"
    return f"expected {what}, found {_value(exc.value)}"


def _short_enum(definition: dict) -> str:
    choices = [str(c) for c in definition.get("enum", ())]
    listed = ", ".join(choices) if len(choices) <= 4 else f"{', '.join(choices[:2])}, ..., {choices[-1]}"
    return f"one of {listed}"


def _value(value: Any) -> str:
    if isinstance(value, _Refused):
        return value.shown
    if isinstance(value, (dict, list)):
        return f"{'an object' if isinstance(value, dict) else 'a list'} of {len(value):,} entries"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return shown_name(repr(value), 60)


def read_fingerprint_json(path: str | os.PathLike) -> dict:
    """The checked JSON of the fingerprint at ``path`` (see ``parse_fingerprint_text``); a file
    that cannot be read, or is not UTF-8, is a ``FingerprintError`` too."""
    name = shown_name(os.fspath(path), 200)
    try:
        with open(path, "rb") as source:
            raw = source.read()
    except OSError as exc:
        raise FingerprintError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FingerprintError(f"{name}: not UTF-8 text (byte {exc.start:,}): not a jaxmagic fingerprint") from None
    return parse_fingerprint_text(text, name)
