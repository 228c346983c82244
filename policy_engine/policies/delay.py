"""Delay scheduling (Zaharia et al., EuroSys 2010) with CapacityScheduler's two delays.

Applications are visited in FIFO order. An ask always takes node-local (and cache-local) containers. It takes
rack-local ones only after it has been offered more than `node_locality_delay` heartbeats without a local
assignment (capped at the cluster's node count, as `yarn.scheduler.capacity.node-locality-delay`), and
off-switch ones after `node_locality_delay + rack_locality_additional_delay` when that is set (> -1), or else
after `min(nodes, outstanding * locality_wait_factor)` as CapacityScheduler does. An ask that must wait is
skipped, so later applications get the node: the point of delay scheduling. The count of missed opportunities
is kept by the engine (Ask.scheduling_opportunities): it includes the current heartbeat and is reset whenever
the ask receives a node- or rack-local container (CapacityScheduler's resetSchedulingOpportunities).
"""

from __future__ import annotations

from policy_engine.locality import AskOnNode, place
from policy_engine.policies.fifo import fifo_order, memory_floor
from policy_engine.policy import SCHEDULE, SCHEDULING_OPPORTUNITIES, Policy, register
from policy_engine.types import ANY, Ask, Assignment, Locality, ScheduleDecision, ScheduleObservation


@register("delay", "Delay scheduling: wait node-locality-delay heartbeats for node locality, then rack, then any",
          {SCHEDULE})
class DelayPolicy(Policy):
    name = "delay"
    capabilities = frozenset({SCHEDULE})
    idle_without_room = True  # every ask it places must fit the node (policy_engine.batch)
    reads = frozenset({SCHEDULING_OPPORTUNITIES})

    def __init__(self, node_locality_delay: int = 40, rack_locality_additional_delay: int = -1):
        if node_locality_delay < 0:
            raise ValueError(f"node_locality_delay must be >= 0, not {node_locality_delay}")
        if rack_locality_additional_delay < -1:
            raise ValueError(f"rack_locality_additional_delay must be >= -1, not {rack_locality_additional_delay}")
        self.node_locality_delay = int(node_locality_delay)
        self.rack_locality_additional_delay = int(rack_locality_additional_delay)

    def _cap(self, value: float, num_nodes: int) -> float:
        return min(value, num_nodes) if num_nodes > 0 else value

    def allows(self, level: Locality, counts: AskOnNode, missed: int, num_nodes: int) -> bool:
        if level in (Locality.NODE_LOCAL, Locality.CACHE_LOCAL):
            return True
        if level == Locality.RACK_LOCAL:
            return missed > self._cap(self.node_locality_delay, num_nodes)
        if self.rack_locality_additional_delay > -1:
            return missed > self._cap(self.node_locality_delay + self.rack_locality_additional_delay, num_nodes)
        nodes = num_nodes if num_nodes > 0 else 1
        wait_factor = min(max(counts.unique_locations - 1, 0) / nodes, 1.0)
        return self._cap(counts.any * wait_factor, num_nodes) < missed

    def _waits_here(self, ask: Ask, node, missed: int, rack_cap: float, num_nodes: int) -> bool:
        """True when the ask can place nothing on this node now, told without building its counts: it is not
        named on the node (no node-local container), has not waited long enough for rack-local, nor for
        off-switch (allows(), with AskOnNode's "*" count). Most asks of a heartbeat are such (they wait)."""
        if missed > rack_cap:
            return False
        host, node_id = node.host, node.node_id
        any_count = ask.num_containers
        for lr in ask.locality:
            name = lr.resource_name
            if (name == host or name == node_id) and lr.num_containers > 0:
                return False
            if name == ANY:
                any_count = min(any_count, lr.num_containers)
        if self.rack_locality_additional_delay > -1:
            return not missed > self._cap(self.node_locality_delay + self.rack_locality_additional_delay, num_nodes)
        nodes = num_nodes if num_nodes > 0 else 1
        wait_factor = min(max(ask.unique_locations - 1, 0) / nodes, 1.0)
        return not self._cap(any_count * wait_factor, num_nodes) < missed

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        node = obs.node
        free = node.unallocated
        num_nodes = obs.cluster.num_nodes
        rack_cap = self._cap(self.node_locality_delay, num_nodes)
        out: list[Assignment] = []
        floor = memory_floor(obs.asks)
        for ask in fifo_order(obs.asks):
            if free.memory_mb < floor:
                break  # nothing left fits (FifoOrdered.memory_floor)
            if ask.num_containers <= 0 or not ask.resource.fits_in(free):
                continue
            missed = ask.scheduling_opportunities
            if self._waits_here(ask, node, missed, rack_cap, num_nodes):
                continue
            counts = AskOnNode(ask, node)
            free, _ = place(out, counts, free, lambda level: self.allows(level, counts, missed, num_nodes))
        return ScheduleDecision(out)
