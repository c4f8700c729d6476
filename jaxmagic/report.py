"""The one thing every report shares: it shows itself in IPython through its renderer module.

A report is a plain object with documented attributes; ``_repr_mimebundle_`` returns
``text/plain`` and ``text/html`` together (rich-style), importing the renderer only then.
A renderer module has two pure functions: ``html(report) -> str`` and
``text(report, *, color=False) -> str``. A renderer that turns its report into blocks
(``jaxmagic.render.blocks``) also has ``blocks(report)``, and takes them as ``shown=`` in both:
the mime bundle then makes the blocks once and walks them twice.

>>> import jax.numpy as jnp
>>> from jaxmagic import trace, Call
>>> report = trace(Call(jnp.sin, (jnp.ones(2),), {}))
>>> sorted(report._repr_mimebundle_())
['text/html', 'text/plain']
"""

from __future__ import annotations

import importlib
import os
from typing import Iterable


class Report:
    """Base of ``JaxprReport``, ``Comparison``, ``RecompileLog`` and ``Diagnosis``."""

    _renderer: str = ""  # module path of the renderer: ``jaxmagic.render.<name>``

    def _repr_mimebundle_(self, include=None, exclude=None):
        """``text/plain`` and ``text/html`` together, honouring IPython's include / exclude."""
        renderer = importlib.import_module(self._renderer)
        wanted = [
            m for m in ("text/plain", "text/html") if (not include or m in include) and not (exclude and m in exclude)
        ]
        if not wanted:
            return {}
        if not hasattr(renderer, "blocks"):
            renderers = {"text/plain": self.to_text, "text/html": self.to_html}
            return {mime: renderers[mime]() for mime in wanted}
        shown = renderer.blocks(self)  # once, for both views
        renderers = {"text/plain": renderer.text, "text/html": renderer.html}
        return {mime: renderers[mime](self, shown=shown) for mime in wanted}

    def to_html(self) -> str:
        """The report's HTML view (self-contained: scoped CSS, no JavaScript)."""
        return importlib.import_module(self._renderer).html(self)

    def to_text(self, *, color: bool = False) -> str:
        """The report's text view (ANSI colours with ``color=True``)."""
        return importlib.import_module(self._renderer).text(self, color=color)

    def save_html(self, path, *, inputs: Iterable = ()) -> str:
        """Write the report as a standalone HTML page (no script, nothing fetched) to ``path``,
        atomically (``jaxmagic.files``), never over one of ``inputs``; returns the path written."""
        from jaxmagic.files import write_atomically

        page = importlib.import_module(self._renderer).page(self)
        return write_atomically(os.fspath(path), page, inputs=inputs)
