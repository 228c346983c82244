"""Optional dependencies, grouped as pyproject.toml's extras, and the one-line error when one is missing.

The core install (`pip install yarn-rl`) serves every policy on numpy. What else a feature needs comes with an
extra: `[webhdfs]` (HDFS block locations), `[emulator]` (emulated clusters, gymnasium environments, plots),
`[train]` (torch, for RL-FC training), `[test]`, `[all]`. A module that needs an extra calls `require` before
importing it, so a missing one reads as one sentence naming the extra rather than a traceback.
"""

from __future__ import annotations

import importlib.util


class MissingExtra(ImportError):
    """A feature's optional dependency is not installed; the message names the extra that provides it."""


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # sys.modules[module] is None: import blocked on purpose
        return False


def require(*modules: str, extra: str, feature: str) -> None:
    """Raise MissingExtra unless every module in `modules` can be imported."""
    missing = [m for m in modules if not _importable(m)]
    if missing:
        raise MissingExtra(f"{feature} needs {', '.join(missing)}, which the core install leaves out: "
                           f"pip install 'yarn-rl[{extra}]' (or, in a checkout, pip install -e '.[{extra}]')")
