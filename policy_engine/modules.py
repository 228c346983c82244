"""Discovery by import: every module of a package registers what it defines (policies, scenarios, learners,
environments) when imported, so adding one is adding a module."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil

from policy_engine.extras import MissingExtra

# module name -> why it was not loaded (an extra it needs is not installed); registries quote these when asked
# for a name they do not hold, so `emulator train --algo rl-fc` without torch says which extra to install.
unavailable: dict[str, str] = {}


@functools.cache
def import_all(package: str) -> None:
    """Import every module of `package`, once per process; a module whose extra is missing is left out."""
    pkg = importlib.import_module(package)
    for mod in pkgutil.iter_modules(pkg.__path__):
        name = f"{package}.{mod.name}"
        try:
            importlib.import_module(name)
        except MissingExtra as e:
            unavailable[name] = str(e)


ALGORITHMS = "algorithms"


@functools.cache
def import_parts(part: str) -> None:
    """Import `algorithms.<family>.<part>` for every algorithm family that has one, once per process: `policy`
    (the served policies), `train` (the emulator's learners), `scenarios`, `env` (gymnasium environments). One
    folder per paper holds all of its parts; each registry imports only the part it lists, so the engine never
    imports a family's emulator side."""
    families = importlib.import_module(ALGORITHMS)
    for family in pkgutil.iter_modules(families.__path__):
        name = f"{ALGORITHMS}.{family.name}.{part}"
        if not family.ispkg or importlib.util.find_spec(name) is None:
            continue
        try:
            importlib.import_module(name)
        except MissingExtra as e:
            unavailable[name] = str(e)


def unavailable_note(package: str, part: str = "") -> str:
    """'' or a sentence naming the modules of `package` (and the families' `part` modules) left out for a missing
    extra, and why."""
    notes = [f"{name}: {why}" for name, why in sorted(unavailable.items())
             if name.startswith(package + ".") or (part and name.startswith(ALGORITHMS + ".")
                                                   and name.endswith("." + part))]
    return (" (not loaded: " + "; ".join(notes) + ")") if notes else ""
