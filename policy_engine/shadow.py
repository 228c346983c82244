"""Shadow mode on the engine's side: what the engine would have placed against what YARN placed.

A plugin in shadow mode (yarnrl.engine.mode=shadow) sends each node heartbeat as a ScheduleRequest with
`shadow = true`, never waits for the answer and never applies it; YARN schedules natively and the plugin reports
each container it started as a ContainerStarted event whose Event.decision_id is the shadow decision of that
heartbeat (the response's decision_id). The engine then counts, on the same heartbeats:
  - what it would have placed: yarnrl_shadow_containers_total{placed_by="engine", locality=...}, at decision time;
  - what YARN placed: yarnrl_shadow_containers_total{placed_by="yarn", locality=...}, from the events;
  - whether YARN's container went to an ask the engine had also chosen on that node:
    yarnrl_shadow_placements_total{outcome="agree"|"differ"}.
Both are in the decision log too (the decision rows' `observation` holds the request with its shadow flag; the
events name the decision), and `shadow_comparison(directory)` derives the same mixes from a log, for
`emulator replay`.

The map from decision to its assignments is bounded (oldest forgotten first, 100,000 decisions: minutes of
heartbeats on a large cluster, far longer than a container takes to start); an event naming a decision not in it
(an active queue's placement, or a forgotten one) is not a shadow comparison and is not counted.
"""

from __future__ import annotations

from collections import OrderedDict

from policy_engine.types import ContainerStarted, Event, Locality, ScheduleDecision, ScheduleObservation

LOCALITY_NAMES = {loc: loc.name.lower() for loc in Locality}


class ShadowRecorder:
    def __init__(self, metrics=None, capacity: int = 100_000):
        self.metrics = metrics
        self.capacity = capacity
        self._decisions: OrderedDict[str, frozenset[str]] = OrderedDict()
        self.engine_mix: dict[str, int] = {}
        self.yarn_mix: dict[str, int] = {}
        self.outcomes = {"agree": 0, "differ": 0}
        self.decisions = 0

    def decided(self, decision_id: str, obs: ScheduleObservation, decision: ScheduleDecision) -> None:
        """Called on the decision path for a shadow request: O(assignments), no I/O."""
        self.decisions += 1
        asks = frozenset(a.ask_id for a in decision.assignments if a.count > 0)
        self._decisions[decision_id] = asks
        if len(self._decisions) > self.capacity:
            self._decisions.popitem(last=False)
        m = self.metrics
        for a in decision.assignments:
            name = LOCALITY_NAMES[a.locality]
            self.engine_mix[name] = self.engine_mix.get(name, 0) + a.count
            if m is not None:
                m.shadow_containers.labels("engine", name).inc(a.count)
        if m is not None:
            m.shadow_decisions.inc()

    def is_shadow(self, decision_id: str) -> bool:
        return decision_id in self._decisions

    def observe(self, ev: Event) -> None:
        """A Report event: a ContainerStarted naming a shadow decision is YARN's placement on that heartbeat."""
        if not isinstance(ev, ContainerStarted) or not ev.decision_id:
            return
        asks = self._decisions.get(ev.decision_id)
        if asks is None:  # an active decision's placement (a queue not in shadow), or one forgotten long ago
            return
        outcome = "agree" if ev.ask_id in asks else "differ"
        self.outcomes[outcome] += 1
        name = LOCALITY_NAMES[ev.locality]
        self.yarn_mix[name] = self.yarn_mix.get(name, 0) + 1
        m = self.metrics
        if m is not None:
            m.shadow_containers.labels("yarn", name).inc()
            m.shadow_placements.labels(outcome).inc()

    def summary(self) -> dict:
        return {"decisions": self.decisions, "engine": dict(self.engine_mix), "yarn": dict(self.yarn_mix),
                "placements": dict(self.outcomes)}


def shadow_comparison(directory) -> dict | None:
    """The counterfactual locality mix of a decision log: for its shadow decisions (ScheduleRequest.shadow in the
    logged observation), the engine's assignments against YARN's ContainerStarted events naming them. None when
    the log holds no shadow decision."""
    from policy_engine.codec import request_is_shadow
    from policy_engine.decision_log import read_decisions, read_events

    decisions = read_decisions(directory).select(["decision_id", "rpc", "assignments", "observation"]).to_pylist()
    shadow: dict[str, frozenset[str]] = {}
    engine_mix: dict[str, int] = {}
    for row in decisions:
        if row["rpc"] != "schedule" or not row["observation"]:
            continue
        if not request_is_shadow(row["observation"]):
            continue
        shadow[row["decision_id"]] = frozenset(a["ask_id"] for a in row["assignments"] if a["count"] > 0)
        for a in row["assignments"]:
            name = LOCALITY_NAMES[Locality(a["locality"])]
            engine_mix[name] = engine_mix.get(name, 0) + a["count"]
    if not shadow:
        return None
    yarn_mix: dict[str, int] = {}
    outcomes = {"agree": 0, "differ": 0}
    events = read_events(directory).select(["decision_id", "kind", "ask_id", "locality"]).to_pylist()
    for ev in events:
        if ev["kind"] != "container_started" or ev["decision_id"] not in shadow:
            continue
        name = LOCALITY_NAMES[Locality(ev["locality"])]
        yarn_mix[name] = yarn_mix.get(name, 0) + 1
        outcomes["agree" if ev["ask_id"] in shadow[ev["decision_id"]] else "differ"] += 1
    return {"decisions": len(shadow), "engine": engine_mix, "yarn": yarn_mix, "placements": outcomes}
