"""What every jaxmagic view shares: the scoped stylesheet and escaping (numbers are formatted by
``jaxmagic.words.units``).

Text colours come from JupyterLab's theme variables (``--jp-content-font-color*``), code colours
from jaxmagic's own light and dark palettes (JupyterLab's dark theme switches them), so the views
follow its light and dark themes with readable contrast; each has a fallback for pages without
them (nbconvert's classic template, a plain browser).

>>> escape('<b title="x">')
'&lt;b title=&quot;x&quot;&gt;'
"""

from __future__ import annotations

import html

from pygments.formatters import HtmlFormatter

from jaxmagic.render import palette
from jaxmagic.words.untrusted import for_markup

ROOT_CLASS = "jaxmagic"
CODE_COLUMN = 44  # characters: the narrowest a listing's code column gets (longer lines are cut to the width)
MONOSPACE_EM = 0.6  # a monospace character's width in em (0.55 to 0.6 in the usual code fonts)
TOKEN_PREFIX = "jm-t"

# Pygments' short token class -> its colour in ``palette.CODE``, at least 4.5:1 against JupyterLab's
# own backgrounds in both themes (JupyterLab's editor colours are not, for numbers and functions):
# checked in the browser tests.
_TOKEN_ROLES = {
    "k": "keyword",
    "kt": "type",
    "nf": "function",
    "nv": "variable",
    "na": "attribute",
    "nc": "function",
    "no": "meta",
    "nd": "meta",
    "nb": "keyword",
    "m": "number",
    "mh": "number",
    "mf": "number",
    "mi": "number",
    "s": "string",
    "s1": "string",
    "s2": "string",
    "c": "muted",
    "c1": "muted",
    "cm": "muted",
    "o": "meta",
    "gu": "muted",
}
DARK = 'body[data-jp-theme-light="false"]'  # JupyterLab's and Notebook 7's dark themes, nbconvert's too


def _token_css() -> str:
    light, dark = palette.css_variables(0), palette.css_variables(1)
    rules = [f".{ROOT_CLASS}{{{light}}}", f"{DARK} .{ROOT_CLASS}{{{dark}}}"]
    for cls, role in _TOKEN_ROLES.items():
        rules.append(f".{ROOT_CLASS} .{TOKEN_PREFIX}{cls}{{color:var(--jm-{role})}}")
    rules.append(f".{ROOT_CLASS} .{TOKEN_PREFIX}k{{font-weight:bold}}")
    return "\n".join(rules)


