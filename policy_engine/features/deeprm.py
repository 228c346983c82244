"""DeepRM's view of a Schedule observation (Mao et al., HotNets 2016; DeepRM).

In the DeepRM setting the whole cluster is one node and every waiting job is one single-container ask. Its
JobMetadata.tags["slot"] says where DeepRM shows it: "0" .. "M-1" for the M visible job slots, "backlog" for
the jobs queued behind them (in backlog order); tags["slots"] is M. expected_runtime_ms is the job's length T_j
in `step_ms` units.

`slot_asks` gives the M slots (None where empty); `image` rebuilds DeepRM's image-like state from the
observation alone (running containers with their remaining time, slots, backlog), so a learned DeepRM policy
behind the engine sees what the gymnasium environment shows it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policy_engine.types import Ask, Resource, ScheduleObservation

SLOT_TAG = "slot"
SLOTS_TAG = "slots"   # M, the number of visible job slots, on every ask
BACKLOG = "backlog"
DEFAULT_SLOTS = 10


@dataclass(frozen=True)
class ImageSpec:
    """Shape parameters of the image (DeepRM's reference defaults, with DeepRM's resource fractions)."""

    num_res: int = 2
    res_slot: int = 20          # units per resource: jobs ask 0.25-0.5 (5-10 units) of the dominant one
    max_job_size: int = 10
    time_horizon: int = 20
    num_slots: int = 10
    backlog_size: int = 60
    max_track_since_new: int = 10
    step_ms: int = 1000
    memory_unit_mb: int = 1024  # resource 0 is memory in units of this; resource 1 is vcores

    @property
    def backlog_width(self) -> int:
        return -(-self.backlog_size // self.time_horizon)

    @property
    def width(self) -> int:
        return (self.res_slot + self.max_job_size * self.num_slots) * self.num_res + self.backlog_width + 1

    def units(self, r: Resource) -> tuple[int, ...]:
        """A container resource in DeepRM units (memory, vcores)."""
        return (r.memory_mb // self.memory_unit_mb, r.vcores)[: self.num_res]


def num_slots(obs: ScheduleObservation, default: int = DEFAULT_SLOTS) -> int:
    """M as the observation's asks state it (tags["slots"]), else `default`."""
    for ask in obs.asks:
        if ask.job is not None and SLOTS_TAG in ask.job.tags:
            try:
                m = int(ask.job.tags[SLOTS_TAG])
            except ValueError:
                break
            if 1 <= m <= 1000:
                return m
            break
    return default


def slot_asks(obs: ScheduleObservation, num_slots: int | None = None) -> list[Ask | None]:
    """The M visible job slots of the observation, by slot number; None for an empty slot.

    M is `num_slots` when given, else what the observation states (see `num_slots`)."""
    if num_slots is None:
        num_slots = globals()["num_slots"](obs)
    slots: list[Ask | None] = [None] * num_slots
    for ask in obs.asks:
        tag = ask.job.tags.get(SLOT_TAG) if ask.job is not None else None
        if tag is None or tag == BACKLOG or ask.num_containers <= 0:
            continue
        try:
            k = int(tag)
        except ValueError:
            continue
        if 0 <= k < num_slots:
            slots[k] = ask
    return slots


def backlog_length(obs: ScheduleObservation) -> int:
    return sum(1 for a in obs.asks if a.job is not None and a.job.tags.get(SLOT_TAG) == BACKLOG)


