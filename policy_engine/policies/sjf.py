"""SJF for the DeepRM setting (seed 003): start the shortest waiting job that fits, again and again.

Looks at DeepRM's M visible job slots (JobMetadata.tags["slot"], see policy_engine.features.deeprm) and the
jobs' lengths (expected_runtime_ms), exactly as DeepRM's reference SJF agent: among the slot jobs that fit the
free resources, the shortest (the lowest slot on ties); repeated until none fits, which is DeepRM's void action.
"""

from __future__ import annotations

from policy_engine.features.deeprm import slot_asks
from policy_engine.policy import SCHEDULE, Policy, register
from policy_engine.types import Ask, Assignment, Locality, Resource, ScheduleDecision, ScheduleObservation


def greedy_slots(obs: ScheduleObservation, num_slots: int | None, score) -> ScheduleDecision:
    """Repeatedly start the fitting slot job with the highest score(ask, free) > 0 (first slot on ties)."""
    free: Resource = obs.node.unallocated
    waiting: list[Ask] = [a for a in slot_asks(obs, num_slots) if a is not None]
    out: list[Assignment] = []
    while waiting:
        best, best_score = None, 0.0
        for ask in waiting:
            if not ask.resource.fits_in(free):
                continue
            s = score(ask, free)
            if s > best_score:
                best, best_score = ask, s
        if best is None:
            break
        out.append(Assignment(best.ask_id, 1, Locality.OFF_SWITCH))
        free = free.minus(best.resource)
        waiting.remove(best)
    return ScheduleDecision(out)


@register("sjf", "DeepRM setting: shortest job first among the visible job slots that fit", {SCHEDULE},
          families={"deeprm"})  # reads DeepRM's job slots (tags["slot"])
class ShortestJobFirstPolicy(Policy):
    name = "sjf"
    capabilities = frozenset({SCHEDULE})

    def __init__(self, num_slots: int | None = None):
        if num_slots is not None and num_slots < 1:
            raise ValueError(f"num_slots must be >= 1, not {num_slots}")
        self.num_slots = None if num_slots is None else int(num_slots)  # None: M as the observation states it

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        def score(ask: Ask, free: Resource) -> float:
            runtime = ask.job.expected_runtime_ms if ask.job is not None else 0
            return 1.0 / runtime if runtime > 0 else 0.0

        return greedy_slots(obs, self.num_slots, score)
