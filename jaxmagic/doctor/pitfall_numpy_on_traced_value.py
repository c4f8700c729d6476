"""``numpy-on-traced-value``: a NumPy function that worked on a traced value, by handing the work to
the array's own method (``np.mean(x)`` calls ``x.mean()``): a warning, since most NumPy functions
fail on traced values and a change of argument can break this one too. The calls are found from
the source line JAX recorded for each equation a NumPy function made.

>>> import jax, jax.numpy as jnp, numpy as np
>>> from jaxmagic.doctor.traced_code import Traced
>>> def f(x):
...     return np.mean(x) * x
>>> (found,) = NUMPY_ON_TRACED_VALUE.notice(Traced([f], jax.make_jaxpr(f)(jnp.ones(2)), None, lambda filename: None))
>>> found.severity, found.fix.splitlines()[-1].strip()
('warning', 'return jnp.mean(x) * x')
"""

from __future__ import annotations

import ast
import os
import types
from typing import Any, Iterator, cast

import jax.numpy as jnp
import numpy as np

import jaxmagic.doctor.clues as clues
from jaxmagic import _jax_private
from jaxmagic.doctor.declared import Declared, Function, Replace
from jaxmagic.doctor.traced_code import codes, global_loads


def _reads_numpy(function: types.FunctionType) -> bool:
    """True when the function reads a global that is NumPy or comes from it (``np``, ``mean``)."""
    for load in global_loads(function):
        value = function.__globals__.get(load.name)
        module = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        if value is not None and (
            module == "numpy" or str(module).startswith("numpy.") or type(value).__name__ == "ufunc"
        ):
            return True
    return False


def _file_kind(filename: str, kinds: dict[str, str]) -> str:
    """``"jax"``, ``"numpy"``, ``"user"`` or ``"other"``: whose code the file is (worked out once each)."""
    if filename not in kinds:
        if _jax_private.is_jax_internal_file(filename):
            kinds[filename] = "jax"
        elif f"{os.sep}numpy{os.sep}" in filename:
            kinds[filename] = "numpy"
        else:
            kinds[filename] = "user" if clues.is_user_file(filename) else "other"
    return kinds[filename]


def _numpy_uses(closed_jaxpr: Any) -> Iterator[tuple[str, int, str]]:
    """``(file, line, numpy function)`` for each equation that a NumPy function made from user code."""
    from jaxmagic.tracing.listing import all_equations

    kinds: dict[str, str] = {}
    for eqn in all_equations(closed_jaxpr):
        numpy_function = None
        for file, line, function in _jax_private.traceback_frames(eqn.source_info):  # innermost first
            where = _file_kind(file, kinds)
            if where == "jax":
                continue
            if where == "numpy":
                numpy_function = function.rsplit(".", 1)[-1]  # the outermost NumPy frame names the call
                continue
            if numpy_function is not None and where == "user":
                yield file, line, numpy_function
            break


def numpy_on_traced_value(function: Function) -> list[dict]:
    """Each NumPy call of the function that JAX recorded as making equations, where ``jax.numpy``
    has a function of the same name."""
    closed_jaxpr = function.traced.closed_jaxpr
    traced = cast(types.FunctionType, function.sourced.function)
    if closed_jaxpr is None or not _reads_numpy(traced):
        return []  # no NumPy in sight: no need to walk every equation's traceback
    files = {code.co_filename for code in codes(traced.__code__)}
    uses = dict.fromkeys((line, name) for file, line, name in _numpy_uses(closed_jaxpr) if file in files)
    calls = [node for node in ast.walk(function.node) if isinstance(node, ast.Call)]
    found = []
    for line, name in uses:
        call = next((call for call in calls if _calls(function, call, line, name)), None)
        if call is not None and hasattr(jnp, name):
            variable = (clues.names_in(call.args[0]) or [None])[0] if call.args else None
            found.append({"at": call, "call": call, "func": call.func, "name": name, "variable": variable})
    return found


def _calls(function: Function, call: ast.Call, line: int, name: str) -> bool:
    """True when ``call``, at ``line``, calls NumPy's function ``name`` (``np.mean``)."""
    if call.lineno != line or not (isinstance(call.func, ast.Attribute) and call.func.attr == name):
        return False
    base = function.resolve(call.func.value)
    return base is np or getattr(base, "__name__", "").startswith("numpy")


NUMPY_ON_TRACED_VALUE = Declared(
    "numpy-on-traced-value",
    "NumPy that worked on a traced value, for now",
    numpy_on_traced_value,
    severity="warning",
    stage="trace",
    order=30,
    explanation="{call} ({where}) calls NumPy on a traced value. It worked here only because {func} hands the work "
    "to the array's own `.{name}` method; most NumPy functions (`np.sin`, `np.dot` and `np.asarray`...) fail on "
    "traced values, and a change of argument can break this one too.",
    rewrite=(Replace("func", "{jnp}.{name}"),),
    fix_note="Use `{jnp}.{name}`: the same result, computed by JAX as part of the compiled code.",
    variable="variable",
)
