"""A ``Profile`` as text and HTML, answer first: the line that takes the most device time and its
share, then the hottest lines, the rest and the kernels folded with their counts (the many
kernels one line made, as a Python loop unrolled at trace time makes them, as one row). Pure
functions of the profile."""

from __future__ import annotations

from jaxmagic.render.terminal import table
from jaxmagic.render.theme import escape
from jaxmagic.words.units import format_seconds

MAX_KERNELS = 12
TOP_LINES = 5  # lines shown before the fold
UNROLLED_FROM = 4  # kernels of one line from which they are shown as one row


def headline(profile) -> str:
    """``device time per call: 549 µs over 5 calls (wall 686 µs); 99.7% of it on your source lines``,
    or why there is nothing compiled to profile."""
    if profile.nothing_compiled:
        return f"nothing compiled to profile: {profile.nothing_compiled}"
    return (
        f"device time per call: {format_seconds(profile.device_seconds)} over {profile.calls} "
        f"call{'s' * (profile.calls != 1)} (wall {format_seconds(profile.wall_seconds)}); "
        f"{profile.attributed_share:.1%} of it on your source lines"
    )


def answer(profile) -> str:
    """The one line that answers where the time goes: ``In [3] line 2 takes 97.0% of the device
    time (1.34 ms per call): h = jnp.tanh(x @ w)``; the headline when no line was seen."""
    rows = list(_line_rows(profile))
    if not rows:
        return headline(profile)
    label, seconds, share, source, _ = rows[0]
    said = f"{label} takes {share:.1%} of the device time ({format_seconds(seconds)} per call)"
    return f"{said}: {source}" if source else said


def _line_rows(profile):
    total = profile.device_seconds or 1.0
    for label, seconds in profile.line_times.items():
        kernels = [k.name for k in profile.kernels if label in k.lines]
        yield label, seconds, seconds / total, profile.texts.get(label, ""), kernels


def _kernel_rows(profile) -> list[tuple[str, float, str]]:
    """(kernel, or ``N kernels`` for the many one line (or no line) made; seconds per call; its lines), hottest first."""
    rows = []
    for lines, kernels in profile.kernel_groups():
        where = ", ".join(lines) or "no source line"
        if len(kernels) >= UNROLLED_FROM:
            rows.append((f"{len(kernels)} kernels", sum(k.seconds for k in kernels), where))
        else:
            rows += [(k.name, k.seconds, where) for k in kernels]
    return sorted(rows, key=lambda row: -row[1])


def _unrolled_note(profile) -> str:
    """``; 50 of them from In [1] line 10``, for the line that made the most kernels, when it made
    ``UNROLLED_FROM`` or more (a Python loop unrolled at trace time makes one per pass; so can a
    line's forward and backward passes: which, the listing's equation counts say)."""
    groups = [(lines, ks) for lines, ks in profile.kernel_groups() if lines and len(ks) >= UNROLLED_FROM]
    if not groups:
        return ""
    lines, kernels = max(groups, key=lambda group: len(group[1]))
    return f"; {len(kernels)} of them from {', '.join(lines)}"


def text(profile) -> str:
    """The profile as aligned plain text, answer first."""
    rows = list(_line_rows(profile))
    if profile.nothing_compiled:
        return headline(profile)
    if not rows:
        return headline(profile) + "\n(the profiler saw no kernel of this call)"
    shown = rows[:TOP_LINES]
    lines = [
        answer(profile),
        headline(profile),
        table(
            ["share", "time", "line", "source"],
            [[f"{share:.1%}", format_seconds(seconds), label, source] for label, seconds, share, source, _ in shown],
            align=">><<",
        ),
    ]
    if len(rows) > TOP_LINES:
        rest = sum(share for _, _, share, _, _ in rows[TOP_LINES:])
        lines.append(f"… {len(rows) - TOP_LINES} more lines, {rest:.1%} of the time (the report's .line_times)")
    kernel_rows = _kernel_rows(profile)
    lines.append(f"kernels (fusions), hottest first{_unrolled_note(profile)}:")
    lines.append(
        table(
            None,
            [[name, format_seconds(seconds), "← " + where] for name, seconds, where in kernel_rows[:MAX_KERNELS]],
            align="<><",
            gap="  ",
        )
    )
    if len(kernel_rows) > MAX_KERNELS:
        lines.append(f"… {len(kernel_rows) - MAX_KERNELS} more (the report's .kernels holds them all)")
    return "\n".join(lines)


def _line_row_html(label, seconds, share, source, kernels) -> str:
    bar = f'<span class="jm-line-bar" style="width:{max(share * 100, 0.5):.1f}%"></span>'
    title = escape(", ".join(kernels) or "no kernel")
    return (
        f'<tr><td class="jm-num">{share:.1%}</td><td class="jm-num">{escape(format_seconds(seconds))}</td>'
        f'<td class="jm-barcell">{bar}</td><td title="{title}"><b>{escape(label)}</b></td>'
        f"<td><code>{escape(source)}</code></td></tr>"
    )


def html(profile) -> str:
    """The profile as HTML, answer first: the hottest lines with a bar each, the rest and the
    kernels folded (no JavaScript)."""
    if profile.nothing_compiled:
        return f'<div class="jm-profile"><div class="jm-summary">{escape(headline(profile))}</div></div>'
    rows = list(_line_rows(profile))
    header = (
        '<tr><th>share</th><th>time / call</th><th></th><th class="jm-left">line</th>'
        '<th class="jm-left">source</th></tr>'
    )
    shown = "".join(_line_row_html(*row) for row in rows[:TOP_LINES])
    rest = ""
    if len(rows) > TOP_LINES:
        share = sum(row[2] for row in rows[TOP_LINES:])
        rest = (
            f'<details class="jm-details"><summary class="jm-muted">{len(rows) - TOP_LINES} more lines · '
            f'{share:.1%} of the time</summary><table class="jm-table jm-lines">{header}'
            f"{''.join(_line_row_html(*row) for row in rows[TOP_LINES:])}</table></details>"
        )
    kernel_rows = _kernel_rows(profile)
    kernels = "".join(
        f'<tr><td><code>{escape(name)}</code></td><td class="jm-num">{escape(format_seconds(seconds))}</td>'
        f"<td>{escape(where)}</td></tr>"
        for name, seconds, where in kernel_rows[:MAX_KERNELS]
    )
    more = (
        f'<div class="jm-more">… {len(kernel_rows) - MAX_KERNELS} more kernels '
        f"(the report's .kernels holds them all)</div>"
        if len(kernel_rows) > MAX_KERNELS
        else ""
    )
    return (
        f'<div class="jm-profile"><div class="jm-summary jm-answer"><b>{escape(answer(profile))}</b></div>'
        f'<div class="jm-muted">{escape(headline(profile))}</div>'
        f'<table class="jm-table jm-lines">{header}{shown}</table>{rest}'
        f'<details class="jm-details"><summary class="jm-muted">kernels · {len(profile.kernels)} (fusions), '
        f"hottest first{escape(_unrolled_note(profile))}</summary>"
        f'<table class="jm-table jm-kernels"><tr><th>kernel</th><th>time / call</th>'
        f"<th>source lines fused into it</th></tr>{kernels}</table>{more}</details></div>"
    )
