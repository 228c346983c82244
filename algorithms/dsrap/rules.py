"""DSRAP: the two decisions of a cluster manager, their tables, and the FAL/PGA learner.

A manager's step (the paper's Algorithm 3) is one Route call whose RouteObservation.manager is its local view:
  * first decision (Algorithm 4), which tasks to allocate locally: best-first (tasks by decreasing utility rate,
    each allocated where it fits) or Learning1: a stochastic policy pi1 over task types + VOID_TASK on the abstract
    state <s_t, s_c> (s_t: which task types are allocable, s_c: node counts per (CPU level, network level));
  * second decision (Algorithm 5), where to forward each task not allocated: a uniformly random neighbour or
    Learning2: a stochastic policy pi2 over neighbours on the state <type, remaining waiting time>.
Both learned policies are updated by PGA (Algorithm 2): Delta(s, a) = zeta (Q(s, a) - sum_a' pi(s, a') Q(s, a')),
then pi(s) <- limit(pi(s) + Delta(s)), the closest valid policy in which every action keeps its minimum
exploration probability. Learning1's Q is the expected-value Q-learning of Sec. 4.1.1 with reward u (Eq. 5);
Learning2's Q is Q <- (1 - alpha) Q + alpha r with r from the receiving neighbour (Eq. 6, 7), plus backward
exploration (Sec. 4.2.2).

The tables live in `DsrapTables` (one set per manager), the policy reads them, and `DsrapLearner` writes them after
every decision it sees (the engine hands it each step's observation and checked decision): the policy stays a
function of (observation, tables), so it runs the same in-process and behind `policy-engine serve`. FAL learns
between one manager's decisions (Algorithm 4 calls learn inside the allocation loop), so the DSRAP policies declare
`learns_inline` and the engine runs this learner in the decision's thread even when serving: table updates only,
no I/O, a few hundred microseconds per step. One engine hosts all managers' tables, so Eq. 6's "reward returned from neighbour j"
is computed from j's tables and j's latest local view in the same process, as the message would carry it.

Choices the paper leaves open (defaults in FalSettings):
  * Learning1: alpha 0.1, gamma 0.9, minimum exploration 0.005 per task type and 0.002 for VOID_TASK ("we also
    limit the exploration rate to select VOID_TASK"; 0.02 / 0.01 gave BDL with observed p_j 7075 instead of 7106 in
    one heavy 4 000-step episode, seed 0), the greedy-only threshold at utilization 0.5 of both resources; node
    counts in s_c capped at 3 (0, 1, 2, 3+), which keeps the table learnable within a 10 000-step episode; levels
    at the Gaussian's tertiles (level_low / level_high); a selected task goes to the node where it fits best (least
    CPU + network left over). pi1 starts greedy (the paper); a new state's Q starts at 0 for every task type and at
    void_init (20) for VOID_TASK: with 0 there too, FAL never tries holding resources back long enough to find that
    it pays (docs/algorithms/dsrap.md, "Why Learning1 did not hold back").
  * Learning2: Q starts at 0, pi2 uniform, minimum exploration 0.01 per neighbour; the paper's alpha = 0.5.
  * tasks are forwarded highest utility rate first when more than the transfer limit wait.
  * p_j(x) of Eq. 6 is j's observed allocation rate of x's type, (allocated + 1) / (allocable seen + 2), for SDL (as
    the paper says) and, by default, for BDL too (`p_allocation=observed`). Eq. 7 as written (`p_allocation=eq7`)
    weighs pi1(s, t), the chance that type t is picked *next*: with the greedy start that is the exploration floor
    for every type but the best one on offer, although those tasks are usually allocated later in the same step.
    It made BDL's routing nearly uniform (BDL no better than Greedy, 0.5 % below at 2 000 steps).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

import numpy as np

from policy_engine.types import ManagerView, RouteDecision, RouteObservation

N_TYPES = 4
_BIT_VALUES = 1 << np.arange(N_TYPES)
VOID = N_TYPES                       # the action index of VOID_TASK in Learning1
LEVELS = 3
Z_TERTILE = 0.4307272992954576       # N(0,1) quantile of 2/3: three equally likely levels


@dataclass(frozen=True)
class FalSettings:
    alpha1: float = 0.1
    gamma1: float = 0.9
    eps_type: float = 0.005
    eps_void: float = 0.002
    greedy_below: float = 0.5
    count_cap: int = 3
    # Learning1's level cut points, in standard deviations around the mean task demand (the paper: three equally
    # likely levels of the fitted Gaussian, -/+ 0.43)
    level_low: float = -Z_TERTILE
    level_high: float = Z_TERTILE
    alpha2: float = 0.5
    eps_neighbor: float = 0.01
    max_wait: int = 10
    # p_j(x) of Eq. 6 for BDL: "eq7" (Eq. 7 from pi1) or "observed" (j's allocation rate, as SDL)
    p_allocation: str = "observed"
    # Learning1's PGA step uses (Q - mean Q) / pga_scale1: 1 is Algorithm 2 as written; Q is in utility-rate units
    # there (up to ~25 per allocation), so one update can move pi1 from one corner of the simplex to another
    pga_scale1: float = 1.0
    # Unseen Learning1 states start greedy: the type ranked highest here (the types' mean utility rates, Sec. 5.1)
    type_utility: tuple = (1.0, 6.0, 5.0, 25.0)
    # Learning1's reward for allocating a task: "utility_rate" is Eq. 5 as written (u); "utility" is u times the
    # type's mean service time (type_service, Sec. 5.1), the task's whole contribution to the AUR (Eq. 1)
    reward1: str = "utility_rate"
    type_service: tuple = (20.0, 35.0, 30.0, 50.0)
    # How Learning1 discounts the next decision's value: "decision" (gamma1 per decision, however many in one time
    # step) or "step" (gamma1 per time step between the two decisions; picks within one step are not discounted)
    discount1: str = "decision"
    # The PGA step of Algorithm 2 for actions never tried in a state: "zero" compares their initial Q = 0 with the
    # others (an action with positive reward is then always ahead of an untried one), "neutral" gives them no push
    # either way until tried (their Q counts as the policy's mean)
    pga_untried: str = "zero"
    # Learning1's Q step size: "constant" (alpha1 throughout) or "visits" (max(alpha1, 1/n) on the n-th update of
    # that state and action: a rarely tried action's Q is then its sample mean, not a tenth of one sample from 0)
    alpha1_schedule: str = "constant"
    # Q(s, VOID_TASK) of a state's new Q row (the other actions start at 0), in reward units: > 0 is optimism that
    # makes a learning manager try holding back where it has not yet (see docs/algorithms/dsrap.md)
    void_init: float = 20.0

    def as_dict(self) -> dict:
        return asdict(self)


def zeta1(t: float) -> float:
    """Learning1's PGA rate, min(0.1, 2000 / (2000 + t)) (Sec. 5.1)."""
    return min(0.1, 2000.0 / (2000.0 + t))


