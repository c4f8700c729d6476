"""What a magic's line holds: its options, split from the call that follows them."""

from __future__ import annotations

import re
from typing import Callable

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser, argument

from jaxmagic.tracing import call as calls

STATIC_OPTION = argument(
    "-s",
    "--static",
    metavar="NAMES",
    action="append",
    help="parameters to treat as static, by name or position: -s n, -s 1,mode (or -s 1 -s mode)",
)


def shared_options(report_name: str):
    """The options every magic takes: ``--plain``, ``--tb`` and ``-o`` (which returns ``report_name``).

    Put it right under the magic's own ``@argument`` lines.
    """
    options = (
        argument("--plain", action="store_true", help="print plain text only"),
        argument("--tb", action="store_true", help="when your code raises, show its full traceback"),
        argument("-o", "--output", action="store_true", help=f"return the {report_name}"),
    )

    def add(magic_func):
        for option in reversed(options):
            magic_func = option(magic_func)
        return magic_func

    return add


def parser_of(magic_method: Callable[..., object]) -> MagicArgumentParser:
    """The option parser ``@magic_arguments()`` made for a magic's method (IPython sets it as the
    function's ``parser`` attribute, which a type checker cannot see)."""
    return magic_method.parser  # pyright: ignore[reportFunctionMemberAccess, reportAttributeAccessIssue]


def split_options(parser, line: str, magic: str):
    """Split a magic's line into parsed options and the call expression that follows them.

    The call may itself contain spaces, minus signs and quotes (``f(x, -3, "a b")``), so the split
    is found by trying each word boundary from the right: the longest prefix that parses as
    options wins, and the rest is the call.
    """
    __tracebackhide__ = True
    line = line.strip()
    check_option_spelling(parser, line, magic)
    boundaries = sorted({len(line), 0, *(m.start() for m in re.finditer(r"(?<=\s)\S", line))}, reverse=True)
    informative_error = None
    error_before_a_call = False  # the options' own error is clearest where the call follows them
    for boundary in boundaries:
        prefix, rest = line[:boundary].strip(), line[boundary:].strip()
        try:
            options = parser.parse_argstring(prefix)
        except (UsageError, ValueError) as exc:
            before_a_call = bool(rest) and _is_call(rest)
            if (informative_error is None and not rest) or (before_a_call and not error_before_a_call):
                informative_error, error_before_a_call = exc, before_a_call
            continue
        if rest.startswith("-") and not _is_call(rest) and informative_error is not None:
            break
        check_values(parser, options, magic)
        return options, rest
    message = str(informative_error) if informative_error else f"cannot read the options of {magic}"
    raise UsageError(f"{magic}: {message}\n{parser.format_usage().strip()}")


def check_values(parser, options, magic: str) -> None:
    """A usage error for an option whose value argparse read as nothing (``--max=--``)."""
    import argparse

    for action in parser._actions:
        value = getattr(options, action.dest, None)
        if isinstance(action, argparse._AppendAction):
            empty = isinstance(value, list) and any(isinstance(v, list) for v in value)
        else:
            empty = action.nargs is None and action.type is not None and isinstance(value, list)
        if empty:
            raise UsageError(f"{magic}: {action.option_strings[-1]} needs a value\n{parser.format_usage().strip()}")


def check_option_spelling(parser, line: str, magic: str) -> None:
    """A long option written with one dash (``-stage hlo``) is a usage error that names the option,
    rather than a short option with a value glued on (``-s tage``) or the start of a call.

    Only the words before the call (the first word with a parenthesis) are looked at.
    """
    long_options = [o for o in parser._option_string_actions if o.startswith("--")]
    for word in line.split():
        if "(" in word:
            return
        if not (word.startswith("-") and not word.startswith("--") and len(word) > 3 and word[1].isalpha()):
            continue
        spelled = "--" + word[1:].split("=")[0]
        meant = [o for o in long_options if o == spelled] or [o for o in long_options if o.startswith(spelled)]
        if len(meant) == 1:
            raise UsageError(
                f"{magic}: `{word}` is not an option; long options take two dashes: {meant[0]}\n"
                f"{parser.format_usage().strip()}"
            )


def _is_call(text: str) -> bool:
    try:
        return isinstance(calls.ast.parse(text, mode="eval").body, calls.ast.Call)
    except SyntaxError:
        return False