def image(obs: ScheduleObservation, spec: ImageSpec = ImageSpec(), since_new: int = 0) -> np.ndarray:
    """DeepRM's state: (time_horizon, width) float32 in [0, 1].

    Columns, per resource: the cluster's occupancy over the next time_horizon steps (res_slot columns), then each
    job slot's demand (max_job_size columns, job length rows); after all resources, the backlog as a filled block
    of backlog_width columns, and one column with the steps since the last arrival / max_track_since_new.
    """
    h = spec.time_horizon
    out = np.zeros((h, spec.width), dtype=np.float32)
    used = np.zeros((h, spec.num_res), dtype=np.int64)
    for c in obs.node.running:
        steps = min(-(-c.expected_remaining_ms // spec.step_ms), h)
        used[:steps] += np.asarray(spec.units(c.resource))
    slots = slot_asks(obs, spec.num_slots)
    col = 0
    for i in range(spec.num_res):
        for t in range(h):
            out[t, col: col + min(int(used[t, i]), spec.res_slot)] = 1.0
        col += spec.res_slot
        for ask in slots:
            if ask is not None:
                length = min(-(-ask.job.expected_runtime_ms // spec.step_ms), h)
                size = min(spec.units(ask.resource)[i], spec.max_job_size)
                out[:length, col: col + size] = 1.0
            col += spec.max_job_size
    b = min(backlog_length(obs), spec.backlog_size)
    w = spec.backlog_width
    full, rest = divmod(b, w)
    out[:full, col: col + w] = 1.0
    if rest:
        out[full, col: col + rest] = 1.0
    out[:, -1] = min(since_new, spec.max_track_since_new) / spec.max_track_since_new
    return out


def since_newest_ask(obs: ScheduleObservation, spec: ImageSpec = ImageSpec(),
                     started: frozenset[str] | set[str] = frozenset()) -> int:
    """Steps since the newest waiting job arrived: the image's last column as a policy can read it off the
    observation (the gymnasium environment counts from the newest arrival of any job instead). `started`: ask ids
    already started in this call, no longer waiting (the learner re-reads the column after every start)."""
    submitted = [a.submit_time_ms for a in obs.asks if a.ask_id not in started]
    if not submitted:
        return spec.max_track_since_new
    return max(0, (obs.node.timestamp_ms - max(submitted)) // spec.step_ms)


def render(used: np.ndarray, slot_len: np.ndarray, slot_dem: np.ndarray, backlog: np.ndarray, since_new: np.ndarray,
           spec: ImageSpec = ImageSpec()) -> np.ndarray:
    """`image` from arrays, vectorised over a leading batch axis: what a learner renders for many states at once.

    used (B, time_horizon, num_res): units held by running jobs in each coming step; slot_len (B, M): each slot's
    job length in steps (0: empty); slot_dem (B, M, num_res): its demand in units; backlog (B,): jobs behind the
    slots; since_new (B,): steps since the newest arrival. Returns (B, time_horizon, width) float32, equal to
    `image` of the same state.
    """
    used, slot_len, slot_dem = np.asarray(used), np.asarray(slot_len), np.asarray(slot_dem)
    n, h, m = used.shape[0], spec.time_horizon, slot_len.shape[1]
    out = np.zeros((n, h, spec.width), dtype=np.float32)
    t = np.arange(h)
    cells = np.arange(max(spec.res_slot, spec.max_job_size))
    length = np.minimum(slot_len, h)
    col = 0
    for i in range(spec.num_res):
        occ = np.minimum(used[:, :, i], spec.res_slot)
        out[:, :, col: col + spec.res_slot] = cells[None, None, :spec.res_slot] < occ[:, :, None]
        col += spec.res_slot
        size = np.minimum(slot_dem[:, :, i], spec.max_job_size)
        block = (t[None, :, None, None] < length[:, None, :, None]) & \
                (cells[None, None, None, :spec.max_job_size] < size[:, None, :, None])
        out[:, :, col: col + m * spec.max_job_size] = block.reshape(n, h, m * spec.max_job_size)
        col += m * spec.max_job_size
    b = np.minimum(np.asarray(backlog), spec.backlog_size)
    w = spec.backlog_width
    filled = (t[:, None] * w + np.arange(w)[None, :])[None] < b[:, None, None]
    out[:, :, col: col + w] = filled
    out[:, :, -1] = (np.minimum(np.asarray(since_new), spec.max_track_since_new)
                     / spec.max_track_since_new)[:, None]
    return out
