"""How the recompile log and its advice name a function: a lambda by the line it is written on
(``<lambda> (line 3)``, read back as ``the lambda at line 3``), any other by its own name."""

from __future__ import annotations

import re

from jaxmagic.words import Words, code, say


def lambda_name(name: str, line: int) -> str:
    """How the log names a lambda: by the line it is written on, so that two lambdas stay two rows.

    >>> lambda_name("<lambda>", 3), without_line("<lambda> (line 3)"), without_line("step")
    ('<lambda> (line 3)', '<lambda>', 'step')
    """
    return f"{name} (line {line})"


_LINE = re.compile(r"^(.*) \(line (\d+)\)$")  # what ``lambda_name`` writes


def without_line(name: str) -> str:
    """A function's name as the log writes it, less the line ``lambda_name`` adds."""
    found = _LINE.match(name)
    return found[1] if found else name


def named(argument: str) -> Words:
    """An argument or function as advice names it: ``the lambda at line 3`` for ``<lambda> (line 3)``.

    >>> str(named("<lambda> (line 3)")), str(named("step"))
    ('the lambda at line 3', '`step`')
    """
    found = _LINE.match(argument)
    return say("the lambda at line {}", found[2]) if found and found[1] == "<lambda>" else say("{}", code(argument))
