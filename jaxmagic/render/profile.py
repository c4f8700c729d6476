"""A ``Profile`` as text and HTML: the user's source lines by device time per call, hottest first,
and the kernels each line ended up in. Pure functions of the profile."""

from __future__ import annotations

from jaxmagic.render.terminal import table
from jaxmagic.render.theme import escape
from jaxmagic.units import format_seconds

MAX_KERNELS = 12


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


def _line_rows(profile):
    total = profile.device_seconds or 1.0
    for label, seconds in profile.line_times.items():
        kernels = [k.name for k in profile.kernels if label in k.lines]
        yield label, seconds, seconds / total, profile.texts.get(label, ""), kernels


def text(profile) -> str:
    """The profile as aligned plain text."""
    rows = list(_line_rows(profile))
    if profile.nothing_compiled:
        return headline(profile)
    if not rows:
        return headline(profile) + "\n(the profiler saw no kernel of this call)"
    lines = [
        headline(profile),
        table(
            ["share", "time", "line", "source"],
            [[f"{share:.1%}", format_seconds(seconds), label, source] for label, seconds, share, source, _ in rows],
            align=">><<",
        ),
        "kernels (fusions), hottest first:",
    ]
    lines.append(
        table(
            None,
            [
                [k.name, format_seconds(k.seconds), "← " + (", ".join(k.lines) or "no source line")]
                for k in profile.kernels[:MAX_KERNELS]
            ],
            align="<><",
            gap="  ",
        )
    )
    if len(profile.kernels) > MAX_KERNELS:
        lines.append(f"… {len(profile.kernels) - MAX_KERNELS} more (the report's .kernels holds them all)")
    return "\n".join(lines)


def html(profile) -> str:
    """The profile as an HTML table with a bar per line (no JavaScript)."""
    if profile.nothing_compiled:
        return f'<div class="jm-profile"><div class="jm-summary">{escape(headline(profile))}</div></div>'
    rows = []
    for label, seconds, share, source, kernels in _line_rows(profile):
        bar = f'<span class="jm-line-bar" style="width:{max(share * 100, 0.5):.1f}%"></span>'
        title = escape(", ".join(kernels) or "no kernel")
        rows.append(
            f'<tr><td class="jm-num">{share:.1%}</td><td class="jm-num">{escape(format_seconds(seconds))}</td>'
            f'<td class="jm-barcell">{bar}</td><td title="{title}"><b>{escape(label)}</b></td>'
            f"<td><code>{escape(source)}</code></td></tr>"
        )
    kernels = "".join(
        f'<tr><td><code>{escape(k.name)}</code></td><td class="jm-num">{escape(format_seconds(k.seconds))}</td>'
        f"<td>{escape(', '.join(k.lines) or 'no source line')}</td></tr>"
        for k in profile.kernels[:MAX_KERNELS]
    )
    more = (
        f'<div class="jm-more">… {len(profile.kernels) - MAX_KERNELS} more kernels '
        f"(the report's .kernels holds them all)</div>"
        if len(profile.kernels) > MAX_KERNELS
        else ""
    )
    return (
        f'<div class="jm-profile"><div class="jm-summary">{escape(headline(profile))}</div>'
        f'<table class="jm-table jm-lines"><tr><th>share</th><th>time / call</th><th></th><th>line</th>'
        f"<th>source</th></tr>{''.join(rows)}</table>"
        f'<details class="jm-nested"><summary><b>kernels</b> · {len(profile.kernels)} (fusions), hottest first'
        f'</summary><table class="jm-table jm-kernels"><tr><th>kernel</th><th>time / call</th>'
        f"<th>source lines fused into it</th></tr>{kernels}</table>{more}</details></div>"
    )
