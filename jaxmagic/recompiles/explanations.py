"""JAX's own cache-miss explanation (``jax_explain_cache_misses``), read into ``Cause`` objects.

JAX's text differs between releases and compares only with the "closest" earlier key that a
severity order picks, so it serves as a fallback: when jaxmagic saw no earlier call of the function
to compare with itself. Whatever is not understood becomes an ``unknown`` cause that keeps the text.
Input paths such as ``[0][1]`` are turned into parameter names when the call's signature is known.

>>> raw = '''TRACING CACHE MISS at /tmp/t.py:17 (<module>):
...   for f defined at /tmp/t.py:11
...   all previously seen cache keys differ. For the closest previous key:
...   different input types:
...   * at x, now f32[4] and before f32[3]'''
>>> [(c.kind, c.argument, c.before, c.after) for c in parse_explanation(raw)]
[('shape', 'x', 'f32[3]', 'f32[4]')]
>>> explained_function(raw)
'f'
"""

from __future__ import annotations

import re

from jaxmagic.recompiles.causes import Cause, shape_change, shape_change_text

TRACING_MISS = "TRACING CACHE MISS"
# Messages JAX logs at WARNING only because jax_explain_cache_misses is on.
EXPLANATION_PREFIXES = (
    TRACING_MISS,
    "PERSISTENT COMPILATION CACHE MISS",
    "Not writing persistent cache entry",
)

_FOR_FUNCTION = re.compile(r"^\s*for (?P<name>.+?)(?: defined at .*)?$", re.M)
_NEVER_SEEN = re.compile(r"never seen function:\s*\n\s*(?P<name>\S+) id=", re.M)
_TYPE_LINE = re.compile(r"^\s*\* at (?P<name>.+?), now (?P<now>.+?) and before (?P<before>.+?)\s*$", re.M)
_PATH_LINE = re.compile(
    r"^\s*\* at input path (?P<path>\S*), now (?P<now>.+?) and before (?P<before>.+?)(?:, so (?P<why>.*))?$", re.M
)
_CONTEXT_LINE = re.compile(r"^\s*\* (?P<name>\S+) differs: now (?P<now>.+?) and before (?P<before>.+?)\s*$", re.M)
_TYPE = re.compile(r"^(?P<dtype>[a-z]+[0-9]*)\[(?P<shape>[^\]]*)\](?P<rest>.*)$")
_STATIC = re.compile(r"Static\(val=(?P<val>.*)\)\s*$")
_PATH_KEY = re.compile(r"\[(\d+|'[^']*'|\"[^\"]*\")\]|\.(\w+)")


def is_explanation(message: str) -> bool:
    """True for a log message JAX writes only because ``jax_explain_cache_misses`` is on."""
    return message.startswith(EXPLANATION_PREFIXES)


def explained_function(raw: str) -> str | None:
    """The name of the function a tracing-cache-miss explanation is about."""
    match = _NEVER_SEEN.search(raw) or _FOR_FUNCTION.search(raw)
    return match.group("name").strip() if match else None


def explains(raw: str, *names: str) -> bool:
    r"""Whether the explanation ``raw`` is about one of ``names`` (JAX's or jaxmagic's name of the
    compiling function; ``grad(loss)`` matches ``loss``), or names no function at all.

    >>> raw = "TRACING CACHE MISS at x.py:3 because:\n  never seen function:\n    <lambda> id=1 defined at x.py:2"
    >>> explains(raw, "loss", "jit(grad(loss))"), explains(raw, "<lambda>")
    (False, True)
    """
    explained = explained_function(raw)
    if not explained:
        return True
    return any(name and (explained == name or explained in name or name in explained) for name in names)


