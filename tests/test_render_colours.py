"""One meaning per colour (``jaxmagic.render.palette``): code tokens of different kinds differ in
hue, and none takes the hue of a status (an error, a warning, advice); the phases of a first call
differ from each other and from every status; a status's colour is used only by rules of that
status; and every colour that is text keeps 4.5:1 against JupyterLab's light and dark backgrounds."""

import colorsys
import re

import pytest

from jaxmagic.render import palette, theme

BACKGROUNDS = ("#ffffff", "#111111")  # JupyterLab's light and dark output backgrounds


def _hue_and_saturation(colour: str) -> tuple[float, float]:
    r, g, b = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    h, _, s = colorsys.rgb_to_hls(r, g, b)
    return h * 360, s


def _apart(a: float, b: float) -> float:
    return min(abs(a - b), 360 - abs(a - b))


def _contrast(one: str, other: str) -> float:
    def luminance(colour: str) -> float:
        channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(one), luminance(other)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _coloured(shades: dict, side: int) -> dict[str, float]:
    """Each name's hue, for the shades that are colours (not greys)."""
    return {
        name: _hue_and_saturation(s[side])[0] for name, s in shades.items() if _hue_and_saturation(s[side])[1] > 0.3
    }


STATUSES = ("error", "warning", "advice")


@pytest.mark.parametrize("side", [0, 1], ids=["light", "dark"])
@pytest.mark.parametrize("group", ["CODE", "PHASES"])
def test_each_colour_means_one_thing(group, side):
    coloured = _coloured(getattr(palette, group), side)
    statuses = {name: hue for name, hue in _coloured(palette.STATUS, side).items() if name in STATUSES}
    assert len(statuses) == 3 and len(coloured) >= 3
    names = sorted(coloured)
    for i, one in enumerate(names):
        for other in names[i + 1 :]:
            assert _apart(coloured[one], coloured[other]) >= 25 or group == "PHASES", (one, other)
        for status, hue in statuses.items():
            assert _apart(coloured[one], hue) >= 25, (one, status)
    for i, one in enumerate(sorted(statuses)):  # the statuses apart from each other too
        for other in sorted(statuses)[i + 1 :]:
            assert _apart(statuses[one], statuses[other]) >= 25, (one, other)


@pytest.mark.parametrize("side", [0, 1], ids=["light", "dark"])
def test_phases_are_told_apart_without_hue(side):
    """Colour-blind readers: every two phases differ in lightness by at least 1.3:1."""
    shades = [s[side] for s in palette.PHASES.values()]
    for i, one in enumerate(shades):
        for other in shades[i + 1 :]:
            assert _contrast(one, other) >= 1.3, (one, other)


@pytest.mark.parametrize("side", [0, 1], ids=["light", "dark"])
def test_every_colour_of_text_keeps_its_contrast(side):
    texts = {**palette.CODE, **{name: palette.STATUS[name] for name in STATUSES}}
    for name, shades in texts.items():
        assert _contrast(shades[side], BACKGROUNDS[side]) >= 4.5, name
    badge = palette.STATUS["on-badge"][side]
    for name in ("warning", "error"):
        assert _contrast(badge, palette.STATUS[name][side]) >= 4.5, name


@pytest.mark.parametrize("status", STATUSES)
def test_a_status_colour_is_used_only_by_its_own_rules(status):
    selectors = {"warning": r"\.jm-(warn|warning|card|badge)\b", "error": r"\.jm-(error|nonfinite|cause-unknown)\b",
                 "advice": r"\.jm-(advice|persistent-hit)\b"}[status]  # fmt: skip
    rules = [rule.replace("\n", "") for rule in theme.STYLESHEET.split("}") if f"var(--jm-{status})" in rule]
    assert rules
    for rule in rules:
        assert re.search(selectors, rule.split("{")[0]), rule


def test_every_token_kind_has_a_colour():
    for role in set(theme._TOKEN_ROLES.values()):
        assert role in palette.CODE, role


def test_the_recompile_panel_says_stopped_in_the_warning_colour_of_each_theme():
    """The live panel's "stopped" chip sits outside the views' root: its colours are the palette's
    own (JupyterLab's ``--jp-warn-color0`` is under 4.5:1 on its light theme)."""
    from jaxmagic.render import panel

    chip = [rule for rule in panel._COMPACT.split("}") if "jm-recompile-stopped" in rule]
    light = next(r for r in chip if not r.startswith(theme.DARK))
    dark = next(r for r in chip if r.startswith(theme.DARK))
    assert "--jp-warn-color" not in panel._COMPACT
    assert f"color:{palette.STATUS['warning'][0]}" in light and f"color:{palette.STATUS['warning'][1]}" in dark
    for side, background in enumerate(BACKGROUNDS):
        assert _contrast(palette.STATUS["warning"][side], background) >= 4.5
