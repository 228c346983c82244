"""The DSRAP scenarios: one episode = one seeded workload on the 16-cluster network, every manager's step through
a Driver's Route call. Policies declaring `dsrap-centralized` run as one manager over all nodes."""

from __future__ import annotations

from typing import Any, ClassVar

from emulator.drivers import Driver
from algorithms.dsrap.config import DsrapConfig
from algorithms.dsrap.sim import DsrapSim, EpisodeResult
from emulator.scenario import Scenario
from policy_engine.policy import ROUTE

CENTRALIZED = "dsrap-centralized"
APPROACHES = ("greedy", "fdl", "sdl", "bdl", "centralized")


class DsrapScenario(Scenario):
    family: ClassVar[str] = "dsrap"
    needs: ClassVar[str] = ROUTE
    metrics: ClassVar[tuple[str, ...]] = (
        "utility_rate", "cpu", "network", "hops", "abandoned_ordinary", "abandoned_io_intense",
        "abandoned_compute_intense", "abandoned_demanding", "abandoned_total")
    default_episodes: ClassVar[int] = 3
    default_policies: ClassVar[tuple[str, ...]] = APPROACHES

    def __init__(self, name: str, config: DsrapConfig):
        self.name = name
        self.config = config

    def make_sim(self, centralized: bool) -> DsrapSim:
        return DsrapSim(self.config, centralized=centralized, tag=self.name)

    def play(self, driver: Driver, seed: int, progress=None) -> EpisodeResult:
        sim = self.make_sim(CENTRALIZED in driver.capabilities)
        sim.reset(seed)
        route = driver.route
        while not sim.done:
            sim.step(route)
            if progress is not None:
                progress(sim.t)
        return sim.result()

    def run_episode(self, driver: Driver, seed: int) -> dict[str, float]:
        return self.play(driver, seed).metrics()

    def describe(self) -> dict[str, Any]:
        return self.config.as_dict()
