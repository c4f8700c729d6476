"""``donated-buffer``: an array read after it was donated to a jitted function. JAX reused its memory
for that function's result and deleted it. The donating call is searched in this cell and the ones
before it; the fix rebinds the name to what that call returns (or donates a copy). JAX says so
with a ``RuntimeError`` ("Array has been deleted"), or, where the read reaches XLA before the
donating call has ended, with XLA's ``ValueError`` ("Buffer has been deleted or donated").

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> step = jax.jit(lambda p: p * 2, donate_argnums=0)
>>> p = jnp.ones(2)
>>> try:
...     q = step(p)
...     r = p + 1
... except (RuntimeError, ValueError) as exc:
...     found = DONATED_BUFFER.diagnose(Case(exc, None, lambda filename: None))
>>> found.variable, found.fix.splitlines()[0]
('p', 'p = step(p)  # the result takes the place of the donated `p`')
"""

from __future__ import annotations

import ast

import jax

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.donations as donations
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic.doctor.clues import Span, start_of
from jaxmagic.doctor.declared import Declared, Given, Line, edited
from jaxmagic.tracing import sources


def donated_buffer(line: Line) -> dict | None:
    """The name read after its array was deleted, and the call that donated it where it is found in
    the user's code (``kind`` ``rebind`` or ``use-result``; else ``unknown``), with the fixes there."""
    statement, node = line.statement(), line.expression()
    names = clues.names_in(node) if node is not None else []
    names += [n for n in (clues.names_in(statement) if statement is not None else []) if n not in names]
    deleted = [n for n in names if donations.has_deleted(line.frame.lookup(n))]
    if not deleted:
        return None
    facts = {"xla_log": _XLA_LOGGED if _XLA_LOGGED in str(line.case.exc) else None}
    return {**facts, **_donated(line, deleted[0])}


# XLA's words where the read reached a compiled call: its runtime wrote them to the log (stderr, which
# a notebook shows) before JAX raised them, on a line of its own
_XLA_LOGGED = "Invalid buffer passed to Execute()"


def _donated(line: Line, variable: str) -> dict:
    parsed, call, callee, parameter = donations.find_donation(line.case, line.frame, variable) or (None,) * 4
    donating = clues.statement_at(parsed.tree, call.lineno) if isinstance(call, ast.Call) and parsed else None
    if not (isinstance(call, ast.Call) and parsed and parameter and donating is not None):
        return {"kind": "unknown", "variable": variable, "fname": None}
    at = sources.source_line(parsed.file, call.lineno, "", line.case.cell_namer)
    found = {"variable": variable, "fname": donations.callee_name(call, callee), "parameter": parameter,
             "option": donations.donation_option(callee), "donated_at": at}  # fmt: skip
    copied = rewrites.call_parameters(call, callee)[parameter]  # where find_donation found it passed
    copy = f"{variable}.copy()" if isinstance(line.frame.lookup(variable), jax.Array) else None
    copy = copy or f"{line.jax_names.jax}.tree_util.tree_map(lambda a: a.copy(), {variable})"
    found["keep"] = edited(parsed.lines, donating, rewrites.Edit(Span.of(copied), copy))
    edits = _rebinding(donating, call, variable)
    if edits:
        return {**found, "kind": "rebind", "fixed": edited(parsed.lines, donating, *edits)}
    used = f"\n# from here on, use the value this call returned instead of `{variable}`"
    return {**found, "kind": "use-result", "fixed": clues.source_of(parsed, donating) + used}


def _rebinding(donating: ast.stmt, call: ast.Call, variable: str) -> list[rewrites.Edit]:
    """The donating statement's target renamed ``variable`` (``new = step(p)`` -> ``p = step(p)``),
    or ``variable = `` put before a call whose result was dropped."""
    comment = f"the result takes the place of the donated `{variable}`"
    if isinstance(donating, ast.Assign) and len(donating.targets) == 1:
        target = donating.targets[0]
        if isinstance(target, ast.Name) and target.id != variable:
            return [rewrites.Edit(Span.of(target), variable, comment=comment)]
        for element in target.elts if isinstance(target, ast.Tuple) else ():
            if isinstance(element, ast.Name) and variable in element.id and element.id != variable:
                return [rewrites.Edit(Span.of(element), variable, comment=comment)]
    elif isinstance(donating, ast.Expr) and donating.value is call:
        return [rewrites.Edit(start_of(call), f"{variable} = ")]
    return []


_STOP = ("Or stop donating: remove {option} from the jit of {fname}.", "")
_COPY = ("If you still need the old {variable}, donate a copy (it costs one copy per call):", "{keep}")

DONATED_BUFFER = Declared(
    "donated-buffer",
    "An array used after it was donated",
    donated_buffer,
    messages=("Array has been deleted", "has been deleted or donated", "called on deleted or donated buffer"),
    order=20,
    explanation="{variable} was donated to {fname} (its parameter {parameter} is donated: {option}) at {donated_at}: "
    "JAX reused the array's memory for the result of {fname} and deleted it. Reading {variable} afterwards ({where}) finds "
    "nothing there.{logged}",
    pieces={
        "logged": " XLA wrote this error to its log too, before JAX raised it (a line of its own that starts "
        "with E and the time, then `{xla_log}`): the same error, nothing more."
    },
    rewrite=(Given("fixed"),),
    fix_note="Rebind {variable} to the result where you donate it: the name then always holds a live array.",
    alternatives=(_COPY, _STOP),
    kinds={
        "use-result": {"fix_note": "Use what {fname} returned from then on, not {variable}."},
        "unknown": {
            "explanation": "{variable} was donated to a jitted function: JAX reused its memory for that function's "
            "result and deleted the array, so {variable} cannot be read any more ({where}).{logged}",
            "fix_note": "Where you call the function that donates {variable}, rebind {variable} to what it returns: "
            "the name then always holds a live array.",
            "alternatives": (),
        },
    },
    variable="variable",
    function="fname",
)