def zeta2(t: float) -> float:
    """Learning2's PGA rate, min(0.5, 10000 / (10000 + t))."""
    return min(0.5, 10000.0 / (10000.0 + t))


def limit(pi: np.ndarray, minimum: np.ndarray) -> np.ndarray:
    """GIGA's projection with a floor: the x closest to `pi` (Euclidean) with x >= minimum and sum(x) = 1.

    The projection of pi - minimum onto the simplex of mass 1 - sum(minimum) (sort-based, Duchi et al. 2008), in
    plain Python: these vectors have 2 to 5 entries and numpy's per-call overhead would dominate."""
    floor = minimum.tolist()
    v = [p - m for p, m in zip(pi.tolist(), floor)]
    mass = 1.0 - sum(floor)
    theta, acc = 0.0, 0.0
    for i, u in enumerate(sorted(v, reverse=True), start=1):
        acc += u
        t = (acc - mass) / i
        if u - t > 0:
            theta = t
    return np.asarray([max(x - theta, 0.0) + m for x, m in zip(v, floor)])


def limit_rows(pi: np.ndarray, minimum: np.ndarray) -> np.ndarray:
    """`limit` for every row of a (rows, actions) array at once, with one floor vector for all rows."""
    v = pi - minimum
    mass = 1.0 - float(minimum.sum())
    u = -np.sort(-v, axis=1)
    t = (np.cumsum(u, axis=1) - mass) / np.arange(1, v.shape[1] + 1)
    # theta: t at the last sorted position where u - t > 0 (the first position always qualifies)
    last = v.shape[1] - 1 - np.argmax((u - t > 0)[:, ::-1], axis=1)
    theta = t[np.arange(v.shape[0]), last]
    return np.maximum(v - theta[:, None], 0.0) + minimum


