"""Locality arithmetic for one ask on one node, with YARN's bookkeeping.

An ask has an ANY ("*") count of outstanding containers and optional host and rack counts. As in YARN's
AppSchedulingInfo, a node-local container uses up one of the host, the rack and the ANY counts; a rack-local one
the rack and ANY counts; an off-switch one only ANY.

relax_locality, as YARN's ResourceRequest defines it ("whether locality can be relaxed to that level and beyond"):
false on a rack entry means no container of the ask goes to a node of that rack unless the node itself is asked
for (no rack-local and no off-switch placement there); false on ANY means only racks with an entry of their own,
or nodes asked for by name, get containers. A host entry's flag has nothing below it to relax and is ignored, as
YARN ignores it. The plugin re-checks the same rules in Java (LocalityRules) before it allocates anything.
"""

from __future__ import annotations

from policy_engine.types import ANY, Ask, Assignment, Locality, Node, Resource


def cache_local(ask: Ask, node: Node) -> bool:
    """Whether the node holds a cached replica of some block of the ask's job input."""
    job = ask.job
    if job is None or not job.input_blocks:
        return False
    return any(node.host in b.cached_hosts or node.node_id in b.cached_hosts for b in job.input_blocks)


_CACHE, _NODE, _RACK, _OFF = Locality.CACHE_LOCAL, Locality.NODE_LOCAL, Locality.RACK_LOCAL, Locality.OFF_SWITCH


class AskOnNode:
    """Remaining host / rack / ANY counts of one ask while a decision for one node is built."""

    __slots__ = ("ask", "host", "rack", "any", "rack_relax", "any_relax", "cached", "has_rack_entry")

    def __init__(self, ask: Ask, node: Node):
        self.ask = ask
        host = rack = 0
        rack_relax, has_rack_entry = True, False
        any_count, any_relax = ask.num_containers, ask.relax_locality
        for lr in ask.locality:
            name = lr.resource_name
            if name == node.host or name == node.node_id:
                host = max(host, lr.num_containers)
            elif name == node.rack:
                rack, rack_relax, has_rack_entry = lr.num_containers, lr.relax_locality, True
            elif name == ANY:
                any_count, any_relax = min(any_count, lr.num_containers), lr.relax_locality
        self.host, self.rack, self.any = host, rack, any_count
        self.rack_relax, self.any_relax, self.has_rack_entry = rack_relax, any_relax, has_rack_entry
        self.cached = cache_local(ask, node) if host > 0 else False

    @property
    def unique_locations(self) -> int:
        """Distinct resource names asked for, "*" included (CapacityScheduler's uniqLocationAsks)."""
        return self.ask.unique_locations

    def available(self, level: Locality) -> int:
        """How many containers could be placed at exactly this level now."""
        if level in (Locality.NODE_LOCAL, Locality.CACHE_LOCAL):
            n = min(self.host, self.any)
            return n if (level == Locality.CACHE_LOCAL) == self.cached else 0
        if level == Locality.RACK_LOCAL:
            if not self.has_rack_entry or not self.rack_relax:
                return 0
            return min(self.rack, self.any)
        if level == Locality.OFF_SWITCH:
            # Going off the rack needs the rack's relax (if the ask names this rack) and ANY's relax; an ask with no
            # host or rack entries at all is placed anywhere at this level, as YARN counts it.
            if not self.any_relax or (self.has_rack_entry and not self.rack_relax):
                return 0
            if self.ask.locality and not self.any_relax:
                return 0
            return self.any
        return 0

    @property
    def node_level(self) -> Locality:
        return Locality.CACHE_LOCAL if self.cached else Locality.NODE_LOCAL

    def take(self, level: Locality, n: int) -> None:
        if level in (Locality.NODE_LOCAL, Locality.CACHE_LOCAL):
            self.host -= n
            self.rack = max(self.rack - n, 0)
        elif level == Locality.RACK_LOCAL:
            self.rack -= n
        self.any -= n

    def best_levels(self) -> list[Locality]:
        """Levels at which something can be placed now, best first (`available` inlined: this runs for every
        ask of every heartbeat, twice with the engine's clip)."""
        levels = []
        any_count = self.any
        if (self.host if self.host < any_count else any_count) > 0:
            levels.append(_CACHE if self.cached else _NODE)
        if self.has_rack_entry and self.rack_relax and (self.rack if self.rack < any_count else any_count) > 0:
            levels.append(_RACK)
        if any_count > 0 and self.any_relax and (self.rack_relax or not self.has_rack_entry):
            levels.append(_OFF)
        return levels


def place(out: list[Assignment], view: AskOnNode, free: Resource, allowed=None, limit: int | None = None,
          merge: bool = False) -> tuple[Resource, int]:
    """Give one ask containers on this node, best locality level first, as many as fit in `free` (and at most
    `limit`), skipping levels for which `allowed(level)` is false; append them to `out` (with `merge`, a placement
    at the same ask and level as the last entry extends it). Returns (what is left free, containers placed).

    The placement loop of FIFO, Delay, ACL, CLQLMRS's FIFO part and the engine's safety clip.
    """
    ask = view.ask
    res = ask.resource
    placed = 0
    for level in view.best_levels():
        if limit is not None and placed >= limit:
            break
        if allowed is not None and not allowed(level):
            continue  # each level has its own delay, checked independently as CapacityScheduler does
        # view.available(level), given that best_levels() allowed the level (the relax flags do not change while
        # containers are taken; the counts do)
        if level is _OFF:
            n = view.any
        elif level is _RACK:
            n = view.rack if view.rack < view.any else view.any
        else:
            n = view.host if view.host < view.any else view.any
        fit = res.max_copies_in(free)
        if fit < n:
            n = fit
        if limit is not None:
            n = min(n, limit - placed)
        if n <= 0:
            continue
        view.take(level, n)
        free = free.minus(res, n)
        placed += n
        if merge and out and out[-1].ask_id == ask.ask_id and out[-1].locality == level:
            out[-1].count += n
        else:
            out.append(Assignment(ask.ask_id, n, level))
    return free, placed


def add_assignment(out: list[Assignment], ask_id: str, level: Locality, n: int) -> None:
    """Add n containers of one ask at one level to a decision, merged with an earlier entry of the same pair."""
    for a in out:
        if a.ask_id == ask_id and a.locality == level:
            a.count += n
            return
    out.append(Assignment(ask_id, n, level))
