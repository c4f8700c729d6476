"""Tracing a user's call: resolving what the call names, running its cell, tracing it
and reading the jaxpr back to the user's own lines.
"""
