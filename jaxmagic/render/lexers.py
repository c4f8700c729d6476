"""Pygments lexers for what JAX prints: jaxprs, StableHLO (MLIR) and XLA's HLO.

They are registered as ``pygments.lexers`` entry points, so ``pygmentize -l jaxpr`` and any
tool built on Pygments (Sphinx, nbconvert) find them by alias.

>>> from pygments.token import Keyword, Name
>>> tokens = list(JaxprLexer().get_tokens("b:f32[3] = sin a"))
>>> (Keyword.Type, "f32[3]") in tokens, (Name.Function, "sin") in tokens
(True, True)
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (
    Comment,
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


class JaxprLexer(RegexLexer):
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
            (r"(:)(" + _JAX_DTYPE + r"\[[^\]]*\])", bygroups(Punctuation, Keyword.Type)),
            (words(("lambda", "let", "in"), suffix=r"\b"), Keyword),
            # a parameter: ``axes=`` (no space before ``=``)
            (r"([A-Za-z_]\w*)(=)", bygroups(Name.Attribute, Operator)),
            (r"(?:True|False|None)\b", Name.Constant),
            (r"[A-Za-z_]\w*", Name.Variable),
            # the primitive of an equation: ``= sin`` / ``= reduce_sum[``
            (r"(=)( +)([A-Za-z_]\w*)", bygroups(Operator, Whitespace, Name.Function)),
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


class HloLexer(RegexLexer):
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
            (r"([A-Za-z_][\w-]*)(\()", bygroups(Name.Function, Punctuation)),
            (r"([A-Za-z_][\w.]*)(=)", bygroups(Name.Attribute, Operator)),
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
