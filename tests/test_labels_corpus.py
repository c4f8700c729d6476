"""Every label in a listing is the user's, over a corpus of code as JAX's documentation, Flax NNX,
Equinox and Optax teach it (``tests/labels_corpus.py``): each source line is a line of the user's
own cell or file (never JAX's, a library's or jaxmagic's), each input and output a path the user can
type, each transform the user wrote named in the title, and an equation with no outputs printed the
way JAX prints it."""

from __future__ import annotations

import ast
import inspect
import linecache
import os
import re
import sys
import textwrap

import pytest

from jaxmagic.tracing.names import EQUINOX_MARKER
from tests.labels_corpus import CORPUS, USER_FILE_CASES, USER_MODULE

FORBIDDEN = ("<flat index", "args[", "ErrorEffect", "site-packages", "dist-packages")


@pytest.fixture(scope="module")
def corpus_shell(ip, tmp_path_factory):
    """The shell with every case's cell run, in order, and the user's own module importable."""
    folder = tmp_path_factory.mktemp("user_code")
    (folder / "labels_user_model.py").write_text(USER_MODULE)
    sys.path.insert(0, str(folder))
    before = set(ip.user_ns)
    for case in CORPUS:
        if case.source.strip():
            outcome = ip.run_cell(case.source, store_history=True)
            assert outcome.success, f"{case.id}: {outcome.error_in_exec!r}"
    ip.run_cell("import labels_user_model", store_history=True)
    written = "\n".join(case.source + textwrap.dedent(case.cell) for case in CORPUS) + "\n" + USER_MODULE
    yield ip, str(folder), {line.strip() for line in written.splitlines() if line.strip()}
    sys.path.remove(str(folder))
    sys.modules.pop("labels_user_model", None)
    for name in set(ip.user_ns) - before:
        if not name.startswith("_"):
            ip.user_ns.pop(name, None)


def _cell_files(ip, number: int) -> list[str]:
    return [name for name, n in ip.compile._filename_map.items() if n == number]


def _is_users_file(ip, folder: str, filename: str) -> bool:
    return ip.compile.format_code_name(filename) is not None or os.path.dirname(filename) == folder


def label_problems(ip, folder: str, written: set[str], report) -> list[str]:
    """What is wrong with the source labels of ``report``: each must be a line the user wrote."""
    problems = []
    for index, line in report.source_lines.items():
        if not _is_users_file(ip, folder, line.file):
            problems.append(f"equation {index} is labelled with {line.file}:{line.line}")
        elif line.text != linecache.getline(line.file, line.line).strip() or line.text not in written:
            problems.append(f"equation {index}: {line.label} reads {line.text!r}, not a line the user wrote")
    for label in report.line_counts:
        if label == "(no source line)":
            continue
        cell = re.fullmatch(r"In \[(\d+)\] line (\d+)", label)
        if cell:
            files, number = _cell_files(ip, int(cell.group(1))), int(cell.group(2))
        else:
            name, _, number = label.rpartition(":")
            files, number = [os.path.join(folder, name)], int(number) if number.isdigit() else 0
        texts = {linecache.getline(f, number).strip() for f in files if os.path.dirname(f) in ("", folder) or f}
        if not any(text and text in written for text in texts):
            problems.append(f"line_counts label {label!r} is not a line of the user's code")
    return problems


def _evaluated_call(ip, call_text: str):
    """The callee, positional and keyword arguments of a call, evaluated in the user's namespace."""
    node = ast.parse(call_text, mode="eval").body
    ns = ip.user_ns

    def value(expression):
        return eval(compile(ast.Expression(expression), "<call>", "eval"), ns)  # noqa: S307

    return value(node.func), [value(a) for a in node.args], {k.arg: value(k.value) for k in node.keywords}


def _arguments(ip, call_text: str) -> tuple[dict, set]:
    """The callee's parameters bound to the call's argument values, through any transform's wrapper."""
    fn, args, kwargs = _evaluated_call(ip, call_text)
    if not _named_parameters(fn):  # a wrapper taking *args (checkify): the function written inside it
        fn = _innermost_written(ip, call_text) or fn
    try:
        signature = inspect.signature(fn)  # through jit's and transforms' wrappers, a bound method's self dropped
        bound = dict(signature.bind_partial(*args[: len(signature.parameters)]).arguments)
        bound.update({k: v for k, v in kwargs.items() if k in signature.parameters})
        return bound, set(signature.parameters)
    except (TypeError, ValueError):
        return {}, set()