class CounterRandom:
    """Uniform draws in [0, 1) from a 64-bit key and a counter (SplitMix64): a fixed stream per request id, and
    about ten times cheaper to start than a numpy Generator, which matters at 16 managers per step."""

    _M1, _M2, _GOLD = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(0x9E3779B97F4A7C15)

    def __init__(self, key: int):
        self._key_int = key & 0xFFFFFFFFFFFFFFFF
        self.key = np.uint64(self._key_int)
        self.n = 0

    def random(self, size: int | None = None):
        if size is None:                     # one draw: plain integers are cheaper than 8 numpy calls
            self.n += 1
            z = (self._key_int + self.n * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
            z ^= z >> 31
            return (z >> 11) * (1.0 / 9007199254740992.0)
        k = size
        with np.errstate(over="ignore"):
            z = self.key + (np.arange(self.n + 1, self.n + k + 1, dtype=np.uint64) * self._GOLD)
            z = (z ^ (z >> np.uint64(30))) * self._M1
            z = (z ^ (z >> np.uint64(27))) * self._M2
            z = z ^ (z >> np.uint64(31))
        self.n += k
        return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)

    def integers(self, low: int, high: int, size: int) -> np.ndarray:
        return low + np.minimum((self.random(size) * (high - low)).astype(np.int64), high - low - 1)


# ---------------------------------------------------------------- allocation helpers (pure)


def fits_anywhere(cpu_free: np.ndarray, net_free: np.ndarray, cpu: np.ndarray, net: np.ndarray) -> np.ndarray:
    """Per task: is there a node with room for it."""
    if cpu.size == 0 or cpu_free.size == 0:
        return np.zeros(cpu.size, dtype=bool)
    return ((cpu_free[None, :] >= cpu[:, None]) & (net_free[None, :] >= net[:, None])).any(axis=1)


def best_first(view: ManagerView) -> np.ndarray:
    """The best-first algorithm: tasks by decreasing utility rate (earliest first on ties), each allocated on its
    best-fit node if one has room. Returns the node index per task, -1 where not allocated."""
    n = view.task_id.size
    out = np.full(n, -1, dtype=np.int64)
    if n == 0 or view.cpu_free.size == 0:
        return out
    fit = FitMatrix(view)
    order = np.argsort(-view.task_utility, kind="stable")
    for i in order[fit.any_node()[order]].tolist():
        node = fit.best_node(i)
        if node >= 0:
            fit.take(i, node)
            out[i] = node
    return out


class FitMatrix:
    """Which task fits on which node, kept up to date as tasks are allocated (only the chosen node's column
    changes), so a manager's allocation loop costs little per task that does not fit anywhere."""

    def __init__(self, view: ManagerView):
        self.cpu, self.net = view.task_cpu, view.task_net
        self.cpu_free, self.net_free = view.cpu_free.copy(), view.net_free.copy()
        self.fits = (self.cpu_free[None, :] >= self.cpu[:, None]) & (self.net_free[None, :] >= self.net[:, None])

    def any_node(self) -> np.ndarray:
        return self.fits.any(axis=1)

    def best_node(self, i: int) -> int:
        """The node where task i fits with the least CPU + network left over (first on ties); -1: none."""
        row = self.fits[i]
        if not row.any():
            return -1
        left = np.where(row, self.cpu_free + self.net_free, np.inf)
        return int(np.argmin(left))

    def take(self, i: int, node: int) -> None:
        self.cpu_free[node] -= self.cpu[i]
        self.net_free[node] -= self.net[i]
        self.fits[:, node] = (self.cpu_free[node] >= self.cpu) & (self.net_free[node] >= self.net)
        self.fits[i, :] = False


def forward_order(view: ManagerView, not_allocated: np.ndarray) -> np.ndarray:
    """Which of the tasks not allocated get this step's transfer slots: highest utility rate first."""
    idx = np.flatnonzero(not_allocated)
    if idx.size > view.transfer_limit:
        idx = idx[np.argsort(-view.task_utility[idx], kind="stable")][: view.transfer_limit]
        idx.sort()
    return idx


# ---------------------------------------------------------------- abstract states


@dataclass
class DemandStats:
    """Running mean and variance of task demands per resource (Welford); Learning1's levels come from them."""

    n: int = 0
    mean: np.ndarray = field(default_factory=lambda: np.zeros(2))
    m2: np.ndarray = field(default_factory=lambda: np.zeros(2))

    def add(self, cpu: np.ndarray, net: np.ndarray) -> None:
        """Merge a batch (Chan et al.'s parallel update of mean and sum of squared deviations)."""
        if cpu.size == 0:
            return
        x = np.stack([cpu, net], axis=1)
        nb = x.shape[0]
        mb = x.mean(axis=0)
        m2b = ((x - mb) ** 2).sum(axis=0)
        n = self.n + nb
        d = mb - self.mean
        self.mean = self.mean + d * nb / n
        self.m2 = self.m2 + m2b + d * d * self.n * nb / n
        self.n = n

    def thresholds(self, view: ManagerView, low: float = -Z_TERTILE, high: float = Z_TERTILE) -> np.ndarray:
        """(2 resources, 2 cut points): three equally likely levels of a Gaussian fitted to task demands."""
        if self.n >= 2:
            mean, std = self.mean, np.sqrt(self.m2 / (self.n - 1))
        elif view.task_id.size:
            x = np.stack([view.task_cpu, view.task_net])
            mean, std = x.mean(axis=1), x.std(axis=1)
        else:
            mean, std = np.full(2, 20.0), np.full(2, 15.0)
        return np.stack([mean + low * std, mean + high * std], axis=1)


