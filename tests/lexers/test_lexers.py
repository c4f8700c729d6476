"""jaxmagic's Pygments lexers on real JAX output: token streams, golden files, registration.

Golden files (``samples/*.tokens.json``) hold the expected ``(token type, text)`` stream of each
sample; regenerate them with ``JAXMAGIC_REGENERATE_GOLDEN=1`` after reviewing a lexer change.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygments.lexer import RegexLexer
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import Comment, Error, Generic, Keyword, Name, Number, Operator, Punctuation, String

from jaxmagic.render.lexers import HloLexer, JaxprLexer, StableHloLexer

SAMPLES = pathlib.Path(__file__).parent / "samples"
LEXER_FOR_SUFFIX = {".jaxpr": JaxprLexer, ".stablehlo": StableHloLexer, ".hlo": HloLexer}
SAMPLE_FILES = sorted(p for p in SAMPLES.iterdir() if p.suffix in LEXER_FOR_SUFFIX)


def tokens(lexer_class, text):
    return [(t, v) for t, v in lexer_class().get_tokens(text) if v.strip()]


@pytest.mark.parametrize("sample", SAMPLE_FILES, ids=lambda p: p.name)
def test_real_jax_output_lexes_without_error_tokens(sample):
    stream = tokens(LEXER_FOR_SUFFIX[sample.suffix], sample.read_text())
    assert stream
    assert [v for t, v in stream if t in Error] == []


@pytest.mark.parametrize("sample", SAMPLE_FILES, ids=lambda p: p.name)
def test_token_stream_matches_the_golden_file(sample):
    stream = [[str(t), v] for t, v in LEXER_FOR_SUFFIX[sample.suffix]().get_tokens(sample.read_text())]
    golden = sample.with_name(sample.name + ".tokens.json")
    if os.environ.get("JAXMAGIC_REGENERATE_GOLDEN"):
        golden.write_text(json.dumps(stream, ensure_ascii=False, indent=0))
        pytest.skip(f"wrote {golden.name}; review it")
    assert golden.exists(), f"{golden.name} is missing: run with JAXMAGIC_REGENERATE_GOLDEN=1 and review it"
    assert stream == json.loads(golden.read_text())


def test_jaxpr_equation_tokens():
    assert tokens(JaxprLexer, "d:f32[3] = reduce_sum[axes=(0,)] c 2.0:f32[]") == [
        (Name.Variable, "d"),
        (Punctuation, ":"),
        (Keyword.Type, "f32[3]"),
        (Operator, "="),
        (Name.Function, "reduce_sum"),
        (Punctuation, "["),
        (Name.Attribute, "axes"),
        (Operator, "="),
        (Punctuation, "("),
        (Number, "0"),
        (Punctuation, ","),
        (Punctuation, ")"),
        (Punctuation, "]"),
        (Name.Variable, "c"),
        (Number, "2.0"),
        (Punctuation, ":"),
        (Keyword.Type, "f32[]"),
    ]


def test_jaxpr_keywords_comments_and_markers():
    stream = tokens(
        JaxprLexer,
        "{ lambda ; a:bf16[2,3]. let\n  b:bool[] = gt a 0  # In [4] line 3: y = x > 0\n  … 7 more equations\n in (b,) }",
    )
    assert (Keyword, "lambda") in stream and (Keyword, "let") in stream and (Keyword, "in") in stream
    assert (Keyword.Type, "bf16[2,3]") in stream and (Keyword.Type, "bool[]") in stream
    assert (Comment.Single, "# In [4] line 3: y = x > 0") in stream
    assert (Generic.Subheading, "… 7 more equations") in stream


def test_stablehlo_tokens():
    stream = tokens(
        StableHloLexer, "%3 = stablehlo.compare GT, %arg1, %c, SIGNED : (tensor<i32>, tensor<3xf32>) -> tensor<i1>"
    )
    assert (Name.Variable, "%3") in stream and (Name.Variable, "%arg1") in stream
    assert (Name.Function, "stablehlo.compare") in stream
    assert (Name.Constant, "GT") in stream and (Name.Constant, "SIGNED") in stream
    assert "".join(v for t, v in stream if t in Keyword.Type).count("tensor<") == 3
    assert (Operator, "->") in stream


def test_stablehlo_module_header():
    stream = tokens(
        StableHloLexer,
        'module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<f32> {jax.result_info = "result"}) {',
    )
    assert (Keyword, "module") in stream and (Name.Function, "@jit_f") in stream
    assert (Name.Attribute, "mhlo.num_partitions") in stream
    assert (Name.Function, "func.func") in stream and (Name.Function, "@main") in stream
    assert (String, '"result"') in stream


def test_hlo_tokens():
    stream = tokens(
        HloLexer,
        'ROOT %add.2 = f32[3]{0} add(%param_0, %broadcast.1), metadata={op_name="jit(f)/sub" stack_frame_id=3}',
    )
    assert (Keyword, "ROOT") in stream
    assert (Name.Variable, "%add.2") in stream
    assert (Keyword.Type, "f32[3]{0}") in stream
    assert (Name.Function, "add") in stream
    assert (Name.Attribute, "metadata") in stream and (String, '"jit(f)/sub"') in stream


@pytest.mark.parametrize(
    "alias, lexer_class, filename",
    [("jaxpr", JaxprLexer, "f.jaxpr"), ("stablehlo", StableHloLexer, "f.stablehlo"), ("hlo", HloLexer, "f.hlo")],
)
def test_lexers_are_registered_with_pygments(alias, lexer_class, filename):
    assert isinstance(get_lexer_by_name(alias), lexer_class)
    assert isinstance(get_lexer_for_filename(filename), lexer_class)


def test_pygmentize_finds_the_jaxpr_lexer():
    pygmentize = pathlib.Path(sys.executable).with_name("pygmentize")
    sample = (SAMPLES / "cond_scan.jaxpr").read_text()
    out = subprocess.run(
        [str(pygmentize), "-l", "jaxpr", "-f", "html"], input=sample, capture_output=True, text=True, check=True
    )
    assert '<span class="nf">sin</span>' in out.stdout


# -- the one-pass lexers give Pygments' own tokens ---------------------------------------------------
ONE_PASS = [JaxprLexer, HloLexer]


def pygments_own(lexer_class, text):
    return list(RegexLexer.get_tokens_unprocessed(lexer_class(stripnl=False, ensurenl=False), text))


def one_pass(lexer_class, text):
    return list(lexer_class(stripnl=False, ensurenl=False).get_tokens_unprocessed(text))


# the HLO that XLA compiled for four models on a TPU v5e, and a Pallas kernel's (tests/fixtures/tpu)
TPU_HLO = sorted((pathlib.Path(__file__).parents[1] / "fixtures" / "tpu").glob("*.hlo.txt"))
REAL_OUTPUT = [(p, LEXER_FOR_SUFFIX[p.suffix]) for p in SAMPLE_FILES if LEXER_FOR_SUFFIX[p.suffix] in ONE_PASS]
REAL_OUTPUT += [(p, HloLexer) for p in TPU_HLO]


@pytest.mark.parametrize("sample, lexer_class", REAL_OUTPUT, ids=lambda v: getattr(v, "name", ""))
def test_one_pass_lexing_of_real_output_is_pygments_own(sample, lexer_class):
    text = sample.read_text()
    assert one_pass(lexer_class, text) == pygments_own(lexer_class, text)


def test_the_tpu_hlo_is_there_to_lex():
    assert len(TPU_HLO) >= 5, TPU_HLO


# pieces of what JAX prints, and characters no rule expects (tabs, newlines, non-ASCII, quotes)
_PIECES = st.sampled_from(
    [" ", "  ", "\n", "\t", ":", "f32[3,4]", "bf16[]", "key<fry>[]", "=", "= ", "sin", "reduce_sum", "[",
     "]", "axes=", "(0,)", "True", "None", "1.5e-3", "-2", "lambda", "let", "in", "#", "# In [2] line 3",
     "…", "▸", "'a'", '"b"', "%fusion.1", "ROOT", "{1,0}", "/*c*/", "// x", "ENTRY", "->", "é", "$", "@"]
)  # fmt: skip


@pytest.mark.parametrize("lexer_class", ONE_PASS, ids=lambda c: c.__name__)
@settings(max_examples=400, deadline=None)
@given(text=st.lists(_PIECES | st.text(max_size=3), max_size=40).map("".join))
def test_one_pass_lexing_of_any_text_is_pygments_own(lexer_class, text):
    assert one_pass(lexer_class, text) == pygments_own(lexer_class, text)
