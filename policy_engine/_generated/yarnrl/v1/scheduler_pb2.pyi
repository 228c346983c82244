from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JobCategory(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_CATEGORY_UNSPECIFIED: _ClassVar[JobCategory]
    JOB_CATEGORY_REGULAR: _ClassVar[JobCategory]
    JOB_CATEGORY_TIME_CRITICAL: _ClassVar[JobCategory]
    JOB_CATEGORY_STREAMING: _ClassVar[JobCategory]

class Locality(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LOCALITY_UNSPECIFIED: _ClassVar[Locality]
    LOCALITY_CACHE_LOCAL: _ClassVar[Locality]
    LOCALITY_NODE_LOCAL: _ClassVar[Locality]
    LOCALITY_RACK_LOCAL: _ClassVar[Locality]
    LOCALITY_OFF_SWITCH: _ClassVar[Locality]

class ResourceCalculatorKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESOURCE_CALCULATOR_UNSPECIFIED: _ClassVar[ResourceCalculatorKind]
    RESOURCE_CALCULATOR_MEMORY: _ClassVar[ResourceCalculatorKind]
    RESOURCE_CALCULATOR_DOMINANT: _ClassVar[ResourceCalculatorKind]
JOB_CATEGORY_UNSPECIFIED: JobCategory
JOB_CATEGORY_REGULAR: JobCategory
JOB_CATEGORY_TIME_CRITICAL: JobCategory
JOB_CATEGORY_STREAMING: JobCategory
LOCALITY_UNSPECIFIED: Locality
LOCALITY_CACHE_LOCAL: Locality
LOCALITY_NODE_LOCAL: Locality
LOCALITY_RACK_LOCAL: Locality
LOCALITY_OFF_SWITCH: Locality
RESOURCE_CALCULATOR_UNSPECIFIED: ResourceCalculatorKind
RESOURCE_CALCULATOR_MEMORY: ResourceCalculatorKind
RESOURCE_CALCULATOR_DOMINANT: ResourceCalculatorKind

class Resource(_message.Message):
    __slots__ = ("memory_mb", "vcores", "extra")
    class ExtraEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    VCORES_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    memory_mb: int
    vcores: int
    extra: _containers.ScalarMap[str, int]
    def __init__(self, memory_mb: _Optional[int] = ..., vcores: _Optional[int] = ..., extra: _Optional[_Mapping[str, int]] = ...) -> None: ...

class BlockInfo(_message.Message):
    __slots__ = ("block_id", "length", "hosts", "cached_hosts", "racks")
    BLOCK_ID_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    CACHED_HOSTS_FIELD_NUMBER: _ClassVar[int]
    RACKS_FIELD_NUMBER: _ClassVar[int]
    block_id: str
    length: int
    hosts: _containers.RepeatedScalarFieldContainer[str]
    cached_hosts: _containers.RepeatedScalarFieldContainer[str]
    racks: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, block_id: _Optional[str] = ..., length: _Optional[int] = ..., hosts: _Optional[_Iterable[str]] = ..., cached_hosts: _Optional[_Iterable[str]] = ..., racks: _Optional[_Iterable[str]] = ...) -> None: ...

class JobMetadata(_message.Message):
    __slots__ = ("category", "deadline_ms", "expected_runtime_ms", "input_block_ids", "input_blocks", "input_paths", "tags")
    class TagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_RUNTIME_MS_FIELD_NUMBER: _ClassVar[int]
    INPUT_BLOCK_IDS_FIELD_NUMBER: _ClassVar[int]
    INPUT_BLOCKS_FIELD_NUMBER: _ClassVar[int]
    INPUT_PATHS_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    category: JobCategory
    deadline_ms: int
    expected_runtime_ms: int
    input_block_ids: _containers.RepeatedScalarFieldContainer[str]
    input_blocks: _containers.RepeatedCompositeFieldContainer[BlockInfo]
    input_paths: _containers.RepeatedScalarFieldContainer[str]
    tags: _containers.ScalarMap[str, str]
    def __init__(self, category: _Optional[_Union[JobCategory, str]] = ..., deadline_ms: _Optional[int] = ..., expected_runtime_ms: _Optional[int] = ..., input_block_ids: _Optional[_Iterable[str]] = ..., input_blocks: _Optional[_Iterable[_Union[BlockInfo, _Mapping]]] = ..., input_paths: _Optional[_Iterable[str]] = ..., tags: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ContainerInfo(_message.Message):
    __slots__ = ("container_id", "application_id", "resource", "start_time_ms", "expected_remaining_ms")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REMAINING_MS_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    application_id: str
    resource: Resource
    start_time_ms: int
    expected_remaining_ms: int
    def __init__(self, container_id: _Optional[str] = ..., application_id: _Optional[str] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ..., start_time_ms: _Optional[int] = ..., expected_remaining_ms: _Optional[int] = ...) -> None: ...

class Utilization(_message.Message):
    __slots__ = ("cpu", "physical_memory_mb", "virtual_memory_mb")
    CPU_FIELD_NUMBER: _ClassVar[int]
    PHYSICAL_MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    VIRTUAL_MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    cpu: float
    physical_memory_mb: int
    virtual_memory_mb: int
    def __init__(self, cpu: _Optional[float] = ..., physical_memory_mb: _Optional[int] = ..., virtual_memory_mb: _Optional[int] = ...) -> None: ...

class NodeSnapshot(_message.Message):
    __slots__ = ("node_id", "host", "rack", "total", "unallocated", "running", "utilization", "timestamp_ms", "partition")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    UNALLOCATED_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    host: str
    rack: str
    total: Resource
    unallocated: Resource
    running: _containers.RepeatedCompositeFieldContainer[ContainerInfo]
    utilization: Utilization
    timestamp_ms: int
    partition: str
    def __init__(self, node_id: _Optional[str] = ..., host: _Optional[str] = ..., rack: _Optional[str] = ..., total: _Optional[_Union[Resource, _Mapping]] = ..., unallocated: _Optional[_Union[Resource, _Mapping]] = ..., running: _Optional[_Iterable[_Union[ContainerInfo, _Mapping]]] = ..., utilization: _Optional[_Union[Utilization, _Mapping]] = ..., timestamp_ms: _Optional[int] = ..., partition: _Optional[str] = ...) -> None: ...

class LocalityRequest(_message.Message):
    __slots__ = ("resource_name", "num_containers", "relax_locality")
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    NUM_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    RELAX_LOCALITY_FIELD_NUMBER: _ClassVar[int]
    resource_name: str
    num_containers: int
    relax_locality: bool
    def __init__(self, resource_name: _Optional[str] = ..., num_containers: _Optional[int] = ..., relax_locality: _Optional[bool] = ...) -> None: ...

class ResourceAsk(_message.Message):
    __slots__ = ("ask_id", "application_id", "attempt_id", "queue", "user", "priority", "allocation_request_id", "resource", "num_containers", "locality", "submit_time_ms", "job", "relax_locality", "queue_path", "user_headroom", "partition", "locality_names")
    ASK_ID_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NUM_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    RELAX_LOCALITY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_PATH_FIELD_NUMBER: _ClassVar[int]
    USER_HEADROOM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_NAMES_FIELD_NUMBER: _ClassVar[int]
    ask_id: str
    application_id: str
    attempt_id: int
    queue: str
    user: str
    priority: int
    allocation_request_id: int
    resource: Resource
    num_containers: int
    locality: _containers.RepeatedCompositeFieldContainer[LocalityRequest]
    submit_time_ms: int
    job: JobMetadata
    relax_locality: bool
    queue_path: str
    user_headroom: Resource
    partition: str
    locality_names: int
    def __init__(self, ask_id: _Optional[str] = ..., application_id: _Optional[str] = ..., attempt_id: _Optional[int] = ..., queue: _Optional[str] = ..., user: _Optional[str] = ..., priority: _Optional[int] = ..., allocation_request_id: _Optional[int] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ..., num_containers: _Optional[int] = ..., locality: _Optional[_Iterable[_Union[LocalityRequest, _Mapping]]] = ..., submit_time_ms: _Optional[int] = ..., job: _Optional[_Union[JobMetadata, _Mapping]] = ..., relax_locality: _Optional[bool] = ..., queue_path: _Optional[str] = ..., user_headroom: _Optional[_Union[Resource, _Mapping]] = ..., partition: _Optional[str] = ..., locality_names: _Optional[int] = ...) -> None: ...

class ClusterSummary(_message.Message):
    __slots__ = ("num_nodes", "num_racks", "total", "unallocated", "resource_calculator")
    NUM_NODES_FIELD_NUMBER: _ClassVar[int]
    NUM_RACKS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    UNALLOCATED_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CALCULATOR_FIELD_NUMBER: _ClassVar[int]
    num_nodes: int
    num_racks: int
    total: Resource
    unallocated: Resource
    resource_calculator: ResourceCalculatorKind
    def __init__(self, num_nodes: _Optional[int] = ..., num_racks: _Optional[int] = ..., total: _Optional[_Union[Resource, _Mapping]] = ..., unallocated: _Optional[_Union[Resource, _Mapping]] = ..., resource_calculator: _Optional[_Union[ResourceCalculatorKind, str]] = ...) -> None: ...

class ScheduleRequest(_message.Message):
    __slots__ = ("request_id", "node", "asks", "cluster", "shadow")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    ASKS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    SHADOW_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    node: NodeSnapshot
    asks: _containers.RepeatedCompositeFieldContainer[ResourceAsk]
    cluster: ClusterSummary
    shadow: bool
    def __init__(self, request_id: _Optional[str] = ..., node: _Optional[_Union[NodeSnapshot, _Mapping]] = ..., asks: _Optional[_Iterable[_Union[ResourceAsk, _Mapping]]] = ..., cluster: _Optional[_Union[ClusterSummary, _Mapping]] = ..., shadow: _Optional[bool] = ...) -> None: ...

class Assignment(_message.Message):
    __slots__ = ("ask_id", "count", "locality")
    ASK_ID_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_FIELD_NUMBER: _ClassVar[int]
    ask_id: str
    count: int
    locality: Locality
    def __init__(self, ask_id: _Optional[str] = ..., count: _Optional[int] = ..., locality: _Optional[_Union[Locality, str]] = ...) -> None: ...

class ScheduleResponse(_message.Message):
    __slots__ = ("request_id", "decision_id", "assignments", "policy", "model_version", "shadow")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    MODEL_VERSION_FIELD_NUMBER: _ClassVar[int]
    SHADOW_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    decision_id: str
    assignments: _containers.RepeatedCompositeFieldContainer[Assignment]
    policy: str
    model_version: str
    shadow: bool
    def __init__(self, request_id: _Optional[str] = ..., decision_id: _Optional[str] = ..., assignments: _Optional[_Iterable[_Union[Assignment, _Mapping]]] = ..., policy: _Optional[str] = ..., model_version: _Optional[str] = ..., shadow: _Optional[bool] = ...) -> None: ...

class ScheduleBatchRequest(_message.Message):
    __slots__ = ("batch_id", "nodes", "asks", "cluster", "request_ids", "locality")
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    ASKS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_IDS_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    nodes: _containers.RepeatedCompositeFieldContainer[NodeSnapshot]
    asks: _containers.RepeatedCompositeFieldContainer[ResourceAsk]
    cluster: ClusterSummary
    request_ids: _containers.RepeatedScalarFieldContainer[str]
    locality: ScheduleBatchLocality
    def __init__(self, batch_id: _Optional[str] = ..., nodes: _Optional[_Iterable[_Union[NodeSnapshot, _Mapping]]] = ..., asks: _Optional[_Iterable[_Union[ResourceAsk, _Mapping]]] = ..., cluster: _Optional[_Union[ClusterSummary, _Mapping]] = ..., request_ids: _Optional[_Iterable[str]] = ..., locality: _Optional[_Union[ScheduleBatchLocality, _Mapping]] = ...) -> None: ...

class ScheduleBatchLocality(_message.Message):
    __slots__ = ("names", "ask_index", "name_index", "num_containers", "relax_locality")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    ASK_INDEX_FIELD_NUMBER: _ClassVar[int]
    NAME_INDEX_FIELD_NUMBER: _ClassVar[int]
    NUM_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    RELAX_LOCALITY_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    ask_index: _containers.RepeatedScalarFieldContainer[int]
    name_index: _containers.RepeatedScalarFieldContainer[int]
    num_containers: _containers.RepeatedScalarFieldContainer[int]
    relax_locality: _containers.RepeatedScalarFieldContainer[bool]
    def __init__(self, names: _Optional[_Iterable[str]] = ..., ask_index: _Optional[_Iterable[int]] = ..., name_index: _Optional[_Iterable[int]] = ..., num_containers: _Optional[_Iterable[int]] = ..., relax_locality: _Optional[_Iterable[bool]] = ...) -> None: ...

class ScheduleBatchRefusal(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class ScheduleBatchNodeResult(_message.Message):
    __slots__ = ("node_id", "request_id", "decision_id", "assignments", "refusal")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    request_id: str
    decision_id: str
    assignments: _containers.RepeatedCompositeFieldContainer[Assignment]
    refusal: ScheduleBatchRefusal
    def __init__(self, node_id: _Optional[str] = ..., request_id: _Optional[str] = ..., decision_id: _Optional[str] = ..., assignments: _Optional[_Iterable[_Union[Assignment, _Mapping]]] = ..., refusal: _Optional[_Union[ScheduleBatchRefusal, _Mapping]] = ...) -> None: ...

class ScheduleBatchAskRefusal(_message.Message):
    __slots__ = ("index", "ask_id", "refusal")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ASK_ID_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    index: int
    ask_id: str
    refusal: ScheduleBatchRefusal
    def __init__(self, index: _Optional[int] = ..., ask_id: _Optional[str] = ..., refusal: _Optional[_Union[ScheduleBatchRefusal, _Mapping]] = ...) -> None: ...

class ScheduleBatchResponse(_message.Message):
    __slots__ = ("batch_id", "results", "policy", "model_version", "refused_asks")
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    MODEL_VERSION_FIELD_NUMBER: _ClassVar[int]
    REFUSED_ASKS_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    results: _containers.RepeatedCompositeFieldContainer[ScheduleBatchNodeResult]
    policy: str
    model_version: str
    refused_asks: _containers.RepeatedCompositeFieldContainer[ScheduleBatchAskRefusal]
    def __init__(self, batch_id: _Optional[str] = ..., results: _Optional[_Iterable[_Union[ScheduleBatchNodeResult, _Mapping]]] = ..., policy: _Optional[str] = ..., model_version: _Optional[str] = ..., refused_asks: _Optional[_Iterable[_Union[ScheduleBatchAskRefusal, _Mapping]]] = ...) -> None: ...

class ClusterDemand(_message.Message):
    __slots__ = ("cluster_id", "request_distribution", "standard_runtime", "deadline")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_DISTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    STANDARD_RUNTIME_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    cluster_id: int
    request_distribution: _containers.RepeatedScalarFieldContainer[int]
    standard_runtime: float
    deadline: float
    def __init__(self, cluster_id: _Optional[int] = ..., request_distribution: _Optional[_Iterable[int]] = ..., standard_runtime: _Optional[float] = ..., deadline: _Optional[float] = ...) -> None: ...

class RouteJob(_message.Message):
    __slots__ = ("job_id", "category", "request_distribution", "executor_runtime", "deadline", "duration", "executions", "submit_time", "expected_hetero_factor", "hetero_sensitivity", "per_cluster")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_DISTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_RUNTIME_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_HETERO_FACTOR_FIELD_NUMBER: _ClassVar[int]
    HETERO_SENSITIVITY_FIELD_NUMBER: _ClassVar[int]
    PER_CLUSTER_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    category: JobCategory
    request_distribution: _containers.RepeatedScalarFieldContainer[int]
    executor_runtime: float
    deadline: float
    duration: float
    executions: int
    submit_time: float
    expected_hetero_factor: float
    hetero_sensitivity: int
    per_cluster: _containers.RepeatedCompositeFieldContainer[ClusterDemand]
    def __init__(self, job_id: _Optional[str] = ..., category: _Optional[_Union[JobCategory, str]] = ..., request_distribution: _Optional[_Iterable[int]] = ..., executor_runtime: _Optional[float] = ..., deadline: _Optional[float] = ..., duration: _Optional[float] = ..., executions: _Optional[int] = ..., submit_time: _Optional[float] = ..., expected_hetero_factor: _Optional[float] = ..., hetero_sensitivity: _Optional[int] = ..., per_cluster: _Optional[_Iterable[_Union[ClusterDemand, _Mapping]]] = ...) -> None: ...

class ClusterState(_message.Message):
    __slots__ = ("cluster_id", "capacity", "max_capacity", "current_capacity", "available", "hetero_factor", "occupation_history", "missed_deadlines", "queued_jobs", "elastic")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    MAX_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    CURRENT_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    HETERO_FACTOR_FIELD_NUMBER: _ClassVar[int]
    OCCUPATION_HISTORY_FIELD_NUMBER: _ClassVar[int]
    MISSED_DEADLINES_FIELD_NUMBER: _ClassVar[int]
    QUEUED_JOBS_FIELD_NUMBER: _ClassVar[int]
    ELASTIC_FIELD_NUMBER: _ClassVar[int]
    cluster_id: int
    capacity: int
    max_capacity: int
    current_capacity: int
    available: int
    hetero_factor: float
    occupation_history: _containers.RepeatedScalarFieldContainer[float]
    missed_deadlines: int
    queued_jobs: int
    elastic: bool
    def __init__(self, cluster_id: _Optional[int] = ..., capacity: _Optional[int] = ..., max_capacity: _Optional[int] = ..., current_capacity: _Optional[int] = ..., available: _Optional[int] = ..., hetero_factor: _Optional[float] = ..., occupation_history: _Optional[_Iterable[float]] = ..., missed_deadlines: _Optional[int] = ..., queued_jobs: _Optional[int] = ..., elastic: _Optional[bool] = ...) -> None: ...

class ManagerView(_message.Message):
    __slots__ = ("cluster_id", "cpu_free", "network_free", "cpu_capacity", "network_capacity", "neighbors", "transfer_delays", "task_ids", "task_types", "task_cpu", "task_network", "task_utility_rate", "task_wait", "task_hops", "transfer_limit")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CPU_FREE_FIELD_NUMBER: _ClassVar[int]
    NETWORK_FREE_FIELD_NUMBER: _ClassVar[int]
    CPU_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    NETWORK_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    NEIGHBORS_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_DELAYS_FIELD_NUMBER: _ClassVar[int]
    TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPES_FIELD_NUMBER: _ClassVar[int]
    TASK_CPU_FIELD_NUMBER: _ClassVar[int]
    TASK_NETWORK_FIELD_NUMBER: _ClassVar[int]
    TASK_UTILITY_RATE_FIELD_NUMBER: _ClassVar[int]
    TASK_WAIT_FIELD_NUMBER: _ClassVar[int]
    TASK_HOPS_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_LIMIT_FIELD_NUMBER: _ClassVar[int]
    cluster_id: int
    cpu_free: _containers.RepeatedScalarFieldContainer[float]
    network_free: _containers.RepeatedScalarFieldContainer[float]
    cpu_capacity: _containers.RepeatedScalarFieldContainer[float]
    network_capacity: _containers.RepeatedScalarFieldContainer[float]
    neighbors: _containers.RepeatedScalarFieldContainer[int]
    transfer_delays: _containers.RepeatedScalarFieldContainer[int]
    task_ids: _containers.RepeatedScalarFieldContainer[int]
    task_types: _containers.RepeatedScalarFieldContainer[int]
    task_cpu: _containers.RepeatedScalarFieldContainer[float]
    task_network: _containers.RepeatedScalarFieldContainer[float]
    task_utility_rate: _containers.RepeatedScalarFieldContainer[float]
    task_wait: _containers.RepeatedScalarFieldContainer[int]
    task_hops: _containers.RepeatedScalarFieldContainer[int]
    transfer_limit: int
    def __init__(self, cluster_id: _Optional[int] = ..., cpu_free: _Optional[_Iterable[float]] = ..., network_free: _Optional[_Iterable[float]] = ..., cpu_capacity: _Optional[_Iterable[float]] = ..., network_capacity: _Optional[_Iterable[float]] = ..., neighbors: _Optional[_Iterable[int]] = ..., transfer_delays: _Optional[_Iterable[int]] = ..., task_ids: _Optional[_Iterable[int]] = ..., task_types: _Optional[_Iterable[int]] = ..., task_cpu: _Optional[_Iterable[float]] = ..., task_network: _Optional[_Iterable[float]] = ..., task_utility_rate: _Optional[_Iterable[float]] = ..., task_wait: _Optional[_Iterable[int]] = ..., task_hops: _Optional[_Iterable[int]] = ..., transfer_limit: _Optional[int] = ...) -> None: ...

class RouteRequest(_message.Message):
    __slots__ = ("request_id", "time", "jobs", "clusters", "sequence", "stream_id", "manager")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    MANAGER_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    time: float
    jobs: _containers.RepeatedCompositeFieldContainer[RouteJob]
    clusters: _containers.RepeatedCompositeFieldContainer[ClusterState]
    sequence: int
    stream_id: str
    manager: ManagerView
    def __init__(self, request_id: _Optional[str] = ..., time: _Optional[float] = ..., jobs: _Optional[_Iterable[_Union[RouteJob, _Mapping]]] = ..., clusters: _Optional[_Iterable[_Union[ClusterState, _Mapping]]] = ..., sequence: _Optional[int] = ..., stream_id: _Optional[str] = ..., manager: _Optional[_Union[ManagerView, _Mapping]] = ...) -> None: ...

class RouteResponse(_message.Message):
    __slots__ = ("request_id", "decision_id", "job_index", "job_id", "cluster_id", "policy", "model_version", "task_node", "task_next_cluster")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_INDEX_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    MODEL_VERSION_FIELD_NUMBER: _ClassVar[int]
    TASK_NODE_FIELD_NUMBER: _ClassVar[int]
    TASK_NEXT_CLUSTER_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    decision_id: str
    job_index: int
    job_id: str
    cluster_id: int
    policy: str
    model_version: str
    task_node: _containers.RepeatedScalarFieldContainer[int]
    task_next_cluster: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, request_id: _Optional[str] = ..., decision_id: _Optional[str] = ..., job_index: _Optional[int] = ..., job_id: _Optional[str] = ..., cluster_id: _Optional[int] = ..., policy: _Optional[str] = ..., model_version: _Optional[str] = ..., task_node: _Optional[_Iterable[int]] = ..., task_next_cluster: _Optional[_Iterable[int]] = ...) -> None: ...

class ContainerStarted(_message.Message):
    __slots__ = ("container_id", "application_id", "node_id", "ask_id", "locality", "rack_cached", "input_block_id")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ASK_ID_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_FIELD_NUMBER: _ClassVar[int]
    RACK_CACHED_FIELD_NUMBER: _ClassVar[int]
    INPUT_BLOCK_ID_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    application_id: str
    node_id: str
    ask_id: str
    locality: Locality
    rack_cached: bool
    input_block_id: str
    def __init__(self, container_id: _Optional[str] = ..., application_id: _Optional[str] = ..., node_id: _Optional[str] = ..., ask_id: _Optional[str] = ..., locality: _Optional[_Union[Locality, str]] = ..., rack_cached: _Optional[bool] = ..., input_block_id: _Optional[str] = ...) -> None: ...

class ContainerFinished(_message.Message):
    __slots__ = ("container_id", "application_id", "node_id", "runtime_ms", "exit_status", "locality", "rack_cached", "input_block_id")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_MS_FIELD_NUMBER: _ClassVar[int]
    EXIT_STATUS_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_FIELD_NUMBER: _ClassVar[int]
    RACK_CACHED_FIELD_NUMBER: _ClassVar[int]
    INPUT_BLOCK_ID_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    application_id: str
    node_id: str
    runtime_ms: int
    exit_status: int
    locality: Locality
    rack_cached: bool
    input_block_id: str
    def __init__(self, container_id: _Optional[str] = ..., application_id: _Optional[str] = ..., node_id: _Optional[str] = ..., runtime_ms: _Optional[int] = ..., exit_status: _Optional[int] = ..., locality: _Optional[_Union[Locality, str]] = ..., rack_cached: _Optional[bool] = ..., input_block_id: _Optional[str] = ...) -> None: ...

class JobFinished(_message.Message):
    __slots__ = ("job_id", "cluster_id", "runtime", "delay_ratio", "missed_deadlines", "succeeded")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    DELAY_RATIO_FIELD_NUMBER: _ClassVar[int]
    MISSED_DEADLINES_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    cluster_id: int
    runtime: float
    delay_ratio: float
    missed_deadlines: int
    succeeded: bool
    def __init__(self, job_id: _Optional[str] = ..., cluster_id: _Optional[int] = ..., runtime: _Optional[float] = ..., delay_ratio: _Optional[float] = ..., missed_deadlines: _Optional[int] = ..., succeeded: _Optional[bool] = ...) -> None: ...

class DeadlineMissed(_message.Message):
    __slots__ = ("job_id", "cluster_id")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    cluster_id: int
    def __init__(self, job_id: _Optional[str] = ..., cluster_id: _Optional[int] = ...) -> None: ...

class NodeAdded(_message.Message):
    __slots__ = ("node_id", "host", "rack", "total")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    host: str
    rack: str
    total: Resource
    def __init__(self, node_id: _Optional[str] = ..., host: _Optional[str] = ..., rack: _Optional[str] = ..., total: _Optional[_Union[Resource, _Mapping]] = ...) -> None: ...

class NodeRemoved(_message.Message):
    __slots__ = ("node_id",)
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    def __init__(self, node_id: _Optional[str] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("timestamp_ms", "decision_id", "container_started", "container_finished", "job_finished", "deadline_missed", "node_added", "node_removed")
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_STARTED_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FINISHED_FIELD_NUMBER: _ClassVar[int]
    JOB_FINISHED_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MISSED_FIELD_NUMBER: _ClassVar[int]
    NODE_ADDED_FIELD_NUMBER: _ClassVar[int]
    NODE_REMOVED_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    decision_id: str
    container_started: ContainerStarted
    container_finished: ContainerFinished
    job_finished: JobFinished
    deadline_missed: DeadlineMissed
    node_added: NodeAdded
    node_removed: NodeRemoved
    def __init__(self, timestamp_ms: _Optional[int] = ..., decision_id: _Optional[str] = ..., container_started: _Optional[_Union[ContainerStarted, _Mapping]] = ..., container_finished: _Optional[_Union[ContainerFinished, _Mapping]] = ..., job_finished: _Optional[_Union[JobFinished, _Mapping]] = ..., deadline_missed: _Optional[_Union[DeadlineMissed, _Mapping]] = ..., node_added: _Optional[_Union[NodeAdded, _Mapping]] = ..., node_removed: _Optional[_Union[NodeRemoved, _Mapping]] = ...) -> None: ...

class ReportRequest(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ...) -> None: ...

class ReportResponse(_message.Message):
    __slots__ = ("accepted",)
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    accepted: int
    def __init__(self, accepted: _Optional[int] = ...) -> None: ...

class GetInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetInfoResponse(_message.Message):
    __slots__ = ("protocol_version", "policy", "model_version", "model_checksum", "capabilities", "engine_version", "max_batch_nodes", "max_batch_asks")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    MODEL_VERSION_FIELD_NUMBER: _ClassVar[int]
    MODEL_CHECKSUM_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    ENGINE_VERSION_FIELD_NUMBER: _ClassVar[int]
    MAX_BATCH_NODES_FIELD_NUMBER: _ClassVar[int]
    MAX_BATCH_ASKS_FIELD_NUMBER: _ClassVar[int]
    protocol_version: str
    policy: str
    model_version: str
    model_checksum: str
    capabilities: _containers.RepeatedScalarFieldContainer[str]
    engine_version: str
    max_batch_nodes: int
    max_batch_asks: int
    def __init__(self, protocol_version: _Optional[str] = ..., policy: _Optional[str] = ..., model_version: _Optional[str] = ..., model_checksum: _Optional[str] = ..., capabilities: _Optional[_Iterable[str]] = ..., engine_version: _Optional[str] = ..., max_batch_nodes: _Optional[int] = ..., max_batch_asks: _Optional[int] = ...) -> None: ...
