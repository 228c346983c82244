"""Observations, decisions and feedback events: what a policy sees and returns, and what a learner hears.

These are the Python view of the yarnrl.v1 messages (policy_engine.codec converts both ways; only the codec, the
server and the client touch protobuf). Policies take them rather than protobuf messages so the emulator can call a
policy in-process without serializing, and so learned policies get numpy arrays where the protocol has repeated
numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import ClassVar

import numpy as np

ANY = "*"


class JobCategory(IntEnum):
    UNSPECIFIED = 0
    REGULAR = 1
    TIME_CRITICAL = 2
    STREAMING = 3


class Locality(IntEnum):
    """Placement levels, best first (values match yarnrl.v1.Locality)."""

    UNSPECIFIED = 0
    CACHE_LOCAL = 1
    NODE_LOCAL = 2
    RACK_LOCAL = 3
    OFF_SWITCH = 4


class Calculator(IntEnum):
    """Which dimensions YARN's ResourceCalculator compares (values match yarnrl.v1.ResourceCalculatorKind)."""

    UNSPECIFIED = 0  # an older plugin: memory and vcores (and extra types), as before the field existed
    MEMORY = 1  # DefaultResourceCalculator: memory only (FifoScheduler; CapacityScheduler's default)
    DOMINANT = 2  # DominantResourceCalculator: memory, vcores and every configured resource type


_MEMORY_ONLY = int(Calculator.MEMORY)