def _named_parameters(fn) -> list[str]:
    try:
        return [
            p.name for p in inspect.signature(fn).parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return []


def _innermost_written(ip, call_text: str):
    """``checked_log`` for ``checkify.checkify(checked_log)(x)``: the function the user wrapped."""
    node = ast.parse(call_text, mode="eval").body.func
    while isinstance(node, ast.Call) and node.args:
        node = node.args[0]
    if isinstance(node, (ast.Name, ast.Attribute)):
        return eval(compile(ast.Expression(node), "<callee>", "eval"), ip.user_ns)  # noqa: S307
    return None


def _result(ip, call_text: str):
    """What the call returns, run on copies of any Flax NNX objects (the user's stay as they are)."""
    from flax import nnx

    fn, args, kwargs = _evaluated_call(ip, call_text)
    copies = [nnx.clone(a) if nnx.graph.is_graph_node(a) else a for a in args]
    return fn(*copies, **kwargs)


def _typable(expression: str) -> bool:
    """Python that names a value: names, attributes, subscripts by literal, method calls."""
    try:
        ast.parse(expression, mode="eval")
    except SyntaxError:
        return False
    return True


def name_problems(ip, call_text: str, report, transformed: bool = False) -> list[str]:
    bound, parameters = _arguments(ip, call_text)
    problems = []
    for name in report.input_names:
        if any(word in name for word in FORBIDDEN):
            problems.append(f"input {name!r}")
            continue
        expression = re.sub(r" \(.*\)$", "", name)
        if expression in parameters:
            continue
        try:
            eval(expression, dict(ip.user_ns), dict(bound))  # noqa: S307
        except Exception as exc:
            problems.append(f"input {name!r} does not evaluate ({type(exc).__name__}: {exc})")
    for name in report.output_names:
        if name == EQUINOX_MARKER:  # an output the library's jit adds, named as Equinox's own
            continue
        expression = re.sub(r" \(.*\)$", "", name)
        expression = re.sub(r"^(grad of|jacobian w\.r\.t\.) ", "", expression)
        if any(word in name for word in FORBIDDEN) or not _typable(expression):
            problems.append(f"output {name!r}")
    return problems + result_problems(ip, call_text, report, transformed)


def result_problems(ip, call_text: str, report, transformed: bool) -> list[str]:
    """Each output named ``result...`` reads, from what the call returns, an array of its type."""
    if transformed:
        return []  # the call's own result is not what -t traced
    result = _result(ip, call_text)
    bound, _ = _arguments(ip, call_text)
    problems = []
    for name, aval in zip(report.output_names, report.jaxpr.out_avals, strict=True):
        if not name.startswith("result") or " (" in name:
            continue
        try:
            value = eval(name, {**ip.user_ns, **bound, "result": result})  # noqa: S307
        except Exception as exc:
            problems.append(f"output {name!r} does not read the result ({type(exc).__name__}: {exc})")
            continue
        shape = getattr(value, "shape", None)
        if shape is not None and tuple(shape) != tuple(aval.shape):
            problems.append(f"output {name!r} has shape {tuple(shape)}, the jaxpr's {tuple(aval.shape)}")
    return problems


def title_problems(case, report) -> list[str]:
    written = list(case.title) + re.findall(r"-t (\w+)", case.line)
    return [f"title {report.name!r} drops {word}" for word in written if f"{word}(" not in report.name]


def heading_problems(report) -> list[str]:
    """Each equation is shown under the heading of the line that made it, or of none."""
    headed: dict[int, object] = {}
    problems = []
    for r in listing_records(report, eqns_only=False):
        if r.kind == "open":
            headed[r.depth] = None
        elif r.kind == "eqn":
            if r.opens_group:
                headed[r.depth] = r.source
            elif headed.get(r.depth) != r.source:
                shown = headed.get(r.depth)
                problems.append(f"{r.text!r} ({r.source}) is shown under {shown.label if shown else 'no heading'}")
    return problems[:5]


def text_problems(report) -> list[str]:
    from jaxmagic.render.jaxpr import JaxprView

    shown = JaxprView(report, max_eqns=2000).to_text()
    problems = [f"the listing shows {word!r}" for word in FORBIDDEN if word in shown]
    problems += [
        f"an equation with no outputs reads {line.strip()!r}"
        for line in shown.splitlines()
        if re.match(r"^\s*= ", line)
    ]
    return problems


def _call_of(line: str) -> str:
    return re.sub(r"^(-t \w+ )+", "", line)


def all_problems(corpus_shell, run, case) -> list[str]:
    ip, folder, written = corpus_shell
    if case.cell:
        cell = textwrap.dedent(case.cell).strip()
        result = run(f"%%jaxpr -o --max-eqns 2000 {case.line}\n{cell}")
        call = cell.splitlines()[-1]
    else:
        typed = f"_labels_report = %jaxpr -o --max-eqns 2000 {case.line}"
        written = written | {typed}  # a lambda written in the call is on this line
        result = run(typed)
        call = _call_of(case.line)
    assert result.error is None, f"{case.id}: {result.error!r}\n{result.stdout}"
    report = result.result if case.cell else ip.user_ns["_labels_report"]
    return (
        label_problems(ip, folder, written, report)
        + name_problems(ip, call, report, transformed="-t " in case.line)
        + title_problems(case, report)
        + text_problems(report)
        + heading_problems(report)
    )


@pytest.mark.parametrize("case", CORPUS + USER_FILE_CASES, ids=lambda c: c.id)
def test_every_label_is_the_users(corpus_shell, run, case):
    problems = all_problems(corpus_shell, run, case)
    assert problems == [], f"{case.id}: {case.line}\n" + "\n".join(problems)


def test_an_error_after_a_transform_shows_only_the_users_frames(corpus_shell, run):
    from tests.conftest import assert_no_internals

    result = run("%jaxpr -t grad until_big(1.0)")
    assert result.error is not None
    assert "until_big" in result.shown_traceback  # the user's own line, where the loop was written
    assert_no_internals(result.shown_traceback)


def test_an_equation_without_outputs_reads_as_jax_prints_it(corpus_shell, run):
    report = run("%jaxpr -o noisy(jnp.ones(2))").assert_ok().result
    ours = [r.text for r in listing_records(report) if r.primitive == "debug_print"]
    jax_lines = [line.strip() for line in report.text.splitlines() if "debug_print" in line]
    assert len(ours) == len(jax_lines) == 2
    for mine, theirs in zip(ours, jax_lines, strict=True):
        assert theirs.startswith("debug_print"), theirs  # JAX: no "=" where there is nothing on the left
        assert mine.startswith("debug_print[") and mine.endswith((" a", " b")), mine


def listing_records(report, eqns_only: bool = True):
    from jaxmagic.tracing.listing import listing

    records = listing(report.jaxpr, cell_namer=report.cell_namer)
    return [r for r in records if r.kind == "eqn" or not eqns_only]