def resource_features(cpu_free: np.ndarray, net_free: np.ndarray, cuts: np.ndarray, cap: int) -> tuple:
    """s_c: for each (CPU level, network level), how many nodes are at it (capped at `cap`)."""
    lc = np.searchsorted(cuts[0], cpu_free, side="right")
    ln = np.searchsorted(cuts[1], net_free, side="right")
    counts = np.bincount(lc * LEVELS + ln, minlength=LEVELS * LEVELS)
    return tuple(np.minimum(counts, cap).tolist())


def type_bits(types: np.ndarray) -> int:
    """s_t as a bit mask over task types."""
    present = np.bincount(types, minlength=N_TYPES) > 0
    return int(present @ _BIT_VALUES)


def bits_actions(bits: int) -> list[int]:
    return [t for t in range(N_TYPES) if bits >> t & 1] + [VOID]


# ---------------------------------------------------------------- tables


_GREEDY_STARTS: dict[tuple, np.ndarray] = {}


def _greedy_start(bits: int, settings: FalSettings) -> np.ndarray:
    """pi1 of a state not yet learnt (read-only, shared): greedy with the exploration floor."""
    cache_key = (bits, settings.eps_type, settings.eps_void, settings.type_utility)
    pi = _GREEDY_STARTS.get(cache_key)
    if pi is None:
        actions = bits_actions(bits)
        greedy = np.zeros(len(actions))
        greedy[int(np.argmax(np.asarray(settings.type_utility)[actions[:-1]]))] = 1.0
        minimum = np.asarray([settings.eps_void if a == VOID else settings.eps_type for a in actions])
        pi = np.zeros(N_TYPES + 1)
        pi[actions] = limit(greedy, minimum)
        pi.flags.writeable = False
        _GREEDY_STARTS[cache_key] = pi
    return pi


class ManagerTables:
    """One manager's Learning1 and Learning2 tables and the statistics Eq. 6 and 7 need."""

    def __init__(self, settings: FalSettings, degree: int):
        self.settings = settings
        self.pi1: dict[tuple, np.ndarray] = {}
        self.q1: dict[tuple, np.ndarray] = {}
        self.n1: dict[tuple, np.ndarray] = {}                     # Learning1 updates per state and action
        w = settings.max_wait + 1
        self.q2 = np.zeros((N_TYPES, w, degree))
        self.pi2 = np.full((N_TYPES, w, degree), 1.0 / degree if degree else 0.0)
        self.state_counts = [Counter() for _ in range(N_TYPES)]   # q(s_t | t): s_t seen when t was allocable
        self.seen = np.zeros(N_TYPES)                              # SDL's p_j: allocable tasks seen, allocated
        self.taken = np.zeros(N_TYPES)
        self.pending = None                                        # the last Learning1 step, awaiting its s'

    def minimum1(self, actions: list[int]) -> np.ndarray:
        s = self.settings
        return np.asarray([s.eps_void if a == VOID else s.eps_type for a in actions])

    def policy1(self, key: tuple) -> np.ndarray:
        """pi1(s, .) over the 5 actions (0 for those not available in s); unseen states start greedy: the type
        with the highest mean utility rate on offer gets all but the minimum exploration mass."""
        pi = self.pi1.get(key)
        if pi is None:
            pi = _greedy_start(key[0], self.settings)
        return pi

    def value1(self, key: tuple) -> float:
        pi, q = self.pi1.get(key), self.q1.get(key)
        if q is None or pi is None:
            return 0.0
        return float(pi @ q)


