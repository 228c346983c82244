"""Packer (Tetris, Grandl et al. SIGCOMM 2014) for the DeepRM setting (DeepRM).

Among DeepRM's visible job slots that fit, start the job whose demand vector has the largest dot product with the
free resources (DeepRM's reference Packer agent; the lowest slot on ties), and repeat until none fits. Resources
are compared in DeepRM units: memory in policy_engine.features.deeprm.ImageSpec.memory_unit_mb, and vcores.
"""

from __future__ import annotations

from policy_engine.features.deeprm import ImageSpec
from algorithms.deeprm.sjf import greedy_slots
from policy_engine.policy import DEEPRM_JOBS, SCHEDULE, Policy, register
from policy_engine.types import Ask, Resource, ScheduleDecision, ScheduleObservation


@register("packer", "DeepRM setting: largest dot product of job demand and free resources (Tetris)", {SCHEDULE},
          families={"deeprm"})  # reads DeepRM's job slots (tags["slot"])
class PackerPolicy(Policy):
    name = "packer"
    capabilities = frozenset({SCHEDULE})
    reads = frozenset({DEEPRM_JOBS})  # on a real YARN the engine builds the job slots (deeprm_view)

    def __init__(self, num_slots: int | None = None, memory_unit_mb: int = ImageSpec.memory_unit_mb):
        if (num_slots is not None and num_slots < 1) or memory_unit_mb < 1:
            raise ValueError("num_slots and memory_unit_mb must be >= 1")
        self.num_slots = None if num_slots is None else int(num_slots)  # None: M as the observation states it
        self.unit = int(memory_unit_mb)

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        unit = self.unit

        def score(ask: Ask, free: Resource) -> float:
            r = ask.resource
            return (r.memory_mb / unit) * (free.memory_mb / unit) + r.vcores * free.vcores

        return greedy_slots(obs, self.num_slots, score)
