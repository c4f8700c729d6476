"""Pygments lexers for what JAX prints: jaxprs, StableHLO (MLIR) and XLA's HLO.

They are registered as ``pygments.lexers`` entry points, so ``pygmentize -l jaxpr`` and any
tool built on Pygments (Sphinx, nbconvert) find them by alias.

>>> from pygments.token import Keyword, Name
>>> tokens = list(JaxprLexer().get_tokens("b:f32[3] = sin a"))
>>> (Keyword.Type, "f32[3]") in tokens, (Name.Function, "sin") in tokens
(True, True)
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (
    Comment,
    Error,
    Generic,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

_NUMBER = r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?"
_JAX_DTYPE = r"(?:bf16|f8_?\w+|[fiuc]\d+|bool|key<[^>]*>|float0|token)"


class OnePassLexer(RegexLexer):
    """A ``RegexLexer`` of one state whose rules are tried as one regular expression: its
    alternatives in the rules' order, so the rule that matches is the one Pygments would pick (the
    first that matches where the text stands), and the tokens are Pygments' own; about three times
    quicker on a long listing, where Pygments tries each rule in turn in Python.

    >>> text = "b:f32[3] = reduce_sum[axes=(0,)] a  # In [2] line 3"
    >>> pygments_own = RegexLexer.get_tokens_unprocessed(JaxprLexer(), text)
    >>> list(JaxprLexer().get_tokens_unprocessed(text)) == list(pygments_own)
    True
    """

    def get_tokens_unprocessed(self, text, stack=("root",)):
        combined, rules = _one_pass(type(self))
        match, pos, end = combined.match, 0, len(text)
        while pos < end:
            found = match(text, pos)
            if found is None:  # as Pygments does: a newline is whitespace, anything else one error
                yield pos, Whitespace if text[pos] == "\n" else Error, text[pos]
                pos += 1
                continue
            own, action = rules[found.lastindex or 0]
            if own is None:  # (group, token type) pairs, as ``bygroups`` yields each group that matched text
                for group, ttype in action:
                    if data := found.group(group):
                        yield found.start(group), ttype, data
            else:  # another callback reads the groups of its own rule's expression
                yield from action(self, own.match(text, pos))
            pos = found.end()


def groups(*types):
    """Pygments' ``bygroups`` of token types, its types kept for ``OnePassLexer`` to read the groups
    of its one expression (where Pygments matches the rule's own expression again)."""
    callback = bygroups(*types)
    callback.types = types  # pyright: ignore[reportFunctionMemberAccess]
    return callback


@cache
def _one_pass(lexer: type[RegexLexer]) -> tuple[re.Pattern, dict[int, tuple[re.Pattern | None, Any]]]:
    """The rules of ``lexer``'s one state as one expression, and, by the index of each rule's
    group in it, ``(None, (group, token type) pairs)`` for a token type or ``groups`` (a token
    type's group is the rule's whole match), else ``(the rule's own expression, its callback)``."""
    (rules,) = lexer.tokens.values()
    parts, by_group, group = [], {}, 1
    for pattern, action in rules:
        source = pattern.get() if isinstance(pattern, words) else pattern
        own = re.compile(source, lexer.flags)
        types = getattr(action, "types", None)
        if isinstance(action, type(Whitespace)):
            by_group[group] = (None, [(group, action)])
        elif types is not None and len(types) == own.groups:
            by_group[group] = (None, [(group + 1 + i, t) for i, t in enumerate(types) if t is not None])
        else:
            by_group[group] = (own, action)
        parts.append(f"({source})")
        group += 1 + own.groups
    return re.compile("|".join(parts), lexer.flags), by_group


class JaxprLexer(OnePassLexer):
    """A jaxpr as ``jax.make_jaxpr`` prints it (and as jaxmagic annotates it with ``# line``)."""

    name = "Jaxpr"
    aliases = ["jaxpr"]
    filenames = ["*.jaxpr"]
    mimetypes = ["text/x-jaxpr"]

    # Rules are ordered by how often they match in a real jaxpr: bindings and variables first.
    tokens = {
        "root": [
            (r" +", Whitespace),
            # a binding or literal's type: ``:f32[3,4]``
            (r"(:)(" + _JAX_DTYPE + r"\[[^\]]*\])", groups(Punctuation, Keyword.Type)),
            (words(("lambda", "let", "in"), suffix=r"\b"), Keyword),
            # a parameter: ``axes=`` (no space before ``=``)
            (r"([A-Za-z_]\w*)(=)", groups(Name.Attribute, Operator)),
            (r"(?:True|False|None)\b", Name.Constant),
            (r"[A-Za-z_]\w*", Name.Variable),
            # the primitive of an equation: ``= sin`` / ``= reduce_sum[``
            (r"(=)( +)([A-Za-z_]\w*)", groups(Operator, Whitespace, Name.Function)),
            (_NUMBER + r"\b", Number),
            (r"[{}()\[\],.;:]", Punctuation),
            (r"\s+", Whitespace),
            (r"#.*?$", Comment.Single),
            (r"…[^\n]*", Generic.Subheading),
            (r"[▸▾]", Punctuation),
            (r"'[^'\n]*'|\"[^\"\n]*\"", String),
            (r"[^\s]", Text),
        ]
    }


class StableHloLexer(RegexLexer):
    """StableHLO (MLIR text), as ``jax.jit(f).lower(x).as_text()`` prints it."""

    name = "StableHLO"
    aliases = ["stablehlo", "mlir-stablehlo"]
    filenames = ["*.stablehlo", "*.mlir"]
    mimetypes = ["text/x-stablehlo"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"#[\w.]+", Name.Decorator),  # attribute aliases, #loc
            (r"%[\w.$#-]+(?::\d+)?", Name.Variable),
            (r"@[\w.$-]+|@\"[^\"]*\"", Name.Function),
            (r"\"(?:stablehlo|chlo|mhlo|func|sdy)\.[\w.]+\"", Name.Function),
            (r"\"[^\"]*\"", String),
            (r"\b(?:stablehlo|chlo|func|sdy|shardy|arith|math|tensor|scf|call)\.[A-Za-z_][\w.]*", Name.Function),
            (r"(?:tensor|vector|memref|complex|tuple)<", Keyword.Type, "type"),
            (r"!\w+(?:\.\w+)*(?:<[^>]*>)?", Keyword.Type),
            (r"\b(?:[fiu]\d+|bf16|f8\w*|index|none)\b", Keyword.Type),
            (
                words(
                    (
                        "module",
                        "attributes",
                        "func",
                        "return",
                        "public",
                        "private",
                        "dense",
                        "applies",
                        "across",
                        "dimensions",
                        "dims",
                        "init",
                        "loc",
                        "true",
                        "false",
                        "unit",
                        "cond",
                        "do",
                        "contracting_dims",
                        "batching_dims",
                        "precision",
                        "x",
                    ),
                    suffix=r"\b",
                ),
                Keyword,
            ),
            (r"\b[A-Z][A-Z_]*\b", Name.Constant),  # comparison directions, SIGNED, FLOAT, ...
            (r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+", Name.Attribute),
            (r"0x[0-9A-Fa-f]+", Number.Hex),
            (_NUMBER, Number),
            (r"->|=|:", Operator),
            (r"[{}()\[\],<>]", Punctuation),
            (r"[A-Za-z_][\w]*", Name),
            (r"[^\s]", Text),
        ],
        "type": [
            (r"<", Keyword.Type, "#push"),
            (r">", Keyword.Type, "#pop"),
            (r"[^<>]+", Keyword.Type),
        ],
    }