class DsrapTables:
    """All managers' tables, plus the shared demand statistics; reset per episode."""

    def __init__(self, settings: FalSettings):
        self.settings = settings
        self.initial: dict[str, np.ndarray] | None = None   # tables every episode starts from (a loaded model)
        self.reset()

    def reset(self) -> None:
        self.managers: dict[int, ManagerTables] = {}
        self.stats = DemandStats()
        self.views: dict[int, ManagerView] = {}    # each manager's latest local view (after its decision)
        if self.initial is not None:
            self._restore(self.initial)

    # ---- as a model artifact: plain arrays, one group per manager (policy_engine.artifact saves them)

    def to_tensors(self) -> dict[str, np.ndarray]:
        width = 1 + LEVELS * LEVELS
        key_type = np.uint8 if self.settings.count_cap < 256 else np.int64
        out = {"manager_ids": np.asarray(sorted(self.managers), dtype=np.int64),
               "stats": np.asarray([self.stats.n, *self.stats.mean, *self.stats.m2], dtype=np.float64)}
        for c, m in sorted(self.managers.items()):
            keys = sorted(m.pi1)
            # ~10 000 Learning1 states per manager: small types keep a heavy episode's tables near 7 MB, not 24
            out[f"m{c}.l1_keys"] = np.asarray([[k[0], *k[1]] for k in keys], dtype=key_type).reshape(-1, width)
            out[f"m{c}.pi1"] = np.asarray([m.pi1[k] for k in keys], dtype=np.float32).reshape(-1, N_TYPES + 1)
            out[f"m{c}.q1"] = np.asarray([m.q1.get(k, np.zeros(N_TYPES + 1)) for k in keys],
                                         dtype=np.float32).reshape(-1, N_TYPES + 1)
            out[f"m{c}.q2"], out[f"m{c}.pi2"] = m.q2, m.pi2
            out[f"m{c}.seen_taken"] = np.stack([m.seen, m.taken])
            out[f"m{c}.state_counts"] = np.asarray([[m.state_counts[t][b] for t in range(N_TYPES)]
                                                    for b in range(1 << N_TYPES)], dtype=np.int64)
        return out

    def load(self, tensors: dict[str, np.ndarray]) -> None:
        """Start every episode from these tables (checked here: a wrong shape is a clear error, not a crash)."""
        self.initial = tensors
        try:
            self.reset()
        except (KeyError, ValueError, IndexError) as e:
            self.initial = None
            self.reset()
            raise ValueError(f"DSRAP tables: not a table set this policy can use ({type(e).__name__}: {e})") from None

    def _restore(self, t: dict[str, np.ndarray]) -> None:
        st = t["stats"]
        self.stats = DemandStats(int(st[0]), st[1:3].copy(), st[3:5].copy())
        for c in t["manager_ids"].tolist():
            q2, pi2 = t[f"m{c}.q2"], t[f"m{c}.pi2"]
            if q2.shape != pi2.shape or q2.ndim != 3 or q2.shape[:2] != (N_TYPES, self.settings.max_wait + 1):
                raise ValueError(f"manager {c}: Learning2 tables of shape {q2.shape}")
            m = self.managers[c] = ManagerTables(self.settings, q2.shape[2])
            m.q2, m.pi2 = q2.copy(), pi2.copy()
            m.seen, m.taken = (x.copy() for x in t[f"m{c}.seen_taken"])
            for row, pi, q in zip(t[f"m{c}.l1_keys"].astype(np.int64).tolist(), t[f"m{c}.pi1"], t[f"m{c}.q1"]):
                key = (row[0], tuple(row[1:]))
                m.pi1[key], m.q1[key] = pi.astype(np.float64), q.astype(np.float64)
            for b, row in enumerate(t[f"m{c}.state_counts"].tolist()):
                for ttype, n in enumerate(row):
                    if n:
                        m.state_counts[ttype][b] = n

    def of(self, cluster_id: int, degree: int) -> ManagerTables:
        m = self.managers.get(cluster_id)
        if m is None:
            m = self.managers[cluster_id] = ManagerTables(self.settings, degree)
        return m


# ---------------------------------------------------------------- the decisions (pure given the tables)


@dataclass(slots=True)
class Learning1Step:
    key: tuple
    action: int
    reward: float
    t: float = 0.0               # the time step of the decision (set by the learner)


def learning1(view: ManagerView, tables: DsrapTables, rng: CounterRandom) -> tuple[np.ndarray, list]:
    """Algorithm 4 with pi1: repeatedly pick a task type (or VOID_TASK) in the abstract state, allocate that
    type's task with the greatest utility rate on its best-fit node. Returns (node per task, the steps taken)."""
    s = tables.settings
    mt = tables.of(view.cluster_id, view.neighbors.size)
    n = view.task_id.size
    out = np.full(n, -1, dtype=np.int64)
    fit = FitMatrix(view)
    cpu_free, net_free = fit.cpu_free, fit.net_free
    cuts = tables.stats.thresholds(view, s.level_low, s.level_high)
    used_c = 1.0 - cpu_free.sum() / max(view.cpu_capacity.sum(), 1e-9)
    used_n = 1.0 - net_free.sum() / max(view.net_capacity.sum(), 1e-9)
    greedy_only = used_c < s.greedy_below and used_n < s.greedy_below
    open_ = fit.any_node()
    trace: list[Learning1Step] = []
    while open_.any():
        types = view.task_type[open_]
        bits = type_bits(types)
        key = (bits, resource_features(cpu_free, net_free, cuts, s.count_cap))
        actions = bits_actions(bits)
        if greedy_only:
            best_u = np.full(N_TYPES, -np.inf)
            np.maximum.at(best_u, types, view.task_utility[open_])
            a = int(max(actions[:-1], key=lambda t: best_u[t]))
        else:
            a = _draw(mt.policy1(key).tolist(), actions, rng.random())
        if a == VOID:
            trace.append(Learning1Step(key, a, 0.0))
            break
        cand = np.flatnonzero(open_ & (view.task_type == a))
        i = int(cand[np.argmax(view.task_utility[cand])])
        node = fit.best_node(i)
        fit.take(i, node)
        out[i] = node
        u = float(view.task_utility[i])
        trace.append(Learning1Step(key, a, u * s.type_service[a] if s.reward1 == "utility" else u))
        open_ = fit.any_node()
    return out, trace


