"""yarn-rl emulator: emulated clusters that ask the policy engine for decisions through the yarnrl.v1 protocol.

Scenarios register themselves in emulator.scenario; importing emulator.scenarios loads the built-in ones.
"""
