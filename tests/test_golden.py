"""The golden ScheduleRequest: the committed bytes are what the Python side writes and reads.

The Java side (yarn_plugin GoldenMessageTest) parses the same file; together they pin the wire format of the
contract across both builds.
"""

import importlib.util
from pathlib import Path

from policy_engine.proto import pb

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


def _make_golden():
    spec = importlib.util.spec_from_file_location("make_golden", GOLDEN_DIR / "make_golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generator_reproduces_committed_bytes():
    assert _make_golden().golden_bytes() == (GOLDEN_DIR / "schedule_request.bin").read_bytes()


def test_committed_bytes_parse_to_the_expected_fields():
    req = pb.ScheduleRequest.FromString((GOLDEN_DIR / "schedule_request.bin").read_bytes())
    assert req.request_id == "golden-1"
    assert (req.node.node_id, req.node.host, req.node.rack) == ("h1:45454", "h1", "/rack1")
    assert req.node.total.extra["yarn.io/gpu"] == 2
    assert req.node.unallocated.memory_mb == 6144 and req.node.HasField("utilization")
    assert req.node.utilization.cpu == 1.5
    assert [a.ask_id for a in req.asks] == ["appattempt_1700000000000_0001_000001/20/0",
                                           "appattempt_1700000000000_0002_000001/10/7"]
    first, second = req.asks
    assert first.num_containers == 3 and [(l.resource_name, l.num_containers) for l in first.locality] == [
        ("h1", 2), ("/rack1", 3)]
    assert first.job.category == pb.JOB_CATEGORY_TIME_CRITICAL
    assert list(first.job.input_blocks[0].cached_hosts) == ["h1"]
    assert dict(first.job.tags) == {"yarnrl.category": "time-critical", "yarnrl.deadline-ms": "600000"}
    assert not second.HasField("job") and second.relax_locality is False and second.allocation_request_id == 7
    assert req.cluster.num_racks == 2
    # re-serializing what was parsed gives the same bytes (the Java test checks the same)
    assert req.SerializeToString(deterministic=True) == (GOLDEN_DIR / "schedule_request.bin").read_bytes()
