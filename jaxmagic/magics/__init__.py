"""The IPython layer: registers jaxmagic's magics on a shell, and removes every trace of them again.

Each magic family lives in its own module with its own ``Magics`` class; each may also hook into
the shell (events, exception handlers, JAX listeners) through ``install(shell)`` /
``uninstall(shell)`` functions, which ``load`` and ``unload`` call in order.
"""

from __future__ import annotations

import importlib

# Modules of this package that define a ``Magics`` class (named here; None for a module that only
# hooks into the shell) and, optionally, ``install(shell)`` / ``uninstall(shell)`` for the hooks
# they add to the session.
PARTS = {
    "jaxmagic.magics.echo": None,
    "jaxmagic.magics.jaxpr": "JaxprMagics",
    "jaxmagic.magics.jitcompare": "JitCompareMagics",
    "jaxmagic.magics.doctor": "DoctorMagics",
    "jaxmagic.magics.recompiles": "RecompilesMagics",
}


def _parts():
    for module_name, class_name in PARTS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        yield module, getattr(module, class_name) if class_name else None


def load(shell) -> None:
    """Register the magics (replacing any earlier registration) and install each part's hooks."""
    check_shell(shell, "load_ipython_extension")
    unload(shell)
    for module, magics_class in _parts():
        if magics_class is not None:
            shell.register_magics(magics_class)
        install = getattr(module, "install", None)
        if install is not None:
            install(shell)


def unload(shell) -> None:
    """Remove jaxmagic's magics and hooks from ``shell``; safe to call when nothing is loaded."""
    check_shell(shell, "unload_ipython_extension")
    manager = shell.magics_manager
    for module, magics_class in reversed(list(_parts())):
        uninstall = getattr(module, "uninstall", None)
        if uninstall is not None:
            uninstall(shell)
        if magics_class is None:
            continue
        for kind, names in magics_class.magics.items():
            for name in names:
                registered = manager.magics[kind].get(name)
                owner = getattr(registered, "__self__", None)
                if owner is not None and type(owner).__module__ == magics_class.__module__:
                    del manager.magics[kind][name]
        manager.registry.pop(magics_class.__name__, None)


def check_shell(shell, called: str) -> None:
    """A ``TypeError`` saying what is expected when ``shell`` is not an IPython shell.

    >>> check_shell(None, "load_ipython_extension")
    Traceback (most recent call last):
    TypeError: load_ipython_extension takes the IPython shell, not None: in IPython or Jupyter run %load_ext jaxmagic (or call jaxmagic.load_ipython_extension(get_ipython()))
    """
    if not all(hasattr(shell, name) for name in ("register_magics", "magics_manager", "events")):
        raise TypeError(
            f"{called} takes the IPython shell, not {shell!r:.80}: in IPython or Jupyter run %load_ext jaxmagic "
            "(or call jaxmagic.load_ipython_extension(get_ipython()))"
        )
