"""gymnasium environments over the emulator's simulators. Every module here registers its environments when
imported, and importing this package imports them all: `import emulator.envs; gymnasium.make("yarnrl/...")`."""

import importlib
import pkgutil

for _mod in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_mod.name}")
