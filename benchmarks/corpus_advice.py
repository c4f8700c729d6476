"""What jaxmagic advises on the shared corpus, case by case, for a person to read against the case
(its verdict — right, wrong, unhelpful, silent — is a reader's, not a script's):

- every trap (a case whose call raises): the cell run in a real IPython shell with jaxmagic
  loaded, what the shell showed, and ``jaxmagic.diagnose`` of the exception (pitfall,
  explanation, fix, whether it was checked and what the check found);
- every case that compiles more than once (tagged ``recompile``): ``%%recompiles`` over its call,
  the text it shows (causes and advice);
- with ``--magics``, also ``%jaxpr`` over the traps (what the magic says where the call fails
  under its jit).

    python benchmarks/corpus_advice.py --out advice.md          # every trap and recompile case
    python benchmarks/corpus_advice.py --only jax-docs/errors   # the cases whose id starts so
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.corpus import CASES, Case


def _shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    if "jaxmagic" not in shell.extension_manager.loaded:
        shell.run_line_magic("load_ext", "jaxmagic")
    return shell


def _run(shell, source: str):
    """(the exception raised or None, what was shown as text)."""
    from IPython.utils.capture import capture_output

    with capture_output() as captured:
        outcome = shell.run_cell(source, store_history=True)
    shown = [captured.stdout, captured.stderr]
    shown += [output.data.get("text/plain", "") for output in captured.outputs]
    return outcome.error_in_exec or outcome.error_before_exec, "\n".join(part for part in shown if part.strip())


def _clip(text: str, limit: int = 2500) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


def _card_text(found) -> str:
    """The card's words as it shows them: the fix (code, its note, its check) only where there is one."""
    parts = [found.title, found.explanation]
    if found.fix or found.fix_note:
        parts += ["--- fix ---", str(found.fix_note), found.fix or "(no code: the fix is in words)"]
        parts += ["--- check ---", str(found.check_note)] if str(found.check_note) else []
    else:
        parts.append("--- no fix shown ---")
    return "\n".join(part for part in parts if part)


def trap(shell, case: Case, magics: bool) -> list[str]:
    import jaxmagic

    out = [f"### {case.id} ({case.library}; raises {case.raises}; {case.origin})", "", "```python", case.call, "```"]
    error, _ = _run(shell, case.setup)
    if error is not None:
        return out + [f"setup failed: {error!r}", ""]
    error, shown = _run(shell, case.call)
    out += [f"raised: {type(error).__name__ if error else 'nothing'}", "", "shown:", "```text", _clip(shown), "```"]
    found = jaxmagic.diagnose(error) if error is not None else None
    if found is None:
        out += ["diagnose: None (no card)", ""]
    else:
        out += [
            f"diagnose: pitfall `{found.pitfall}`, checked={found.checked}",
            "",
            "```text",
            _clip(_card_text(found)),
            "```",
        ]
        for label, code in found.alternatives:  # as the card shows it: no code block where there is no code
            out += [f"alternative: {label}"] + (["```python", _clip(code, 800), "```"] if code else [])
    if magics:
        _, shown = _run(shell, f"%jaxpr --plain {case.call}")
        out += ["%jaxpr:", "```text", _clip(shown, 1500), "```"]
    return out + [""]


def recompiles(shell, case: Case) -> list[str]:
    out = [f"### {case.id} ({case.library}; {case.origin})", "", "```python", case.call, "```"]
    error, _ = _run(shell, case.setup)
    if error is not None:
        return out + [f"setup failed: {error!r}", ""]
    error, shown = _run(shell, f"%%recompiles --plain\n{case.call}\n")
    if error is not None:
        out.append(f"raised: {error!r}"[:300])
    return out + ["```text", _clip(shown, 4000), "```", ""]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="cases whose id starts with one of these (comma-separated)")
    parser.add_argument("--magics", action="store_true", help="also run %%jaxpr over each trap")
    parser.add_argument("--out", default="", help="write the markdown here (default: print it)")
    args = parser.parse_args(argv)
    chosen = [case for case in CASES if case.available]
    if args.only:
        chosen = [case for case in chosen if case.id.startswith(tuple(args.only.split(",")))]
    shell = _shell()
    lines = ["# jaxmagic's advice on the corpus", "", "## Traps", ""]
    for case in chosen:
        if case.raises:
            lines += trap(shell, case, args.magics)
    lines += ["## Recompilations", ""]
    for case in chosen:
        if "recompile" in case.tags:
            lines += recompiles(shell, case)
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            out.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