def parse_explanation(raw: str, signature=None) -> list[Cause]:
    """The causes JAX's explanation gives; ``signature`` (a ``CallSignature``) names input paths.

    Never empty: text that is not understood gives one ``unknown`` cause.
    """
    name = explained_function(raw) or "the function"
    if "never seen function" in raw:
        if "re-defined repeatedly" in raw:
            return [
                Cause("redefined_function", argument=name, reason="redefined_repeatedly"),
            ]
        return [Cause("first_call", argument=None, reason="first_explained", facts=(("function", name),))]
    causes: list[Cause] = []
    if "Tracing context doesn't match" in raw or "different tracing context" in raw:  # JAX 0.10 / 0.8
        for m in _CONTEXT_LINE.finditer(raw):
            causes.append(Cause("config", argument=m["name"], before=m["before"], after=m["now"]))
        if not causes:
            causes.append(Cause("config", reason="context_changed"))
    elif "different input pytree" in raw:
        for m in _PATH_LINE.finditer(raw):
            causes.append(_pytree_cause(m["path"], m["now"], m["before"], m["why"], signature))
    elif "different input types" in raw:
        for m in _TYPE_LINE.finditer(raw):
            causes.extend(_type_causes(m["name"], m["now"], m["before"]))
    return causes or [Cause("unknown", reason="explained_by_jax")]


def _type_causes(name: str, now: str, before: str) -> list[Cause]:
    new, old = _TYPE.match(now.strip()), _TYPE.match(before.strip())
    if not (new and old):
        return [
            Cause(
                "unknown",
                argument=name,
                before=before,
                after=now,
                reason="type_changed",
            )
        ]
    causes = []
    new_shape = [d.split("@")[0] for d in new["shape"].split(",") if d]
    old_shape = [d.split("@")[0] for d in old["shape"].split(",") if d]
    new_text, old_text = f"{new['dtype']}[{','.join(new_shape)}]", f"{old['dtype']}[{','.join(old_shape)}]"
    if new_shape != old_shape:
        axes, ranks = shape_change([_dimension(d) for d in old_shape], [_dimension(d) for d in new_shape])
        causes.append(
            Cause(
                "shape",
                argument=name,
                before=old_text,
                after=new_text,
                detail=shape_change_text(axes, ranks),
                axes=axes,
                ranks=ranks,
            )
        )
    if new["dtype"] != old["dtype"]:
        causes.append(
            Cause(
                "dtype",
                argument=name,
                before=old_text,
                after=new_text,
                reason="dtype_changed",
                facts=(("was", old["dtype"]), ("now", new["dtype"])),
            )
        )
    new_weak, old_weak = "weak_type=True" in new["rest"], "weak_type=True" in old["rest"]
    if new_weak != old_weak:
        causes.append(
            Cause(
                "weak_type",
                argument=name,
                before=("weak " if old_weak else "") + old_text,
                after=("weak " if new_weak else "") + new_text,
            )
        )
    if not causes and (new["rest"] != old["rest"] or now != before):
        causes.append(Cause("sharding", argument=name, before=before.strip(), after=now.strip()))
    return causes


def _dimension(text: str):
    """A dimension as JAX's text gives it: a number, or a symbolic name kept as text."""
    return int(text) if text.strip().isdigit() else text.strip()


def _pytree_cause(path: str, now: str, before: str, why: str | None, signature) -> Cause:
    argument = argument_for_path(path, signature)
    new_static, old_static = _STATIC.search(now), _STATIC.search(before)
    if new_static and old_static:
        return Cause("static_value", argument=argument, before=old_static["val"], after=new_static["val"])
    return Cause(
        "pytree_structure", argument=argument, before=_plain(before), after=_plain(now), detail=why, reason="now_before"
    )


def _plain(text: str) -> str:
    return re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", text).strip()


def argument_for_path(path: str, signature=None) -> str:
    """The parameter an input path of JAX's explanation points at.

    JAX's paths index the pair ``(args, kwargs)``: ``[0][1]`` is the second positional argument,
    ``[1]['n']`` the keyword argument ``n``, and what follows is a path inside that argument.

    >>> argument_for_path("[1]['n']"), argument_for_path("[0][1]['w']"), argument_for_path("[0]")
    ('n', "args[1]['w']", 'the positional arguments')
    """
    keys = [(m.group(1), m.group(2)) for m in _PATH_KEY.finditer(path)]
    if not keys:
        return "the arguments"
    group = keys[0][0]
    if len(keys) == 1:
        return "the positional arguments" if group == "0" else "the keyword arguments"
    first, rest = keys[1][0], keys[2:]
    tail = "".join(f"[{k}]" if k is not None else f".{attr}" for k, attr in rest)
    if group == "1" and first is not None:
        return first.strip("'\"") + tail
    if first is not None and first.isdigit():
        index = int(first)
        names = signature.positional_names() if signature is not None else []
        return (names[index] if index < len(names) else f"args[{index}]") + tail
    return path