def _draw(pi: list, actions: list, u: float) -> int:
    """The action at u of the cumulative distribution pi[actions] (plain Python: at most 5 entries)."""
    probs = [pi[a] for a in actions]
    x = u * sum(probs)
    acc = 0.0
    for a, p in zip(actions, probs):
        acc += p
        if acc >= x:
            return a
    return actions[-1]


def random_neighbors(view: ManagerView, idx: np.ndarray, rng: CounterRandom) -> np.ndarray:
    return view.neighbors[rng.integers(0, view.neighbors.size, size=idx.size)]


def learning2(view: ManagerView, idx: np.ndarray, tables: DsrapTables, rng: CounterRandom) -> np.ndarray:
    """Algorithm 5 with pi2: each task's neighbour drawn from pi2(<type, remaining wait>, .)."""
    mt = tables.of(view.cluster_id, view.neighbors.size)
    w = np.minimum(np.maximum(view.task_wait[idx], 0), tables.settings.max_wait)
    pi = mt.pi2[view.task_type[idx], w]                     # (tasks, degree)
    cum = np.cumsum(pi, axis=1)
    r = rng.random(idx.size)[:, None] * cum[:, -1:]
    choice = np.minimum((cum < r).sum(axis=1), view.neighbors.size - 1)
    return view.neighbors[choice]


def decide(view: ManagerView, first: str, second: str, tables: DsrapTables | None,
           rng: CounterRandom) -> RouteDecision:
    """One manager's step: first decision, then forward what is left (up to the transfer limit)."""
    trace = None
    if first == "learning1":
        task_node, trace = learning1(view, tables, rng)
    else:
        task_node = best_first(view)
    task_next = np.full(task_node.size, -1, dtype=np.int64)
    if view.neighbors.size:
        idx = forward_order(view, task_node < 0)
        if idx.size:
            task_next[idx] = (learning2(view, idx, tables, rng) if second == "learning2"
                              else random_neighbors(view, idx, rng))
    return RouteDecision(job_index=0, cluster_id=view.cluster_id, task_node=task_node, task_next=task_next,
                         trace=trace)


# ---------------------------------------------------------------- the learner


def make_learner(policy) -> DsrapLearner | None:
    """The registry's learner factory for the DSRAP policies (None for those that learn nothing)."""
    tables = getattr(policy, "tables", None)
    return DsrapLearner(tables, policy.first, policy.second) if tables is not None else None


