"""Every colour that carries a meaning in the views, named by that meaning, each with its shade
for a light and for a dark background (``(light, dark)``). The stylesheet (``theme``) turns each
name into a CSS variable, ``--jm-<name>``; the rest of the stylesheet takes JupyterLab's own theme
colours (text, borders, backgrounds, and its brand colour for the bar of a measured figure).

One meaning per colour:

- ``CODE``: the kinds of code token. None takes the hue of a status, and no two share a hue
  (keywords and variables are the text's own colour: keywords bold).
- ``STATUS``: what the views say of the user's code: red an error, orange a warning, green advice
  that helps. As text, each is at least 4.5:1 on JupyterLab's backgrounds, in both themes (its own
  ``--jp-warn-color0`` and ``--jp-success-color0`` are not, on its light theme).
- ``PHASES``: the parts of a first call in ``%jitcompare``'s bars (trace, lower, compile, run),
  shown with a legend: hues from Okabe and Ito's palette for colour-blind readers, told apart by
  lightness too, none a status's hue.

>>> sorted(STATUS)
['advice', 'error', 'on-badge', 'warning']
>>> all(len(shades) == 2 for shades in {**CODE, **STATUS, **PHASES}.values())
True
"""

from __future__ import annotations

CODE = {
    "keyword": ("#212121", "#e6e6e6"),
    "type": ("#00696f", "#5fd3d9"),
    "function": ("#0000d0", "#9ab8ff"),
    "variable": ("#212121", "#e6e6e6"),
    "attribute": ("#6b5a4a", "#c9b8a8"),
    "number": ("#a0005a", "#ff8ac4"),
    "meta": ("#7b1fb0", "#d9b0ff"),
    "string": ("#5c5c00", "#d6d66a"),
    "muted": ("#555555", "#b3b3b3"),  # secondary text: labels, counts, source rows, comments
}

STATUS = {
    "warning": ("#a65000", "#ffa94d"),  # a warning: its text, its badge, its card's edge
    "error": ("#c62828", "#ff8a80"),  # an error, a NaN, a cause not found
    "advice": ("#1b5e20", "#81c784"),  # advice that helps, a cache that served
    "on-badge": ("#ffffff", "#111111"),  # text on a badge of a warning or an error
}

PHASES = {
    "trace": ("#cc79a7", "#e0a3c6"),  # reddish purple
    "lower": ("#56b4e9", "#a8dcfa"),  # sky blue
    "compile": ("#0072b2", "#3ea0e0"),  # blue, darker than lower
    "run": ("#303030", "#f5f5f5"),  # near the text's own colour: the call itself
}


def css_variables(side: int) -> str:
    """Every colour as a CSS variable for one side (0: light, 1: dark).

    >>> css_variables(0).split(";")[0]
    '--jm-keyword:#212121'
    """
    named = {**CODE, **STATUS, **{f"phase-{name}": shades for name, shades in PHASES.items()}}
    return ";".join(f"--jm-{name}:{shades[side]}" for name, shades in named.items())