class HloLexer(OnePassLexer):
    """XLA's HLO text, as ``jax.jit(f).lower(x).compile().as_text()`` prints it."""

    name = "HLO"
    aliases = ["hlo", "xla-hlo"]
    filenames = ["*.hlo"]
    mimetypes = ["text/x-hlo"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"/\*.*?\*/", Comment.Multiline),
            (r"//.*?$", Comment.Single),
            (words(("HloModule", "ENTRY", "ROOT"), suffix=r"\b"), Keyword),
            (r"^(?:FileNames|FunctionNames|FileLocations|StackFrames)$", Generic.Subheading),
            (r"%[\w.-]+", Name.Variable),
            (r"\b(?:pred|s\d+|u\d+|f\d+|bf16|c\d+|f8\w+|token)\[[\d,]*\](?:\{[\d,:A-Z()]*\})?", Keyword.Type),
            (r"\b(?:pred|s\d+|u\d+|f\d+|bf16|c\d+)\b(?=\[)", Keyword.Type),
            (r"([A-Za-z_][\w-]*)(\()", groups(Name.Function, Punctuation)),
            (r"([A-Za-z_][\w.]*)(=)", groups(Name.Attribute, Operator)),
            (r"\"[^\"]*\"", String),
            (r"\b(?:true|false)\b", Name.Constant),
            (_NUMBER, Number),
            (r"->|=", Operator),
            (r"[{}()\[\],:]", Punctuation),
            (r"[A-Za-z_][\w.-]*", Name),
            (r"[^\s]", Text),
        ]
    }


LEXERS = {"jaxpr": JaxprLexer, "stablehlo": StableHloLexer, "hlo": HloLexer}
