"""FIFO: YARN FifoScheduler semantics.

Applications in submit order (then id); within an application, scheduler keys by priority (lower value first)
and allocation request id. On a node, each ask takes as many containers as fit, node-local first, then
rack-local, then off-switch, with no waiting for locality (FifoScheduler.assignContainersOnNode).
"""

from __future__ import annotations

from operator import attrgetter

from policy_engine.locality import AskOnNode, place
from policy_engine.policy import SCHEDULE, Policy, register
from policy_engine.types import Ask, Assignment, ScheduleDecision, ScheduleObservation


_FIFO_KEY = attrgetter("submit_time_ms", "application_id", "attempt_id", "priority", "allocation_request_id")


class FifoOrdered(list):
    """Asks already in FIFO order (the batched path, policy_engine.batch, sorts a batch's asks once and hands each
    node its live ones in that order): fifo_order returns it as it is instead of sorting it again per node.

    `memory_floor`: no ask of the list with containers left asks for less memory than this (0: unknown). Every
    ResourceCalculator compares memory, so once a node's free memory is below it nothing more fits and a placement
    loop may stop (memory_floor(asks) reads it; a plain list says 0).

    `with_blocks`: how many of the asks carry input blocks, when the caller knows it (-1: count them);
    `unique_ids`: no two asks share an id (the batch refuses duplicates), so the engine's clip may look an ask up by
    a scan that stops at the first match instead of indexing every ask of the list per node."""

    __slots__ = ("memory_floor", "with_blocks", "unique_ids")

    def __init__(self, asks=(), memory_floor: int = 0, with_blocks: int = -1, unique_ids: bool = False):
        super().__init__(asks)
        self.memory_floor = memory_floor
        self.with_blocks = with_blocks
        self.unique_ids = unique_ids


def memory_floor(asks) -> int:
    """The smallest memory any live ask of `asks` asks for, when the caller knows it (FifoOrdered); else 0."""
    return asks.memory_floor if type(asks) is FifoOrdered else 0


def fifo_order(asks: list[Ask]) -> list[Ask]:
    if type(asks) is FifoOrdered:
        return asks
    return sorted(asks, key=_FIFO_KEY)


@register("fifo", "YARN FifoScheduler: submit order; node-local, then rack-local, then off-switch; no delay",
          {SCHEDULE})
class FifoPolicy(Policy):
    name = "fifo"
    capabilities = frozenset({SCHEDULE})
    idle_without_room = True  # every ask it places must fit the node (policy_engine.batch)

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        free = obs.node.unallocated
        out: list[Assignment] = []
        floor = memory_floor(obs.asks)
        for ask in fifo_order(obs.asks):
            if free.memory_mb < floor:
                break  # nothing left fits (FifoOrdered.memory_floor)
            if ask.num_containers <= 0 or not ask.resource.fits_in(free):
                continue
            free, _ = place(out, AskOnNode(ask, obs.node), free)
        return ScheduleDecision(out)