class DsrapLearner:
    """Updates a DSRAP policy's tables after each of its decisions (attached to the engine that serves it).

    A new episode (the request id's `<scenario>:<seed>` prefix changes) starts from fresh tables, as each of the
    paper's simulation runs does."""

    def __init__(self, tables: DsrapTables, first: str, second: str):
        self.tables = tables
        self.first = first
        self.second = second
        self._stream = None
        self._p_cache: dict[int, tuple] = {}

    errors = 0

    # the engine's learner interface (policy_engine.learning): a trace is one manager step's (observation,
    # checked decision); DSRAP needs no Report events and saves nothing (tables are per episode)
    def on_decision(self, trace) -> None:
        self.on_route(*trace)

    def on_events(self, events) -> None:
        pass

    def publish(self) -> None:
        pass

    def maybe_save(self) -> None:
        pass

    def close(self) -> None:
        pass

    # ---------------------------------------------------------------- Eq. 6 and 7

    def type_probability(self, j: int) -> np.ndarray | None:
        """p_j per task type when j has room (Eq. 7 with Learning1; the observed allocation rate with best-first,
        SDL), from j's tables and latest view; None when j is not known yet. Cached until j's view changes."""
        view = self.tables.views.get(j)
        mt = self.tables.managers.get(j)
        if view is None or mt is None:
            return None
        cached = self._p_cache.get(j)
        if cached is not None and cached[0] is view:
            return cached[1]
        if self.first != "learning1" or self.tables.settings.p_allocation == "observed":
            p = (mt.taken + 1.0) / (mt.seen + 2.0)
        else:
            s = self.tables.settings
            cuts = self.tables.stats.thresholds(view, s.level_low, s.level_high)
            s_c = resource_features(view.cpu_free, view.net_free, cuts, s.count_cap)
            p = np.full(N_TYPES, 0.5)
            for ttype in range(N_TYPES):
                counts = mt.state_counts[ttype]
                total = sum(counts.values())
                if total:
                    p[ttype] = sum(n * mt.policy1((bits, s_c))[ttype] for bits, n in counts.items()) / total
        self._p_cache[j] = (view, p)
        return p

    def rewards(self, j: int, ttype: np.ndarray, cpu: np.ndarray, net: np.ndarray, wait_on_arrival: np.ndarray
                ) -> np.ndarray:
        """Eq. 6 for tasks sent to j: p_j(x) + (1 - p_j(x)) sum_k pi2_j(s'_x, k) Q_j(s'_x, k), where p_j(x) = 0
        when j has no node with room for x (Eq. 7), and the reward is 0 when x expires on the way."""
        alive = wait_on_arrival >= 0
        p_type = self.type_probability(j)
        if p_type is None:
            p = np.full(ttype.size, 0.5)
        else:
            view = self.tables.views[j]
            room = ((view.cpu_free[None, :] >= cpu[:, None]) & (view.net_free[None, :] >= net[:, None])).any(axis=1)
            p = np.where(room, p_type[ttype], 0.0)
        mt = self.tables.managers.get(j)
        future = np.zeros(ttype.size)
        if mt is not None and mt.q2.shape[2]:
            w = np.minimum(np.maximum(wait_on_arrival, 0), self.tables.settings.max_wait)
            future = (mt.pi2[ttype, w] * mt.q2[ttype, w]).sum(axis=1)
        return np.where(alive, p + (1.0 - p) * future, 0.0)

    # ---------------------------------------------------------------- updates

    def on_route(self, obs: RouteObservation, decision: RouteDecision) -> None:
        view = obs.manager
        if view is None:
            return
        stream = obs.request_id.rsplit(":", 2)[0]
        if stream != self._stream:
            self.tables.reset()
            self._p_cache.clear()
            self._stream = stream
        tables = self.tables
        s = tables.settings
        t = obs.time
        mt = tables.of(view.cluster_id, view.neighbors.size)
        new = (view.task_hops == 0) & (view.task_wait == s.max_wait)     # tasks that arrived from outside now
        tables.stats.add(view.task_cpu[new], view.task_net[new])
        # what this manager could allocate, and did (SDL's p_j; Eq. 7's q(s_t | t))
        open_ = fits_anywhere(view.cpu_free, view.net_free, view.task_cpu, view.task_net)
        if open_.any():
            np.add.at(mt.seen, view.task_type[open_], 1.0)
            took = decision.task_node >= 0
            np.add.at(mt.taken, view.task_type[took], 1.0)
        if decision.trace:
            for step in decision.trace:
                step.t = t
                for ttype in bits_actions(step.key[0])[:-1]:
                    mt.state_counts[ttype][step.key[0]] += 1
            self._learn1(mt, decision.trace, zeta1(t))
        # the manager's view after its decision, for its neighbours' Eq. 6
        after = view
        alloc = np.flatnonzero(decision.task_node >= 0)
        if alloc.size:
            cpu_free, net_free = view.cpu_free.copy(), view.net_free.copy()
            np.subtract.at(cpu_free, decision.task_node[alloc], view.task_cpu[alloc])
            np.subtract.at(net_free, decision.task_node[alloc], view.task_net[alloc])
            after = ManagerView(view.cluster_id, cpu_free, net_free, view.cpu_capacity, view.net_capacity,
                                view.neighbors, view.delays, view.task_id[:0], view.task_type[:0], view.task_cpu[:0],
                                view.task_net[:0], view.task_utility[:0], view.task_wait[:0], view.task_hops[:0],
                                view.transfer_limit)
        tables.views[view.cluster_id] = after
        if self.second == "learning2" and view.neighbors.size:
            self._learn2(view, decision, zeta2(t))

    def _learn1(self, mt: ManagerTables, trace: list, zeta: float) -> None:
        s = self.tables.settings
        steps = ([mt.pending] if mt.pending is not None else []) + list(trace)
        per_step = s.discount1 == "step"
        for cur, nxt in zip(steps[:-1], steps[1:]):
            gamma = s.gamma1 ** (nxt.t - cur.t) if per_step else s.gamma1
            self._update1(mt, cur, gamma * mt.value1(nxt.key), zeta)
        mt.pending = steps[-1]

    def _update1(self, mt: ManagerTables, step: Learning1Step, future: float, zeta: float) -> None:
        s = self.tables.settings
        actions = bits_actions(step.key[0])
        q = mt.q1.get(step.key)
        if q is None:
            q = mt.q1[step.key] = np.zeros(N_TYPES + 1)
            q[VOID] = s.void_init
        pi = mt.pi1.get(step.key)
        if pi is None:
            pi = mt.pi1[step.key] = mt.policy1(step.key).copy()
        alpha = s.alpha1
        if s.alpha1_schedule == "visits":
            n = mt.n1.get(step.key)
            if n is None:
                n = mt.n1[step.key] = np.zeros(N_TYPES + 1)
            n[step.action] += 1.0
            alpha = max(alpha, 1.0 / n[step.action])
        q[step.action] += alpha * (step.reward + future - q[step.action])
        avail = np.asarray(actions)
        qa = q[avail]
        if s.pga_untried == "neutral":
            tried = qa != 0.0                   # an action's Q leaves 0 on its first update (values are > 0)
            w = pi[avail] * tried
            qa = np.where(tried, qa, float(w @ qa) / float(w.sum())) if w.sum() > 0 else np.zeros_like(qa)
        mean = float(pi[avail] @ qa)
        pi[avail] = limit(pi[avail] + zeta * (qa - mean) / s.pga_scale1, mt.minimum1(actions))

    def _learn2(self, view: ManagerView, decision: RouteDecision, zeta: float) -> None:
        """Learning2 for this step's forwards, batched: per (state, neighbour) one Q update with the mean Eq. 6
        reward of the tasks sent there, then one PGA step per state; and the neighbours' backward-exploration
        updates (Sec. 4.2.2) the same way."""
        tables = self.tables
        s = tables.settings
        fwd = np.flatnonzero(decision.task_next >= 0)
        if not fwd.size:
            return
        mi = tables.of(view.cluster_id, view.neighbors.size)
        k = np.searchsorted(view.neighbors, decision.task_next[fwd])
        ttype = view.task_type[fwd]
        w = np.minimum(np.maximum(view.task_wait[fwd], 0), s.max_wait)
        cpu, net = view.task_cpu[fwd], view.task_net[fwd]
        arrive = w - view.delays[k]
        r = np.zeros(fwd.size)
        present = np.bincount(k, minlength=view.neighbors.size)
        for kk in np.flatnonzero(present).tolist():
            sel = k == kk
            r[sel] = self.rewards(int(view.neighbors[kk]), ttype[sel], cpu[sel], net[sel], arrive[sel])
        self._batch_update(mi, ttype, w, k, r, zeta, s.eps_neighbor)
        # backward exploration: j learns what sending such a task back to i is worth, from i's own estimate
        for kk in np.flatnonzero(present).tolist():
            j = int(view.neighbors[kk])
            mj, jv = tables.managers.get(j), tables.views.get(j)
            sel = (k == kk) & (arrive >= 0)
            if mj is None or jv is None or not sel.any():
                continue
            back = int(np.searchsorted(jv.neighbors, view.cluster_id))
            if back >= jv.neighbors.size or jv.neighbors[back] != view.cluster_id:
                continue
            wj = arrive[sel]
            rb = self.rewards(view.cluster_id, ttype[sel], cpu[sel], net[sel], wj - int(jv.delays[back]))
            self._batch_update(mj, ttype[sel], wj, np.full(wj.size, back), rb, None, s.eps_neighbor)

    def _batch_update(self, mt: ManagerTables, ttype, w, k, r, zeta, eps) -> None:
        alpha = self.tables.settings.alpha2
        flat = (ttype * (self.tables.settings.max_wait + 1) + w) * mt.q2.shape[2] + k
        q = mt.q2.reshape(-1)
        counts = np.bincount(flat, minlength=q.size)       # the table is small (<= 4 x 11 x degree): bincount
        keys = np.flatnonzero(counts)                        # beats np.unique's sort
        mean_r = np.bincount(flat, weights=r, minlength=q.size)[keys] / counts[keys]
        q[keys] = (1.0 - alpha) * q[keys] + alpha * mean_r
        if zeta is None:
            return
        d = mt.q2.shape[2]
        states = np.flatnonzero(counts.reshape(-1, d).any(axis=1))
        pi2, q2 = mt.pi2.reshape(-1, d), mt.q2.reshape(-1, d)
        pi, qs = pi2[states], q2[states]
        pi2[states] = limit_rows(pi + zeta * (qs - (pi * qs).sum(axis=1, keepdims=True)), np.full(d, eps))
