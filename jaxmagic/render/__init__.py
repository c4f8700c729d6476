"""Renderers: each report to HTML, text and (for the recompile log) a live widget. Pure functions."""
