"""Discovery by import: every module of a package registers what it defines (policies, scenarios, learners,
environments) when imported, so adding one is adding a module."""

from __future__ import annotations

import functools
import importlib
import pkgutil


@functools.cache
def import_all(package: str) -> None:
    """Import every module of `package`, once per process."""
    pkg = importlib.import_module(package)
    for mod in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{package}.{mod.name}")
