"""Random for the DeepRM setting (DeepRM): DeepRM's random agent, deterministic per request.

DeepRM's reference random agent draws one of the M + 1 actions uniformly: a job slot or the void action. A draw
of an empty slot, of a job that does not fit, or of the void action ends the time step (DeepRM's "move on"); a
job that fits is started and the agent draws again. The draws are seeded from the request id, so the policy is a
pure function of its observation and in-process and remote runs agree.
"""

from __future__ import annotations

import hashlib

import numpy as np

from policy_engine.features.deeprm import slot_asks
from policy_engine.policy import DEEPRM_JOBS, SCHEDULE, Policy, register
from policy_engine.types import Assignment, Locality, ScheduleDecision, ScheduleObservation


def request_rng(request_id: str, salt: int = 0) -> np.random.Generator:
    digest = hashlib.sha256(f"{salt}:{request_id}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


@register("deeprm-random", "DeepRM setting: uniform over the M job slots and the void action, seeded by request id",
          {SCHEDULE}, families={"deeprm"})  # reads DeepRM's job slots (tags["slot"])
class DeepRMRandomPolicy(Policy):
    name = "deeprm-random"
    capabilities = frozenset({SCHEDULE})
    reads = frozenset({DEEPRM_JOBS})  # on a real YARN the engine builds the job slots (deeprm_view)

    def __init__(self, num_slots: int | None = None, seed: int = 0):
        if num_slots is not None and num_slots < 1:
            raise ValueError(f"num_slots must be >= 1, not {num_slots}")
        self.num_slots = None if num_slots is None else int(num_slots)  # None: M as the observation states it
        self.seed = int(seed)

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        rng = request_rng(obs.request_id, self.seed)
        slots = slot_asks(obs, self.num_slots)
        m = len(slots)
        free = obs.node.unallocated
        out: list[Assignment] = []
        while True:
            k = int(rng.integers(m + 1))
            ask = slots[k] if k < m else None
            if ask is None or not ask.resource.fits_in(free):
                break
            out.append(Assignment(ask.ask_id, 1, Locality.OFF_SWITCH))
            free = free.minus(ask.resource)
            slots[k] = None
        return ScheduleDecision(out)
