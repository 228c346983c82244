"""gymnasium environments over the emulator's simulators. Every module here registers its environments when
imported, and importing this package imports them all: `import emulator.envs; gymnasium.make("yarnrl/...")`."""

from policy_engine.extras import require
from policy_engine.modules import import_all, import_parts

require("gymnasium", extra="emulator", feature="the gymnasium environments (emulator.envs)")

import_all(__name__)
import_parts("env")
