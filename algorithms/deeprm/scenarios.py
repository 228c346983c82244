"""DeepRM's setting: DeepRM's single cluster with two resources, job slots, a backlog and slowdown.

One Schedule call per time step (when a waiting job fits): the node is the cluster, every waiting job is a
single-container ask (slot number in JobMetadata.tags["slot"], length in expected_runtime_ms), and the policy's
assignments are the jobs started now. Parameters (`--param KEY=VALUE`):

  load       offered load per resource, (0, 0.92] (DeepRM reports 70-80 %)          default 0.75
  job_rate   arrival probability per step, instead of load                             default none
  simu_len   steps with arrivals per episode                                           default 50
  res_slot   units per resource; jobs ask 5-10 units of the dominant one, 1-2 of the other
             (20: DeepRM's 0.25-0.5 r; 10: DeepRM's reference code)                  default 20
  num_slots  M, the visible job slots (DeepRM's reference code: 5)                      default 10
  nodes      machines of res_slot units each, arrivals scaled to the same load per node  default 1
  heartbeats deeprm: one observation per step, already DeepRM's view (slot tags)         default deeprm
             yarn: one heartbeat per node and step as the YARN plugin sends it (asks in
             submission order, run-time tag, no slots); the engine builds DeepRM's view
             (algorithms.deeprm.view). nodes > 1 needs yarn.

Metrics: mean job slowdown (finish - arrival) / length, mean completion time (steps), jobs, dropped jobs
(backlog full), utilization of the two resources over the episode.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from algorithms.deeprm.sim import DeepRMConfig, DeepRMSimulation
from emulator.drivers import Driver
from emulator.scenario import Scenario, register_scenario, reject_unknown_params
from policy_engine.policy import SCHEDULE
from policy_engine.features.deeprm import ImageSpec


class DeepRMScenario(Scenario):
    name = "deeprm"
    family = "deeprm"
    needs = SCHEDULE
    metrics = ("slowdown", "completion_time", "jobs", "dropped", "utilization")
    default_episodes = 20
    default_policies = ("sjf", "packer", "deeprm-random")

    def __init__(self, res_slot: int = 20, num_slots: int = 10, heartbeats: str = "deeprm", **params: Any):
        reject_unknown_params(self.name, params, ["load", "job_rate", "simu_len", "res_slot", "num_slots", "nodes",
                                                  "heartbeats"]
                              + [f.name for f in fields(DeepRMConfig) if f.name not in ("spec", "load", "job_rate",
                                                                                          "simu_len", "nodes")])
        if not 10 <= res_slot <= 100 or not 1 <= num_slots <= 100:
            raise ValueError(f"res_slot must be in [10, 100] and num_slots in [1, 100], got {res_slot}, {num_slots}")
        if heartbeats not in ("deeprm", "yarn"):
            raise ValueError(f"heartbeats must be deeprm or yarn, got {heartbeats!r}")
        self.config = DeepRMConfig(spec=ImageSpec(res_slot=int(res_slot), num_slots=int(num_slots)), **params)
        if self.config.nodes > 1 and heartbeats != "yarn":
            raise ValueError("nodes > 1 needs heartbeats=yarn (DeepRM's own view has one machine)")
        self.heartbeats = heartbeats

    def run_episode(self, driver: Driver, seed: int) -> dict[str, float]:
        sim = DeepRMSimulation(self.config, seed)
        yarn = self.heartbeats == "yarn"
        nodes = self.config.nodes
        while not sim.done and not sim.truncated:
            if yarn:
                for i in range(nodes):   # every node heartbeats once a step, starting one further each step
                    node = (sim.t + i) % nodes
                    if sim.any_waiting_fits(node):
                        sim.apply_yarn(driver.schedule(sim.observe_yarn(node)), node)
            elif sim.any_fits():
                sim.apply(driver.schedule(sim.observe()))
            sim.advance()
            events = sim.take_events()
            if events:
                driver.report(events)
        return sim.metrics()

    def describe(self) -> dict[str, Any]:
        d = asdict(self.config)
        d["job_rate"] = self.config.rate
        d["heartbeats"] = self.heartbeats
        return d


register_scenario("deeprm", "DeepRM: DeepRM's cluster (2 resources, 10 job slots, backlog 60), job slowdown; "
                  "param load (0.7-0.8 in the paper)", DeepRMScenario)
