"""DSRAP (DSRAP, Zhang, Lesser & Shenoy 2008): 16 shared clusters, 4 entry clusters, four task types; heavy
and light load. Parameters and the values the paper leaves open: algorithms/dsrap/config.py."""

from __future__ import annotations

from algorithms.dsrap.config import DsrapConfig
from algorithms.dsrap.scenario import DsrapScenario
from emulator.scenario import register_scenario


def _factory(load: str):
    def make(**params) -> DsrapScenario:
        return DsrapScenario(f"dsrap-{load}", DsrapConfig(load=load).with_params(**params))

    return make


register_scenario("dsrap-heavy", "DSRAP: 16 clusters, heavy load; utility rate, CPU / network "
                  "utilization, hops, abandoned tasks", _factory("heavy"))
register_scenario("dsrap-light", "DSRAP: 16 clusters, light load (half the heavy rates); utility rate, "
                  "CPU / network utilization, hops, abandoned tasks", _factory("light"))
