"""One meaning per colour in the views' stylesheet: code tokens of different kinds differ in hue,
and none takes the hue of an error (red), a warning (orange) or advice (green); orange marks
warnings only."""

import colorsys
import re

import pytest

from jaxmagic.render import theme

STATUS_HUES = {"error": 4, "warning": 27, "advice": 123}  # degrees, of #d32f2f, #f57c00, #1b5e20


def _hue_and_saturation(colour: str) -> tuple[float, float]:
    r, g, b = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    h, _, s = colorsys.rgb_to_hls(r, g, b)
    return h * 360, s


def _apart(a: float, b: float) -> float:
    return min(abs(a - b), 360 - abs(a - b))


@pytest.mark.parametrize("side", [0, 1], ids=["light", "dark"])
def test_code_colours_mean_one_thing_each(side):
    coloured = {
        role: _hue_and_saturation(colours[side])
        for role, colours in theme._ROLE_COLOURS.items()
        if _hue_and_saturation(colours[side])[1] > 0.3  # a colour, not a grey
    }
    assert len(coloured) >= 5
    roles = sorted(coloured)
    for i, one in enumerate(roles):
        for other in roles[i + 1 :]:
            assert _apart(coloured[one][0], coloured[other][0]) >= 25, (one, other)
        for status, hue in STATUS_HUES.items():
            assert _apart(coloured[one][0], hue) >= 25, (one, status)


def test_orange_appears_only_in_warning_rules():
    orange = ("warn-color", "#bf360c", "#f57c00")
    rules = [rule for rule in theme.STYLESHEET.splitlines() if any(c in rule for c in orange)]
    assert rules
    for rule in rules:
        selectors = rule.split("{")[0] if "{" in rule else ""
        assert re.search(r"\.jm-(warn|warning|card|badge)\b", selectors) or not selectors, rule


def test_every_token_kind_has_a_role_with_a_colour():
    for role in set(theme._TOKEN_ROLES.values()):
        assert role in theme._ROLE_COLOURS, role