STYLESHEET = f"""
.{ROOT_CLASS}{{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:var(--jp-ui-font-size1,13px);
  color:var(--jp-content-font-color1,#212121);line-height:1.45;max-width:100%;overflow-x:auto}}
.{ROOT_CLASS} .jm-summary{{margin:2px 0 6px 0;color:var(--jp-content-font-color1,#212121)}}
.{ROOT_CLASS} .jm-summary b{{font-weight:600}}
.{ROOT_CLASS} .jm-answer{{font-weight:600}}
.{ROOT_CLASS} .jm-muted{{color:var(--jm-muted)}}
.{ROOT_CLASS} .jm-warn{{color:var(--jm-warning)}}
.{ROOT_CLASS} .jm-code,.{ROOT_CLASS} code,.{ROOT_CLASS} pre{{font-family:var(--jp-code-font-family,SFMono-Regular,Menlo,Consolas,monospace);
  font-size:var(--jp-code-font-size,13px)}}
.{ROOT_CLASS} .jm-plain{{display:none}}
.{ROOT_CLASS} .jm-listing{{margin:0;line-height:inherit;border-left:3px solid var(--jp-border-color2,#e0e0e0);padding:2px 0 2px 8px;
  background:var(--jp-cell-editor-background,#f7f7f7);border-radius:2px}}
.{ROOT_CLASS} .jm-l{{white-space:pre;display:flex;gap:2ch}}
.{ROOT_CLASS} .jm-l .jm-code{{flex:0 1 auto;min-width:{CODE_COLUMN}ch;overflow:hidden;text-overflow:ellipsis}}
.{ROOT_CLASS} .jm-l:not(.jm-eqn) .jm-code{{white-space:pre-wrap;overflow-wrap:anywhere}}
.{ROOT_CLASS} .jm-l .jm-value{{flex:0 0 auto}}
.{ROOT_CLASS} .jm-src{{color:var(--jm-muted);font-style:italic;font-family:var(--jp-code-font-family,monospace);
  font-size:var(--jp-code-font-size,13px);white-space:pre-wrap;overflow-wrap:anywhere}}
.{ROOT_CLASS} .jm-srcrow{{white-space:normal;margin-top:2px}}
.{ROOT_CLASS} details.jm-nested>summary{{cursor:pointer;white-space:pre;overflow:hidden;text-overflow:ellipsis;font-family:var(--jp-code-font-family,monospace);
  font-size:var(--jp-code-font-size,13px);color:var(--jm-muted)}}
.{ROOT_CLASS} details.jm-nested>summary:hover{{color:var(--jp-content-font-color1,#212121)}}
.{ROOT_CLASS} details>summary{{list-style:none}}
.{ROOT_CLASS} details>summary::-webkit-details-marker{{display:none}}
.{ROOT_CLASS} details>summary::before{{content:"▸ ";display:inline-block;width:2ch}}
.{ROOT_CLASS} details[open]>summary::before{{content:"▾ "}}
.{ROOT_CLASS}{{--jm-highlight:rgba(255,193,7,.38)}}
.{ROOT_CLASS} .jm-tnv.jm-def{{text-decoration:underline dotted}}
.{ROOT_CLASS} .jm-filter{{display:flex;flex-wrap:wrap;gap:1.5ch;margin:2px 0 4px 0;font-size:90%}}
.{ROOT_CLASS} .jm-filter label{{cursor:pointer;white-space:nowrap}}
.{ROOT_CLASS} .jm-eqn::after{{color:var(--jm-muted);font-style:italic}}
.{ROOT_CLASS} .jm-more{{font-style:italic;color:var(--jm-muted);white-space:pre}}
.{ROOT_CLASS} .jm-viewer-hint{{font-size:90%;margin:2px 0}}
.{ROOT_CLASS} .jm-viewer:has(details[open],[data-v]:hover) .jm-usage-hint{{visibility:hidden}}
.{ROOT_CLASS} .jm-kernel-source{{color:var(--jm-muted)}}
.{ROOT_CLASS} table.jm-table{{border-collapse:collapse;margin:4px 0;font-variant-numeric:tabular-nums}}
.{ROOT_CLASS} table.jm-table th,.{ROOT_CLASS} table.jm-table td{{padding:2px 10px;text-align:right;
  border-bottom:1px solid var(--jp-border-color2,#e0e0e0)}}
.{ROOT_CLASS} table.jm-table th:first-child,.{ROOT_CLASS} table.jm-table td:first-child{{text-align:left}}
.{ROOT_CLASS} table.jm-table th{{font-weight:600;color:var(--jp-content-font-color1,#212121)}}
.{ROOT_CLASS} table.jm-modes :is(th,td),.{ROOT_CLASS} table.jm-first-calls :is(th,td),
.{ROOT_CLASS} table.jm-memory :is(th,td),.{ROOT_CLASS} table.jm-cost :is(th,td){{white-space:nowrap}}
.{ROOT_CLASS} table.jm-first-calls th:last-child{{white-space:normal}}
.{ROOT_CLASS} .jm-card{{border:1px solid var(--jp-border-color1,#bdbdbd);border-left:4px solid var(--jm-warning);
  border-radius:3px;padding:6px 10px;margin:4px 0;background:var(--jp-layout-color1,#fff)}}
.{ROOT_CLASS} .jm-card h4{{margin:0 0 4px 0;font-size:var(--jp-ui-font-size2,15px)}}
.{ROOT_CLASS} pre.jm-block{{margin:4px 0;padding:6px 8px;background:var(--jp-cell-editor-background,#f7f7f7);
  border-radius:2px;overflow-x:auto;white-space:pre}}
.{ROOT_CLASS} svg.jm-bars{{vertical-align:middle;overflow:visible}}
.{ROOT_CLASS} .jm-bar{{fill:var(--jp-brand-color1,#1976d2)}}
.{ROOT_CLASS} .jm-bar-eager{{fill:var(--jp-content-font-color3,#9e9e9e)}}
.{ROOT_CLASS} td.jm-barcell{{width:10em}}
.{ROOT_CLASS} .jm-line-bar{{display:inline-block;height:.75em;background:var(--jp-brand-color1,#1976d2)}}
.{ROOT_CLASS} td.jm-num{{text-align:right;white-space:nowrap}}
.{ROOT_CLASS} table.jm-lines :is(th,td):nth-child(n+4){{text-align:left}}
.{ROOT_CLASS} table.jm-lines td:nth-child(-n+4){{white-space:nowrap}}
.{ROOT_CLASS} table.jm-table th.jm-left,.{ROOT_CLASS} table.jm-legend td{{text-align:left}}
.{ROOT_CLASS} table.jm-peak-lines :is(th,td):nth-child(n+4){{text-align:left}}
.{ROOT_CLASS} table.jm-peak-lines td:nth-child(-n+5){{white-space:nowrap}}
.{ROOT_CLASS} .jm-value{{color:var(--jm-muted);font-family:var(--jp-code-font-family,monospace)}}
.{ROOT_CLASS} .jm-nonfinite{{color:var(--jm-error);font-weight:600}}
.{ROOT_CLASS} .jm-bar-trace{{fill:var(--jm-phase-trace)}}
.{ROOT_CLASS} .jm-bar-lower{{fill:var(--jm-phase-lower)}}
.{ROOT_CLASS} .jm-bar-compile{{fill:var(--jm-phase-compile)}}
.{ROOT_CLASS} .jm-bar-run{{fill:var(--jm-phase-run)}}
.{ROOT_CLASS} .jm-whisker{{stroke:var(--jp-content-font-color1,#212121);stroke-width:1}}
.{ROOT_CLASS} .jm-key{{white-space:nowrap;font-weight:normal;margin-left:6px}}
.{ROOT_CLASS} ul.jm-warnings,.{ROOT_CLASS} ul.jm-notes{{margin:4px 0;padding-left:18px}}
.{ROOT_CLASS} .jm-break-even{{margin:4px 0}}
.{ROOT_CLASS} .jm-recompile-counts{{display:flex;flex-wrap:wrap;gap:6px;margin:2px 0 6px 0}}
.{ROOT_CLASS} .jm-recompile-count{{border:1px solid var(--jp-border-color2,#e0e0e0);border-radius:10px;padding:0 8px}}
.{ROOT_CLASS} .jm-recompile-count.jm-selected{{border-color:var(--jp-brand-color1,#1976d2)}}
.{ROOT_CLASS} table.jm-recompile-table td{{vertical-align:top}}
.{ROOT_CLASS} table.jm-recompile-table th.jm-left{{text-align:left}}
.{ROOT_CLASS} table.jm-recompile-table td.jm-causes{{text-align:left;max-width:70ch}}
.{ROOT_CLASS} table.jm-recompile-table td.jm-site,.{ROOT_CLASS} table.jm-recompile-table td.jm-fn{{text-align:left;white-space:nowrap}}
.{ROOT_CLASS} .jm-cause .jm-kind{{display:inline-block;min-width:9ch;font-size:85%;color:var(--jm-muted)}}
.{ROOT_CLASS} .jm-cause-first_call{{color:var(--jm-muted)}}
.{ROOT_CLASS} .jm-cause-unknown .jm-kind{{color:var(--jm-error)}}
.{ROOT_CLASS} .jm-advice{{color:var(--jm-advice);font-size:90%}}
.{ROOT_CLASS} details.jm-raw>summary{{cursor:pointer;color:var(--jm-muted);font-size:85%}}
.{ROOT_CLASS} .jm-persistent-hit{{color:var(--jm-advice);font-size:85%}}
.{ROOT_CLASS} .jm-recompile-rows{{max-height:28em;overflow:auto}}
.{ROOT_CLASS} .jm-card.jm-error{{border-left-color:var(--jm-error)}}
.{ROOT_CLASS} .jm-card.jm-warning{{border-left-color:var(--jm-warning)}}
.{ROOT_CLASS} .jm-badge{{display:inline-block;font-size:75%;font-weight:600;text-transform:uppercase;letter-spacing:.04em;
  padding:0 6px;border-radius:8px;color:var(--jm-on-badge);background:var(--jm-warning);vertical-align:middle}}
.{ROOT_CLASS} .jm-badge.jm-error{{background:var(--jm-error)}}
.{ROOT_CLASS} .jm-pitfall-id{{font-weight:normal;font-size:80%;font-family:var(--jp-code-font-family,monospace)}}
.{ROOT_CLASS} .jm-where{{margin:2px 0 4px 0}}
.{ROOT_CLASS} .jm-where .jm-where-code{{margin-left:1ch;white-space:pre}}
.{ROOT_CLASS} .jm-diagnosis p.jm-explanation{{margin:4px 0;max-width:100ch}}
.{ROOT_CLASS} .jm-fix-note,.{ROOT_CLASS} .jm-alternative{{margin:4px 0 0 0}}
.{ROOT_CLASS} .jm-fix>b{{margin-right:1ch}}
.{ROOT_CLASS} .jm-fix-note{{display:inline}}
.{ROOT_CLASS} .jm-footer{{font-size:85%;margin-top:4px}}
{_token_css()}
"""


