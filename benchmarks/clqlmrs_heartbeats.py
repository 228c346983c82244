"""Hand-built heartbeats with HDFS block and cache locations: engine_throughput.py's learning-overhead case and
the CLQLMRS tests (tests/conftest.py puts benchmarks/ on their path)."""

from __future__ import annotations

from policy_engine.types import (
    Ask,
    BlockInfo,
    ClusterSummary,
    JobMetadata,
    LocalityRequest,
    Node,
    Resource,
    ScheduleObservation,
)

GB = 1024
RACK_OF = {"n1": "/r1", "n2": "/r2", "n3": "/r1", "n4": "/r2"}


def node(name: str, free_gb: int = 4, mem_gb: int = 4, ts: int = 0) -> Node:
    return Node(node_id=f"{name}:8041", host=name, rack=RACK_OF[name], total=Resource(mem_gb * GB, mem_gb),
                unallocated=Resource(free_gb * GB, free_gb), timestamp_ms=ts)


def map_job(app: str, blocks: list[tuple[list[str], list[str]]], submit: int = 0) -> Ask:
    """One map ask per job as MapReduce's AM sends it: per-host and per-rack counts plus ANY, with the input blocks
    (disk replica hosts, cached replica hosts) in JobMetadata."""
    hosts: dict[str, int] = {}
    racks: dict[str, int] = {}
    infos = []
    for i, (disk, cached) in enumerate(blocks):
        for h in disk:
            hosts[h] = hosts.get(h, 0) + 1
        for r in {RACK_OF[h] for h in disk}:
            racks[r] = racks.get(r, 0) + 1
        infos.append(BlockInfo(f"{app}-blk{i}", 128 << 20, tuple(disk), tuple(cached),
                               tuple(RACK_OF[h] for h in disk)))
    locality = tuple(LocalityRequest(h, n) for h, n in hosts.items()) + tuple(
        LocalityRequest(r, n) for r, n in racks.items()) + (LocalityRequest("*", len(blocks)),)
    return Ask(ask_id=f"{app}-maps", application_id=app, priority=20, resource=Resource(GB, 1),
               num_containers=len(blocks), locality=locality, submit_time_ms=submit,
               job=JobMetadata(input_blocks=tuple(infos)))


def observe(n: Node, asks: list[Ask], request_id: str = "") -> ScheduleObservation:
    return ScheduleObservation(node=n, asks=asks, cluster=ClusterSummary(num_nodes=4, num_racks=2),
                               request_id=request_id)
