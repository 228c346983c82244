"""ACL, Adaptive Cache Local scheduling (Floratou et al., SoCC 2016; CLQLMRS's baseline).

Delay scheduling with one more level on top: a job first waits for *cache* locality. On a node that caches some
of its pending input blocks it takes those (cache-local) containers at once. Otherwise it lets the node go for up
to C heartbeats, C = ceil(c x the job's cached input fraction) - a job whose input is mostly cached waits longer
for a cached replica, one with nothing cached does not wait at all. After those C skips it behaves as Delay
scheduling (policy_engine.policies.delay, reused as is) with D = node_locality_delay further skips for disk
locality before it goes rack-local, and the same off-switch rule, with its missed opportunities counted from the
end of the cache wait.

Inputs are the observation only: the ask's scheduling opportunities (kept by the engine, reset by any node- or
rack-local assignment, cache-local included) and JobMetadata.input_blocks (the pending tasks' blocks with their
cached_hosts, from the NameNode). CLQLMRS runs c = 2, 3 and 5 (3 by default).
"""

from __future__ import annotations

import math

from policy_engine.features.locality import cache_local_count, cached_fraction
from policy_engine.locality import AskOnNode, place
from policy_engine.policies.delay import DelayPolicy
from policy_engine.policies.fifo import fifo_order, memory_floor
from policy_engine.policy import SCHEDULE, SCHEDULING_OPPORTUNITIES, Policy, register
from policy_engine.types import Ask, Assignment, Locality, ScheduleDecision, ScheduleObservation


@register("acl", "Adaptive Cache Local: skip up to c x cached-fraction heartbeats for a cached replica, then Delay",
          {SCHEDULE})
class AdaptiveCacheLocalPolicy(Policy):
    name = "acl"
    capabilities = frozenset({SCHEDULE})
    idle_without_room = True  # every ask it places must fit the node (policy_engine.batch)
    reads = frozenset({SCHEDULING_OPPORTUNITIES})

    def __init__(self, c: float = 3, node_locality_delay: int = 40, rack_locality_additional_delay: int = -1):
        if not (isinstance(c, (int, float)) and math.isfinite(c) and c >= 0):
            raise ValueError(f"c must be a finite number >= 0, not {c!r}")
        self.c = float(c)
        self.delay = DelayPolicy(node_locality_delay, rack_locality_additional_delay)

    def cache_skips(self, ask: Ask) -> int:
        """Heartbeats the ask lets go while it waits for a node that caches one of its blocks."""
        return math.ceil(self.c * cached_fraction(ask) - 1e-9)

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        node = obs.node
        free = node.unallocated
        num_nodes = obs.cluster.num_nodes
        out: list[Assignment] = []
        floor = memory_floor(obs.asks)
        for ask in fifo_order(obs.asks):
            if free.memory_mb < floor:
                break  # nothing left fits (FifoOrdered.memory_floor)
            if ask.num_containers <= 0:
                continue
            counts = AskOnNode(ask, node)
            if counts.cached:
                cached_here = cache_local_count(ask, node)
                n = min(cached_here, counts.available(Locality.CACHE_LOCAL), ask.resource.max_copies_in(free))
                if n > 0:
                    out.append(Assignment(ask.ask_id, n, Locality.CACHE_LOCAL))
                    counts.take(Locality.CACHE_LOCAL, n)
                    free = free.minus(ask.resource, n)
            skips = self.cache_skips(ask)
            missed = ask.scheduling_opportunities
            if missed <= skips:
                continue  # still waiting for cache locality: the node goes to the next job
            free, _ = place(out, counts, free,
                            lambda level: self.delay.allows(level, counts, missed - skips, num_nodes))
        return ScheduleDecision(out)


# CLQLMRS's other two settings of c, under their own names so `emulator compare --policies acl-c2,acl-c5` runs them.
@register("acl-c2", "ACL with c = 2 (CLQLMRS, fig. 5)", {SCHEDULE})
class AdaptiveCacheLocalC2Policy(AdaptiveCacheLocalPolicy):
    name = "acl-c2"

    def __init__(self, node_locality_delay: int = 40, rack_locality_additional_delay: int = -1):
        super().__init__(2, node_locality_delay, rack_locality_additional_delay)


@register("acl-c5", "ACL with c = 5 (CLQLMRS, fig. 5)", {SCHEDULE})
class AdaptiveCacheLocalC5Policy(AdaptiveCacheLocalPolicy):
    name = "acl-c5"

    def __init__(self, node_locality_delay: int = 40, rack_locality_additional_delay: int = -1):
        super().__init__(5, node_locality_delay, rack_locality_additional_delay)
