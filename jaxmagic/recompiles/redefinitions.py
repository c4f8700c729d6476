"""A function compiled again because it is a new object (JAX caches compilations per function
object): what differs between the two, in the user's terms, as a ``Cause``. What a function is
made of comes from ``closures`` (its code, captured values, defaults, what a partial binds), the
user's own name for it and the line that built it from ``handles``.

>>> from jaxmagic.recompiles.signatures import describe_call
>>> def make_step(lr):
...     def step(w):
...         return w * lr
...     return step
>>> first, second = make_step(0.1), make_step(0.01)
>>> cause = redefined(describe_call(first, (1.0,), {}), describe_call(second, (1.0,), {}))
>>> cause.reason, cause.before, cause.after
('captured_changed', 'lr=0.1', 'lr=0.01')
"""

from __future__ import annotations

from jaxmagic.recompiles.causes import Cause
from jaxmagic.recompiles.closures import what_differs
from jaxmagic.recompiles.signatures import CallSignature, display_name
from jaxmagic.tracing.sources import CellNamer, is_library_file, no_cells, source_line


def redefined(before: CallSignature, after: CallSignature, cell_namer: CellNamer = no_cells) -> Cause:
    """A new function object: what differs between the two, in the user's terms (``closures``):
    the values a library's builder was given again (``handles``), a partial's bound values, a
    closure's captured values and defaults, its code; or that it is alike in all of them."""
    if after.runs_body and after.handle is None:  # lax.scan, while_loop, cond or a callback the user ran eagerly
        return Cause(
            "redefined_function", argument=after.function, reason="eager_body", facts=(("primitive", after.runs_body),)
        )
    changes = what_differs(before.made, after.made)
    library = library_of(after)
    if library:
        return _built_by_library(before, after, changes, library, cell_namer)
    inner_before = before.inner_ref() if before.inner_ref is not None else None
    inner_after = after.inner_ref() if after.inner_ref is not None else None
    if after.wrapper and inner_after is not None and inner_before is inner_after:
        inner = display_name(inner_after)
        bound = [c for c in changes if c.role == "bound"]
        if after.wrapper == "functools.partial" and bound:
            return Cause(
                "redefined_function",
                argument=after.function,
                before=", ".join(f"{c.name}={c.before}" for c in bound),
                after=", ".join(f"{c.name}={c.after}" for c in bound),
                reason="partial_rebound",
                facts=(("inner", inner), ("bound", tuple(c.name for c in bound))),
            )
        if not changes:
            return Cause(
                "redefined_function",
                argument=after.function,
                before=after.wrapper,
                after=after.wrapper,
                reason="wrapper_rebuilt",
                facts=(("wrapper", after.wrapper), ("inner", inner)),
            )
    return _function_made_again(before, after, changes, cell_namer)


def _function_made_again(before: CallSignature, after: CallSignature, changes, cell_namer: CellNamer) -> Cause:
    """The user's own function made again: with other code, other captured values or defaults,
    or alike in every one of them."""
    name = after.function
    code_changed = any(c.role == "code" and c.path == () for c in changes)
    values = [c for c in changes if c.role in ("captured", "default", "bound", "self", "global")]
    if values and not code_changed:
        return _captured_built_again(before, after, values, cell_namer) or _captured_changed(after, values, cell_namer)
    old_site, new_site = before.defined_at, after.defined_at
    same_place = old_site is not None and old_site == new_site
    was, now = _site_text(old_site, cell_namer), _site_text(new_site, cell_namer)
    factory = enclosing_function(after)
    if same_place and not code_changed and factory and not after.defined_by_caller:
        return Cause(
            "redefined_function",
            argument=name,
            before=was,
            after=now,
            reason="made_again_alike",
            facts=(("factory", factory), ("defined_at", _defined_at(after, cell_namer))),
        )
    if code_changed:
        reason = "code_changed"
    else:
        reason = "redefined_function" if same_place or new_site is None else "defined_elsewhere"
    alike = not code_changed and not values and bool(after.made)
    return Cause(
        "redefined_function",
        argument=name,
        before=was,
        after=now,
        reason=reason,
        facts=(("defined_at", _defined_at(after, cell_namer)), ("alike", alike)),
    )


def _defined_at(signature: CallSignature, cell_namer: CellNamer):
    site = signature.defined_at
    return None if site is None else source_line(site[0], site[1], signature.function, cell_namer)


def _captured_changed(after: CallSignature, values, cell_namer: CellNamer) -> Cause:
    """A closure made again over other values (or with other defaults, binding others)."""
    factory = enclosing_function(after)
    shown = values[:_SHOWN]
    return Cause(
        "redefined_function",
        argument=after.function,
        before=", ".join(f"{c.path[0]}={c.before}" for c in shown),
        after=", ".join(f"{c.path[0]}={c.after}" for c in shown),
        reason="captured_changed",
        facts=(
            ("factory", factory),
            ("returned", factory is not None and not after.defined_by_caller),
            ("changes", tuple((c.path[0], c.name, c.role, c.before, c.after) for c in shown)),
            ("defined_at", _defined_at(after, cell_namer)),
        ),
    )


