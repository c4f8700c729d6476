"""``-s/--static``: the parameters a magic's user marks static, by name or position (``-s n``,
``-s 1,mode``), read into static positions and names and checked against the function.
"""

from __future__ import annotations

import inspect
from typing import Callable

from jaxmagic.errors import UsageProblem
from jaxmagic.tracing.callables import positional_parameters, signature_of

CALL_EXAMPLE = "f(x, 3)"


def parse_static(
    spec: str | None, fn: Callable, args: tuple, *, magic: str = "%jaxpr"
) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Split ``-s`` (``"n"``, ``"1,mode"``) into static positions and names, checked against ``fn``.

    >>> def f(x, n, mode="a"):
    ...     pass
    >>> parse_static("1,mode", f, (0, 1))
    ((1,), ('mode',))
    """
    if spec is None or not spec.strip():
        return (), ()
    parameters = _StaticParameters(fn, args, magic)
    nums: list[int] = []
    names: list[str] = []
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        if item.lstrip("-").isdigit():
            position = parameters.position(item)
            if position in nums:
                raise UsageProblem(f"{magic}: -s names argument {item} twice.")
            nums.append(position)
        elif item.isidentifier():
            position = parameters.check_name(item)
            if position is not None:  # positional-only: JAX takes these by position only
                if position in nums:
                    raise UsageProblem(
                        f"{magic}: -s names parameter `{item}` twice (by name and as position {position})."
                    )
                nums.append(position)
            elif item in names:
                raise UsageProblem(f"{magic}: -s names `{item}` twice.")
            else:
                names.append(item)
        else:
            raise UsageProblem(
                f"{magic}: -s takes parameter names or positions separated by commas, not `{item}`.",
                example=f"{magic} -s 1,mode {CALL_EXAMPLE}",
            )
    for position in nums:  # the same parameter by name and by position is asked twice
        if position < len(parameters.positional) and parameters.positional[position] in names:
            raise UsageProblem(
                f"{magic}: -s names parameter `{parameters.positional[position]}` twice "
                f"(by name and as position {position})."
            )
    return tuple(nums), tuple(names)


class _StaticParameters:
    """What ``-s`` may name for one callee: its parameters, checked one by one."""

    def __init__(self, fn: Callable, args: tuple, magic: str):
        sig = signature_of(fn)
        self.known = sig is not None
        self.params = sig.parameters if sig is not None else {}
        kinds = {p.kind for p in self.params.values()}
        self.var_args = inspect.Parameter.VAR_POSITIONAL in kinds
        self.var_kwargs = inspect.Parameter.VAR_KEYWORD in kinds
        self.positional = positional_parameters(fn)
        self.args, self.magic = args, magic
        self.accepted = ", ".join(self.params) or "(none)"

    def position(self, item: str) -> int:
        position = int(item)
        limit = max(len(self.args), len(self.positional)) if self.var_args else len(self.positional) or len(self.args)
        if position < 0 or position >= limit:
            raise UsageProblem(
                f"{self.magic}: -s {item}: there is no positional argument {item}; "
                f"positions start at 0 and the parameters are: {self.accepted}.",
                example=f"{self.magic} -s 1 {CALL_EXAMPLE}",
            )
        return position

    def check_name(self, item: str) -> int | None:
        """``None`` for a name JAX takes by name; the position of a positional-only parameter."""
        if self.known and item not in self.params and not self.var_kwargs:
            raise UsageProblem(
                f"{self.magic}: -s {item}: the function has no parameter named `{item}`; "
                f"its parameters are: {self.accepted}.",
                example=f"{self.magic} -s n {CALL_EXAMPLE}",
            )
        kind = self.params[item].kind if item in self.params else None
        if kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            by = "position" if kind is inspect.Parameter.VAR_POSITIONAL else "keyword name"
            star = "*" if kind is inspect.Parameter.VAR_POSITIONAL else "**"
            raise UsageProblem(
                f"{self.magic}: -s {item}: `{star}{item}` collects several arguments; mark the ones to make static "
                f"one by one, by {by}.",
                example=f"{self.magic} -s 1 {CALL_EXAMPLE}",
            )
        return self.positional.index(item) if kind is inspect.Parameter.POSITIONAL_ONLY else None


def merged_static(first: tuple, second: tuple) -> tuple:
    return tuple(dict.fromkeys(first + second))
