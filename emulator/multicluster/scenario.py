"""Scenario classes of the multi-cluster family: one episode = one seeded workload routed job by job via a Driver.

Every routing decision is one `driver.route(RouteObservation)`; every outcome (JobFinished, DeadlineMissed) goes
to `driver.report([...])` before the next decision, so an engine behind gRPC sees what an in-process one sees.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict
from typing import Any, ClassVar

from emulator.drivers import Driver
from emulator.multicluster import metrics
from emulator.multicluster.sim import FIFO, HALTED_FIRST, EpisodeResult, Federation, MultiClusterSim
from emulator.multicluster.workload import ArrivalPattern, JobProfile
from emulator.scenario import Scenario
from policy_engine.policy import ROUTE


def pattern_with(pattern: ArrivalPattern, params: dict[str, Any]) -> ArrivalPattern:
    """`pattern` with some parameters replaced; unknown names and non-numbers are refused with a clear error."""
    fields = {f.name: f for f in dataclasses.fields(ArrivalPattern) if f.name != "kind"}
    values = {}
    for key, raw in params.items():
        if key not in fields:
            raise ValueError(f"unknown parameter {key!r}")
        default = getattr(pattern, key)
        try:
            value = type(default)(raw)
        except (TypeError, ValueError):
            raise ValueError(f"parameter {key} must be a number, not {raw!r}") from None
        if isinstance(default, int) and value != float(raw):
            raise ValueError(f"parameter {key} must be an integer, not {raw!r}")
        values[key] = value
    return dataclasses.replace(pattern, **values)


class MultiClusterScenario(Scenario):
    """Base: holds the federation, workload and local scheduler; subclasses say which metrics they report."""

    family: ClassVar[str] = "multicluster"
    needs: ClassVar[str] = ROUTE
    default_episodes: ClassVar[int] = 50
    local_scheduler: ClassVar[str] = FIFO
    history: ClassVar[int] = 100

    def __init__(self, name: str, federation: Federation, pattern: ArrivalPattern, profile: JobProfile,
                 n_jobs: int, choices: dict[str, str] | None = None):
        self.name = name
        self.federation = federation
        self.pattern = pattern
        self.profile = profile
        self.n_jobs = n_jobs
        self.choices = choices or {}

    def make_sim(self) -> MultiClusterSim:
        return MultiClusterSim(self.federation, self.pattern, self.profile, self.n_jobs,
                               local_scheduler=self.local_scheduler, history=self.history, tag=self.name)

    def play(self, driver: Driver, seed: int, sim: MultiClusterSim | None = None) -> EpisodeResult:
        """Run one episode to the end; every decision through `driver.route`, every outcome through `report`."""
        sim = sim or self.make_sim()
        obs = sim.reset(seed)
        while obs is not None:
            events = sim.take_events()
            if events:
                driver.report(events)
            obs = sim.step(driver.route(obs))
        events = sim.take_events()
        if events:
            driver.report(events)
        return sim.result()

    def run_episode(self, driver: Driver, seed: int) -> dict[str, float]:
        return self.episode_metrics(self.play(driver, seed))

    def episode_metrics(self, result: EpisodeResult) -> dict[str, float]:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {
            "jobs": self.n_jobs,
            "clusters": list(self.federation.capacities),
            "hetero_factors": list(self.federation.hetero_factors) if self.federation.hetero_factors else None,
            "elastic": list(self.federation.is_elastic),
            "local_scheduler": self.local_scheduler,
            "pattern": asdict(self.pattern),
            "profile": self.profile.as_dict(),
        }


class RLFCScenario(MultiClusterScenario):
    """RL-FC: TMDL, AJDR (Eq. 8), Eval_app (Eq. 9); Score-A..D and ratios against a baseline."""

    metrics: ClassVar[tuple[str, ...]] = ("tmdl", "ajdr", "eval_app")
    default_policies: ClassVar[tuple[str, ...]] = ("random", "sf-p", "lf-p", "sf-e", "lf-e")
    local_scheduler: ClassVar[str] = FIFO

    def episode_metrics(self, result: EpisodeResult) -> dict[str, float]:
        ajdr = result.ajdr()
        return {"tmdl": float(result.tmdl), "ajdr": ajdr, "eval_app": metrics.eval_app(result.tmdl, ajdr)}

    def relative_metrics(self, episodes: dict[str, list[dict[str, float]]], against: str) -> dict[str, dict]:
        """Score-A..D and the Ratio column against `against`, plus for every policy `eval_app_of_means`: Eq. 9 on
        the mean TMDL and AJDR, as the paper's Fig. 4 computes it (`eval_app` is the mean of per-episode values)."""
        base = episodes[against]
        out = {}
        for policy, eps in episodes.items():
            of_means = metrics.eval_app(metrics.mean([e["tmdl"] for e in eps]), metrics.mean([e["ajdr"] for e in eps]))
            if policy == against:
                out[policy] = {"eval_app_of_means": of_means}
                continue
            row = metrics.scores_000(eps, base)
            row["eval_app_of_means"] = of_means
            row["tmdl_ratio"] = metrics.ratio(metrics.mean([e["tmdl"] for e in base]),
                                              metrics.mean([e["tmdl"] for e in eps]))
            row["ajdr_ratio"] = metrics.ratio(metrics.mean([e["ajdr"] for e in base]),
                                              metrics.mean([e["ajdr"] for e in eps]))
            out[policy] = row
        return out


class RLLSFCScenario(MultiClusterScenario):
    """RL-LSFC: TMDL, AJER, S_log; F/S/N and the TMDL ratio against a baseline."""

    metrics: ClassVar[tuple[str, ...]] = ("tmdl", "ajer", "s_log")
    default_policies: ClassVar[tuple[str, ...]] = ("ran", "rr", "maf")
    local_scheduler: ClassVar[str] = HALTED_FIRST
    history: ClassVar[int] = 105   # RL-LSFC's state reads 105 steps; the baselines use the latest 100

    def episode_metrics(self, result: EpisodeResult) -> dict[str, float]:
        ajer = result.ajer()
        return {"tmdl": float(result.tmdl), "ajer": ajer, "s_log": metrics.s_log(result.tmdl, ajer)}

    def relative_metrics(self, episodes: dict[str, list[dict[str, float]]], against: str) -> dict[str, dict]:
        base = episodes[against]
        out = {}
        for policy, eps in episodes.items():
            if policy == against:
                continue
            row: dict[str, Any] = {"fsn": metrics.fsn_002(eps, base)}
            row["tmdl_ratio"] = metrics.ratio(metrics.mean([e["tmdl"] for e in base]),
                                              metrics.mean([e["tmdl"] for e in eps]))
            out[policy] = row
        return out
