"""Write the golden ScheduleRequest that the Python and the Java builds both parse (tests/golden/*.bin).

The message is fixed (no clocks, no randomness) and serialized deterministically, so running this script again
gives the same bytes; tests/test_golden.py checks that, and the plugin's GoldenMessageTest parses the same file
with the Java classes generated from the same .proto and checks every field and a byte-identical re-serialization.

    .venv/bin/python tests/golden/make_golden.py          # rewrite the file
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
SCHEDULE_REQUEST = HERE / "schedule_request.bin"


def golden_schedule_request():
    from policy_engine.proto import pb

    return pb.ScheduleRequest(
        request_id="golden-1",
        node=pb.NodeSnapshot(
            node_id="h1:45454", host="h1", rack="/rack1",
            total=pb.Resource(memory_mb=8192, vcores=8, extra={"yarn.io/gpu": 2}),
            unallocated=pb.Resource(memory_mb=6144, vcores=6),
            running=[pb.ContainerInfo(container_id="container_1700000000000_0001_01_000001",
                                      application_id="application_1700000000000_0001",
                                      resource=pb.Resource(memory_mb=2048, vcores=2),
                                      start_time_ms=1_700_000_000_500)],
            utilization=pb.Utilization(cpu=1.5, physical_memory_mb=1900, virtual_memory_mb=4000),
            timestamp_ms=1_700_000_001_000,
        ),
        asks=[
            pb.ResourceAsk(
                ask_id="appattempt_1700000000000_0001_000001/20/0",
                application_id="application_1700000000000_0001", attempt_id=1, queue="default", user="alice",
                priority=20, allocation_request_id=0, resource=pb.Resource(memory_mb=1024, vcores=1),
                num_containers=3,
                locality=[pb.LocalityRequest(resource_name="h1", num_containers=2, relax_locality=True),
                          pb.LocalityRequest(resource_name="/rack1", num_containers=3, relax_locality=True)],
                submit_time_ms=1_700_000_000_000,
                job=pb.JobMetadata(category=pb.JOB_CATEGORY_TIME_CRITICAL, deadline_ms=1_700_000_600_000,
                                   input_paths=["/data/in/part-0"],
                                   input_blocks=[pb.BlockInfo(block_id="blk_1073741825", length=134217728,
                                                              hosts=["h1", "h3"], cached_hosts=["h1"],
                                                              racks=["/rack1", "/rack2"])],
                                   tags={"yarnrl.category": "time-critical", "yarnrl.deadline-ms": "600000"}),
                relax_locality=True,
            ),
            pb.ResourceAsk(ask_id="appattempt_1700000000000_0002_000001/10/7",
                           application_id="application_1700000000000_0002", attempt_id=1, priority=10,
                           allocation_request_id=7, resource=pb.Resource(memory_mb=512, vcores=1),
                           num_containers=1, submit_time_ms=1_700_000_000_100, relax_locality=False),
        ],
        cluster=pb.ClusterSummary(num_nodes=4, num_racks=2, total=pb.Resource(memory_mb=32768, vcores=32),
                                  unallocated=pb.Resource(memory_mb=20480, vcores=20)),
    )


def golden_bytes() -> bytes:
    return golden_schedule_request().SerializeToString(deterministic=True)


if __name__ == "__main__":
    SCHEDULE_REQUEST.write_bytes(golden_bytes())
    print(f"wrote {SCHEDULE_REQUEST} ({SCHEDULE_REQUEST.stat().st_size} bytes)")
