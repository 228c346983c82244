"""DSRAP: the paper's five resource-sharing approaches, one policy each (Table 1 and Sec. 5.1).

Every policy answers one cluster manager's step (a Route call carrying RouteObservation.manager): which of its tasks
to allocate on which node, and where to forward the rest. The learning ones (fdl, sdl, bdl) keep per-manager tables
(algorithms.dsrap.rules.DsrapTables) that their learner updates after every decision; `centralized` declares the
`dsrap-centralized` capability, so the simulator runs one manager over all nodes for it.

Options (`--set KEY=VALUE`): seed=0 (salt of the exploration draws) and any FalSettings field (alpha1, gamma1,
eps_type, eps_void, greedy_below, count_cap, level_low, level_high, alpha2, eps_neighbor, p_allocation, void_init,
reward1, discount1, alpha1_schedule, pga_untried). The learning ones take an optional model (`--model PATH`): tables
saved by `emulator train --algo dsrap` or benchmarks/dsrap_tables.py, which every episode then starts from instead
of the paper's fresh tables (their settings apply unless overridden; a setting the artifact does not record takes
today's default, e.g. void_init 20 for tables saved before issue 28: `--set void_init=0` runs them as they ran).
"""

from __future__ import annotations

from typing import Any

from policy_engine.artifact import load_artifact
from algorithms.dsrap.rules import CounterRandom, DsrapTables, FalSettings, decide
from policy_engine.policy import ROUTE, ObservationMismatch, Policy, register
from policy_engine.routing import request_hash
from policy_engine.types import RouteDecision, RouteObservation

CENTRALIZED = "dsrap-centralized"


class DsrapPolicy(Policy):
    capabilities = frozenset({ROUTE})
    learns_inline = True    # FAL updates tables between a manager's steps (see algorithms.dsrap.rules)
    route_observes = "manager"
    first = "best-first"
    second = "random"

    def __init__(self, model: str | None = None, seed: Any = 0, **settings: Any):
        fields = FalSettings.__dataclass_fields__
        unknown = sorted(set(settings) - set(fields))
        if unknown:
            raise ValueError(f"{self.name}: unknown option(s) {', '.join(unknown)}; valid: seed, {', '.join(fields)}")
        tensors = None
        if model is not None:          # learned tables to start every episode from; their settings unless overridden
            tensors, meta = load_artifact(model, policy=self.name)
            settings = {**{k: v for k, v in meta.get("settings", {}).items() if k in fields}, **settings}
            self.model_checksum, self.model_version = meta["checksum"], meta.get("code_version", "")
        try:
            values = {k: type(getattr(FalSettings, k))(v) for k, v in settings.items() if k != "type_utility"}
        except (TypeError, ValueError) as e:
            raise ValueError(f"{self.name}: bad option value: {e}") from None
        self.settings = FalSettings(**values)
        self.seed = int(seed)
        self._salt = f"{self.name}:{self.seed}"
        learns = self.first == "learning1" or self.second == "learning2"
        self.tables = DsrapTables(self.settings) if learns else None
        if tensors is not None:
            self.tables.load(tensors)

    def route(self, obs: RouteObservation) -> RouteDecision:
        if obs.manager is None:
            raise ObservationMismatch(f"policy {self.name!r} decides for DSRAP cluster managers: the request needs `manager`")
        rng = CounterRandom(request_hash(obs.request_id, self._salt))
        return decide(obs.manager, self.first, self.second, self.tables, rng)


def _approach(name: str, first: str, second: str, capabilities=frozenset({ROUTE})):
    return type(f"Dsrap_{name}", (DsrapPolicy,), {"name": name, "first": first, "second": second,
                                                   "capabilities": frozenset(capabilities)})


L = "algorithms.dsrap.rules:make_learner"
register("greedy", "DSRAP greedy: best-first local allocation, random routing (DSRAP)", {ROUTE}, learner=L, families={"dsrap"})(_approach("greedy", "best-first", "random"))
register("fdl", "DSRAP FDL: Learning1 (FAL/PGA) local allocation, random routing (DSRAP)", {ROUTE}, model="optional", learner=L, families={"dsrap"})(_approach("fdl", "learning1", "random"))
register("sdl", "DSRAP SDL: best-first local allocation, Learning2 (FAL/PGA, Eq. 6) routing (DSRAP)", {ROUTE}, model="optional", learner=L, families={"dsrap"})(_approach("sdl", "best-first", "learning2"))
register("bdl", "DSRAP BDL: Learning1 and Learning2, both learned by FAL/PGA (DSRAP)", {ROUTE}, model="optional", learner=L, families={"dsrap"})(_approach("bdl", "learning1", "learning2"))
register("centralized", "DSRAP centralized: one manager over all clusters' nodes, best-first (DSRAP)", {ROUTE, CENTRALIZED}, learner=L, families={"dsrap"})(_approach("centralized", "best-first", "random", {ROUTE, CENTRALIZED}))
