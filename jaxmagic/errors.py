"""The two kinds of failure a magic can meet: the user's input is wrong, or the user's code raised.

>>> err = UsageProblem("expected a call expression", example="%jaxpr f(x)")
>>> print(err)
expected a call expression
Example: %jaxpr f(x)
"""

from __future__ import annotations


class UsageProblem(ValueError):
    """What the user typed cannot be used; the message says what was expected.

    The IPython layer turns it into IPython's ``UsageError``; a script sees it as a ``ValueError``.
    """

    def __init__(self, message: str, *, example: str | None = None):
        self.message = message
        self.example = example
        super().__init__(message if example is None else f"{message}\nExample: {example}")


class UserCodeError(Exception):
    """The user's own code raised; ``original`` is that exception, with the user's traceback.

    ``during`` says what jaxmagic was doing at the time ("tracing", "the eager run", ...).

    >>> try:
    ...     raise ZeroDivisionError("division by zero")
    ... except ZeroDivisionError as exc:
    ...     err = UserCodeError(exc, during="tracing")
    >>> str(err)
    'ZeroDivisionError while tracing: division by zero'
    """

    def __init__(self, original: BaseException, *, during: str):
        self.original = original
        self.during = during
        super().__init__(f"{type(original).__name__} while {during}: {original}")