def plain_only(text: str) -> str:
    """``text`` shown only where the stylesheet is not: in an untrusted notebook, whose sanitizer
    removes every ``<style>``, a separator that spacing and columns give otherwise.

    >>> plain_only(" · ")
    '<span class="jm-plain"> · </span>'
    """
    return f'<span class="jm-plain">{escape(text)}</span>'


def style_tag() -> str:
    """The ``<style>`` element every view starts with (scoped under ``.jaxmagic``)."""
    return f"<style>{STYLESHEET}</style>"


def escape(text: object) -> str:
    r"""HTML-escape anything user-controlled before it reaches markup (quotes included).

    >>> escape("a:f32[3]"), escape("a\u202eb")
    ('a:f32[3]', 'a\\u202eb')
    """
    if type(text) is str and text.isascii() and text.isprintable():  # most of a listing: nothing to show escaped
        if "&" in text or "<" in text or ">" in text or '"' in text or "'" in text:
            return html.escape(text, quote=True)
        return text  # nothing html.escape would change (five searches, not five copies)
    return html.escape(for_markup(text), quote=True)


def html_formatter() -> HtmlFormatter:
    """A Pygments formatter emitting spans with jaxmagic's token classes, no wrapper."""
    return HtmlFormatter(nowrap=True, classprefix=TOKEN_PREFIX)