_SHOWN = 3  # values said of one function made again


def _captured_built_again(before: CallSignature, after: CallSignature, values, cell_namer: CellNamer) -> Cause | None:
    """A closure over an object its maker built again (an optimizer built in ``train``): said by
    the line that built it and what that line read, where the user's code shows them."""
    old, new = dict(before.captured), dict(after.captured)
    for change in values:
        captured = change.path[0]
        if captured not in new:
            continue
        handle = new[captured]
        read = handle_reads_changed(old.get(captured), handle)
        held = (change.name, change.before, change.after)
        return Cause(
            "redefined_function",
            argument=after.function,
            before=", ".join(f"{n}={b}" for n, b, _ in read) or change.before,
            after=", ".join(f"{n}={a}" for n, _, a in read) or change.after,
            reason="captured_built_again",
            facts=(
                ("factory", enclosing_function(after)),
                ("returned", not after.defined_by_caller),
                ("captured", captured),
                ("built", handle.built),
                ("built_at", handle.built_line(cell_namer)),
                ("reads", tuple(read)),
                ("held", (held,) if not read and change.role != "code" else ()),
                ("fix", handle.fix),
                ("root", captured),
            ),
        )
    return None


def _built_by_library(before: CallSignature, after: CallSignature, changes, library: str, cell_namer) -> Cause:
    """A function a library built (an optimizer's ``update``, a sampler's ``step``), built again:
    named as the user's code names it, with the line of theirs that built it and the values that
    line read, or else the values the function holds that changed."""
    handle = after.handle
    name = handle.name if handle is not None else after.function
    read = handle_reads_changed(before.handle, handle)
    held = [c for c in changes if c.role != "code" and not c.name.startswith("_")]
    return Cause(
        "redefined_function",
        argument=name,
        before=", ".join(f"{n}={b}" for n, b, _ in read) or (held[0].before if held else None),
        after=", ".join(f"{n}={a}" for n, _, a in read) or (held[0].after if held else None),
        reason="built_again_by_library",
        facts=(
            ("library", library),
            ("built", handle.built if handle is not None else ""),
            ("built_at", handle.built_line(cell_namer) if handle is not None else None),
            ("reads", tuple(read)),
            ("held", tuple(("", c.before, c.after) for c in held[:_SHOWN])),
            ("kind", handle.root_kind if handle is not None else ""),
            ("fix", handle.fix if handle is not None else None),
            ("root", handle.built_name if handle is not None and handle.built_name else name.split(".", 1)[0]),
        ),
    )


def handle_reads_changed(before, after) -> list[tuple[str, str, str]]:
    """The plain names the line that built a function read, whose values differ between two
    handles: ``(name, before, after)``.

    >>> from jaxmagic.recompiles.handles import Handle
    >>> from jaxmagic.recompiles.leaves import StaticValue
    >>> old, new = (Handle("opt", reads=(("lr", StaticValue.of(v)),)) for v in (0.1, 0.01))
    >>> handle_reads_changed(old, new)
    [('lr', '0.1', '0.01')]
    """
    if before is None or after is None or before.built_at != after.built_at:
        return []
    old = dict(before.reads)
    return [(n, old[n].text, v.text) for n, v in after.reads if n in old and old[n].key != v.key]


def enclosing_function(signature: CallSignature) -> str | None:
    """The function that made a closure (``make_step`` for ``make_step.<locals>.step``), or ``None``.

    >>> from jaxmagic.recompiles.signatures import describe_call
    >>> def make_step(lr):
    ...     def step(w):
    ...         return w * lr
    ...     return step
    >>> enclosing_function(describe_call(make_step(0.1), (1.0,), {}))
    'make_step'
    """
    qualname = str(signature.family[1]) if len(signature.family) > 1 else ""
    if ".<locals>." not in qualname:
        return None
    return qualname.rsplit(".<locals>.", 1)[0].rsplit(".", 1)[-1]


def library_of(signature: CallSignature) -> str:
    """The installed package whose code a signature's function is (``optax``, ``blackjax``);
    ``""`` for the user's own code (and for JAX's wrappers around it, such as ``jax.vmap``).

    >>> from jaxmagic.recompiles.signatures import describe_call
    >>> import jax.numpy as jnp
    >>> library_of(describe_call(jnp.sin, (1.0,), {})), library_of(describe_call(lambda x: x, (1.0,), {}))
    ('jax', '')
    """
    inner = signature.inner_ref() if signature.inner_ref is not None else None
    code = getattr(inner, "__code__", None)
    if code is None or not is_library_file(code.co_filename):
        return ""
    module = getattr(inner, "__module__", None) or ""
    return module.split(".", 1)[0] or "a library"


def _site_text(site: tuple[str, int] | None, cell_namer: CellNamer) -> str | None:
    """Where a function was defined, by its label: ``In [4] line 2``, ``train.py:12``."""
    return None if site is None else source_line(site[0], site[1], "", cell_namer).label