@dataclass(slots=True)
class Resource:
    """An amount of memory, vcores and extra resource types.

    `compared` matters on the resource something is fitted *into* (a node's or the cluster's free resource): the
    dimensions the scheduler's ResourceCalculator compares there (Calculator; the codec sets it from the request's
    ClusterSummary.resource_calculator, `minus` keeps it). It is not part of equality.

    `max_copies_in` is the engine's one rule for "how many containers of this size fit there" (`fits_in` is
    `max_copies_in(...) >= times`): every policy, the placement loop (locality.place) and the engine's clip go
    through it, so none re-implements the calculator.
    """

    memory_mb: int = 0
    vcores: int = 0
    extra: dict[str, int] = field(default_factory=dict)
    compared: int = field(default=0, compare=False)

    def fits_in(self, other: Resource, times: int = 1) -> bool:
        return self.max_copies_in(other) >= times

    def max_copies_in(self, other: Resource) -> int:
        """How many containers of this size fit into `other` by the dimensions `other.compared` names (a large
        number when this is zero-sized in all of them). YARN's DefaultResourceCalculator compares memory only, so
        with it a node of 4 vcores takes 8 containers of 512 MB and 1 vcore, as YARN places them."""
        m = self.memory_mb
        if other.compared == _MEMORY_ONLY:
            if m > 0:
                n = other.memory_mb // m
                return n if n > 0 else 0
            return 1 << 30
        if not self.extra:  # the usual case (memory and vcores only), without building a list
            v = self.vcores
            if m > 0:
                n = other.memory_mb // m
                if v > 0:
                    nv = other.vcores // v
                    if nv < n:
                        n = nv
            elif v > 0:
                n = other.vcores // v
            else:
                return 1 << 30
            return n if n > 0 else 0
        limits = []
        if m > 0:
            limits.append(other.memory_mb // m)
        if self.vcores > 0:
            limits.append(other.vcores // self.vcores)
        for k, v in self.extra.items():
            if v > 0:
                limits.append(other.extra.get(k, 0) // v)
        return max(0, min(limits)) if limits else 1 << 30

    def minus(self, other: Resource, times: int = 1) -> Resource:
        if not self.extra and not other.extra:
            return Resource(self.memory_mb - other.memory_mb * times, self.vcores - other.vcores * times, {},
                            self.compared)
        extra = dict(self.extra)
        for k, v in other.extra.items():
            extra[k] = extra.get(k, 0) - v * times
        return Resource(self.memory_mb - other.memory_mb * times, self.vcores - other.vcores * times, extra,
                        self.compared)


@dataclass(slots=True)
class BlockInfo:
    block_id: str = ""
    length: int = 0
    hosts: tuple[str, ...] = ()
    cached_hosts: tuple[str, ...] = ()
    racks: tuple[str, ...] = ()


@dataclass(slots=True)
class JobMetadata:
    category: JobCategory = JobCategory.UNSPECIFIED
    deadline_ms: int = 0
    expected_runtime_ms: int = 0
    input_block_ids: tuple[str, ...] = ()
    input_blocks: tuple[BlockInfo, ...] = ()
    input_paths: tuple[str, ...] = ()
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Container:
    container_id: str
    application_id: str = ""
    resource: Resource = field(default_factory=Resource)
    start_time_ms: int = 0
    expected_remaining_ms: int = 0


@dataclass(slots=True)
class Utilization:
    cpu: float = 0.0
    physical_memory_mb: int = 0
    virtual_memory_mb: int = 0


@dataclass(slots=True)
class Node:
    node_id: str
    host: str = ""
    rack: str = ""
    total: Resource = field(default_factory=Resource)
    unallocated: Resource = field(default_factory=Resource)
    running: tuple[Container, ...] = ()
    utilization: Utilization | None = None
    timestamp_ms: int = 0


@dataclass(slots=True)
class LocalityRequest:
    resource_name: str
    num_containers: int
    relax_locality: bool = True


@dataclass(slots=True)
class Ask:
    """Pending containers of one (application attempt, scheduler key)."""

    ask_id: str
    application_id: str = ""
    attempt_id: int = 1
    queue: str = "default"
    user: str = ""
    priority: int = 0
    allocation_request_id: int = 0
    resource: Resource = field(default_factory=Resource)
    num_containers: int = 0
    locality: tuple[LocalityRequest, ...] = ()
    submit_time_ms: int = 0
    job: JobMetadata | None = None
    relax_locality: bool = True
    # Node heartbeats this ask has been offered since its last node- or rack-local assignment, this one included
    # (YARN's SchedulerApplicationAttempt scheduling opportunities). Filled in by the engine, not the caller.
    scheduling_opportunities: int = 0
    # Distinct host and rack names of the whole ask when `locality` holds only the entries for the request's node
    # (the plugin sends it so: the other hosts' entries cannot change a decision on this node); 0 = `locality` is
    # the whole list.
    locality_names: int = 0

    @property
    def key(self) -> tuple[str, int, int, int]:
        """Identity across heartbeats: the application attempt and its scheduler key."""
        return (self.application_id, self.attempt_id, self.priority, self.allocation_request_id)

    @property
    def names_places(self) -> bool:
        """Whether the ask names hosts or racks (a map task's ask), not only "*"."""
        return self.locality_names > 0 or any(lr.resource_name != ANY for lr in self.locality)

    @property
    def unique_locations(self) -> int:
        """Distinct resource names asked for, "*" included (CapacityScheduler's uniqLocationAsks)."""
        if self.locality_names > 0:
            return self.locality_names + 1
        names = {lr.resource_name for lr in self.locality}
        names.add(ANY)
        return len(names)

    def locality_count(self, name: str) -> int:
        for lr in self.locality:
            if lr.resource_name == name:
                return lr.num_containers
        return 0


@dataclass(slots=True)
class ClusterSummary:
    num_nodes: int = 0
    num_racks: int = 0
    total: Resource = field(default_factory=Resource)
    unallocated: Resource = field(default_factory=Resource)
    calculator: Calculator = Calculator.UNSPECIFIED  # the RM's ResourceCalculator (see Resource.compared)


@dataclass(slots=True)
class ScheduleObservation:
    node: Node
    asks: list[Ask]
    cluster: ClusterSummary = field(default_factory=ClusterSummary)
    request_id: str = ""
    shadow: bool = False  # ScheduleRequest.shadow: the answer is recorded, never applied (policy_engine/shadow.py)


@dataclass(slots=True)
class Assignment:
    ask_id: str
    count: int
    locality: Locality = Locality.UNSPECIFIED


@dataclass(slots=True)
class ScheduleDecision:
    assignments: list[Assignment] = field(default_factory=list)


# ---------------------------------------------------------------- Route


@dataclass(slots=True)
class ClusterDemand:
    cluster_id: int
    request_distribution: np.ndarray  # int, 10 equally likely executor counts
    standard_runtime: float = 0.0
    deadline: float = 0.0


@dataclass(slots=True)
class RouteJob:
    job_id: str
    category: JobCategory = JobCategory.REGULAR
    request_distribution: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    executor_runtime: float = 0.0
    deadline: float = 0.0
    duration: float = 0.0
    executions: int = 1
    submit_time: float = 0.0
    expected_hetero_factor: float = 0.0
    hetero_sensitivity: int = 0
    per_cluster: tuple[ClusterDemand, ...] = ()


@dataclass(slots=True)
class ClusterState:
    cluster_id: int
    capacity: int = 0
    max_capacity: int = 0
    current_capacity: int = 0
    available: int = 0
    hetero_factor: float = 0.0
    occupation_history: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    missed_deadlines: int = 0
    queued_jobs: int = 0
    elastic: bool = False


@dataclass(slots=True)
class RouteSequence:
    """Where a Route request stands in its caller's stream (RouteRequest.sequence / stream_id): `index` decisions
    were asked for before it in the stream named `stream`."""

    stream: str
    index: int


@dataclass(slots=True)
class RouteObservation:
    jobs: list[RouteJob]
    clusters: list[ClusterState]
    time: float = 0.0
    request_id: str = ""
    sequence: RouteSequence | None = None  # the request's turn in its caller's stream, when the caller numbers them
    manager: ManagerView | None = None  # DSRAP (seed 004): one cluster manager's step instead of a job buffer
    # The clusters' occupation histories as the rows of one (clusters x steps) array, when the producer keeps them so
    # (the multi-cluster emulator): row i is clusters[i].occupation_history. Lets a policy average every cluster in
    # one numpy call (routing.mean_occupations); never sent over the wire. Whoever changes `clusters` drops it.
    occupation: np.ndarray | None = None


@dataclass(slots=True)
class RouteDecision:
    job_index: int
    cluster_id: int
    # DSRAP (seed 004), one entry per task of RouteObservation.manager: the node index it is allocated to in the
    # manager's own cluster (-1: not allocated), and the neighbour cluster it is forwarded to (-1: kept).
    task_node: np.ndarray | None = None
    task_next: np.ndarray | None = None
    # What the policy saw on its way to the decision (abstract states, actions); for the learner in the same
    # process, never sent over the wire.
    trace: object = None


# ---------------------------------------------------------------- DSRAP (seed 004)


@dataclass(slots=True)
class ManagerView:
    """One cluster manager's local view at one step (DSRAP, seed 004): its nodes, its neighbours and the tasks it
    holds. Arrays are numpy, one entry per node / neighbour / task."""

    cluster_id: int
    cpu_free: np.ndarray            # float64 per node
    net_free: np.ndarray
    cpu_capacity: np.ndarray
    net_capacity: np.ndarray
    neighbors: np.ndarray           # int64 cluster ids
    delays: np.ndarray              # int64 transfer time to each neighbour, in steps
    task_id: np.ndarray             # int64
    task_type: np.ndarray           # int64, index into the scenario's task types
    task_cpu: np.ndarray            # float64 demand of the task's one capsule
    task_net: np.ndarray
    task_utility: np.ndarray        # float64 utility rate
    task_wait: np.ndarray           # int64 steps left before the task is abandoned (0: this step is its last)
    task_hops: np.ndarray           # int64 transfers so far
    transfer_limit: int = 40        # tasks this manager may forward per step


# ---------------------------------------------------------------- Report (feedback events)


@dataclass(slots=True, kw_only=True)
class Event:
    """Base of the feedback events (the kinds of yarnrl.v1.Event). `kind` names the protocol's oneof field."""

    kind: ClassVar[str] = ""
    timestamp_ms: int = 0       # or the Route path's time unit
    decision_id: str = ""       # the decision this event follows from, when known


@dataclass(slots=True)
class ContainerStarted(Event):
    kind: ClassVar[str] = "container_started"
    container_id: str = ""
    application_id: str = ""
    node_id: str = ""
    ask_id: str = ""
    locality: Locality = Locality.UNSPECIFIED
    rack_cached: bool | None = None  # RACK_LOCAL: a cached replica in the node's rack (CRL) or not (DRL); None unknown
    input_block_id: str = ""         # the input block the label refers to, when known


@dataclass(slots=True)
class ContainerFinished(Event):
    kind: ClassVar[str] = "container_finished"
    container_id: str = ""
    application_id: str = ""
    node_id: str = ""
    runtime_ms: int = 0
    exit_status: int = 0
    locality: Locality = Locality.UNSPECIFIED
    rack_cached: bool | None = None
    input_block_id: str = ""


@dataclass(slots=True)
class JobFinished(Event):
    kind: ClassVar[str] = "job_finished"
    job_id: str = ""            # application id, or RouteJob.job_id
    cluster_id: int = 0
    runtime: float = 0.0
    delay_ratio: float = 0.0    # actual / optimal run time, 0 = unknown
    missed_deadlines: int = 0
    succeeded: bool = False


@dataclass(slots=True)
class DeadlineMissed(Event):
    kind: ClassVar[str] = "deadline_missed"
    job_id: str = ""
    cluster_id: int = 0


@dataclass(slots=True)
class NodeAdded(Event):
    kind: ClassVar[str] = "node_added"
    node_id: str = ""
    host: str = ""
    rack: str = ""
    total: Resource = field(default_factory=Resource)


@dataclass(slots=True)
class NodeRemoved(Event):
    kind: ClassVar[str] = "node_removed"
    node_id: str = ""


EVENT_TYPES: dict[str, type[Event]] = {cls.kind: cls for cls in (
    ContainerStarted, ContainerFinished, JobFinished, DeadlineMissed, NodeAdded, NodeRemoved)}


class ObservationMismatch(ValueError):
    """A well-formed request this policy cannot answer: a DSRAP manager view sent to a job router or the reverse,
    a cluster or job-slot count other than the model was trained for. The server answers INVALID_ARGUMENT (the
    caller sent the wrong request for this engine), not INTERNAL."""
