"""The Parquet decision log: written (in-process and behind a real `policy-engine serve`), rotated, read back,
schema-checked, and never blocking a decision when its writer stalls."""

from __future__ import annotations

import threading

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from heartbeats import map_ask, node, observe

from policy_engine.codec import encode_event, encode_schedule
from policy_engine.decision_log import (
    DECISIONS_SCHEMA,
    EVENTS_SCHEMA,
    SCHEMA_VERSION,
    VERSION_KEY,
    DecisionLog,
    DecisionLogError,
    decode_observation,
    read_decisions,
    read_events,
)
from policy_engine.engine import Engine, EngineMetrics
from policy_engine.policy import create
from policy_engine.proto import pb
from policy_engine.types import ContainerStarted, JobFinished, Locality


def heartbeat(i: int):
    asks = [map_ask("a", "app1", hosts={"n1": 2}, racks={"/r1": 2}, total=3, submit=1, cached_on=("n1",)),
            map_ask("b", "app2", hosts={}, racks={}, total=4, submit=2)]
    return observe(node("n1" if i % 2 else "n3", rack="/r1" if i % 2 else "/r2", free_gb=4), asks,
                   request_id=f"hb-{i}")


def test_in_process_log_is_written_read_back_and_joinable(tmp_path):
    engine = Engine(create("delay"), EngineMetrics())
    dlog = engine.attach_decision_log(tmp_path, threaded=False)
    ids = []
    for i in range(8):
        decision, did = engine.schedule_logged(heartbeat(i))
        ids.append(did)
        started = [ContainerStarted(timestamp_ms=i, container_id=f"c{i}-{a.ask_id}", application_id="app1",
                                    node_id=heartbeat(i).node.node_id, ask_id=a.ask_id, locality=a.locality)
                   for a in decision.assignments]
        engine.report(started + [JobFinished(job_id="app1", decision_id=did, runtime=2.0, succeeded=True)])
    engine.close()
    assert not list(tmp_path.glob("*.inprogress"))  # closed files only
    t = read_decisions(tmp_path)
    assert t.schema.equals(DECISIONS_SCHEMA)
    assert t.column("decision_id").to_pylist() == ids
    assert t.column("request_id").to_pylist() == [f"hb-{i}" for i in range(8)]
    assert set(t.column("policy").to_pylist()) == {"delay"}
    rows = t.to_pylist()
    # node n1 holds ask a's host request and a cached block; n3 is another rack
    a_on_n1 = rows[1]["asks"][0]
    assert (a_on_n1["host_request"], a_on_n1["best_locality"], a_on_n1["blocks_cached_on_node"]) == (
        2, int(Locality.CACHE_LOCAL), 1)
    assert rows[0]["asks"][0]["blocks_cached_on_node"] == 0
    for row in rows:  # the logged decision is the engine's answer, and the observation decodes to what it saw
        obs = decode_observation(row)
        assert encode_schedule(obs) == encode_schedule(heartbeat(int(row["request_id"][3:])))
        assert row["containers"] == sum(a["count"] for a in row["assignments"])
    ev = read_events(tmp_path)
    assert ev.schema.equals(EVENTS_SCHEMA)
    # every ContainerStarted is joined to the decision that placed it, though the caller did not name it
    started = ev.filter(pc.equal(ev["kind"], "container_started"))
    assert started.num_rows == sum(r["containers"] > 0 and len(r["assignments"]) for r in rows)
    assert set(started.column("decision_id").to_pylist()) <= set(ids)
    assert "" not in started.column("decision_id").to_pylist()
    for r in ev.to_pylist():
        assert pb.Event.FromString(r["event"]).WhichOneof("kind") == r["kind"]
    assert dlog.stats()["dropped"] == {"decision": 0, "report": 0}


def test_files_rotate_and_read_back_in_order(tmp_path):
    dlog = DecisionLog(tmp_path, rotate_mb=0.002, threaded=False, batch_rows=5, stem="rot")
    engine = Engine(create("fifo"))
    engine.decision_log = dlog
    ids = [engine.schedule_logged(heartbeat(i))[1] for i in range(60)]
    engine.close()
    files = sorted(tmp_path.glob("decisions-rot-*.parquet"))
    assert len(files) >= 3, files
    for f in files:
        md = pq.read_schema(f).metadata
        assert md[VERSION_KEY] == str(SCHEMA_VERSION).encode()
    assert read_decisions(tmp_path).column("decision_id").to_pylist() == ids


def test_reader_refuses_other_schema_versions_and_empty_directories(tmp_path):
    with pytest.raises(DecisionLogError, match="no decisions-"):
        read_decisions(tmp_path)
    with pytest.raises(DecisionLogError, match="not a directory"):
        read_decisions(tmp_path / "missing")
    schema = DECISIONS_SCHEMA.with_metadata({VERSION_KEY: b"99"})
    pq.write_table(schema.empty_table(), tmp_path / "decisions-x-00001.parquet")
    with pytest.raises(DecisionLogError, match="schema version 99"):
        read_decisions(tmp_path)


class StalledSink:
    """A disk that hangs: write() blocks until released."""

    def __init__(self):
        self.release = threading.Event()
        self.entered = threading.Event()
        self.rows = 0

    def write(self, table):
        self.entered.set()
        self.release.wait(60)
        self.rows += table.num_rows

    def close(self):
        pass


def test_a_stalled_writer_drops_and_counts_and_never_blocks_decisions(tmp_path):
    metrics = EngineMetrics()
    engine = Engine(create("fifo"), metrics)
    sinks = {}

    def factory(table, schema):
        sinks[table] = StalledSink()
        return sinks[table]

    dlog = engine.attach_decision_log(tmp_path, threaded=True, capacity=20, batch_rows=1, sink_factory=factory)
    engine.schedule_logged(heartbeat(0))
    assert sinks["decisions"].entered.wait(10)  # the writer thread now hangs inside write()
    n = 300
    decisions = [engine.schedule_logged(heartbeat(i))[0] for i in range(1, n + 1)]
    engine.report([JobFinished(job_id="app1")])
    assert len(decisions) == n and all(d.assignments for d in decisions)  # every decision was answered
    assert dlog.pending() == 20  # the queue is full, at its bound
    assert dlog.dropped["decision"] == n - 20
    assert dlog.dropped["report"] == 1
    dropped = metrics.registry.get_sample_value("yarnrl_decision_log_dropped_total", {"kind": "decision"})
    assert dropped == n - 20
    sinks["decisions"].release.set()
    sinks["events"].release.set()
    engine.close()
    assert sinks["decisions"].rows == 1 + 20  # the one in the stalled write, then the queued ones


def test_served_engine_writes_the_log_and_closes_it_on_sigterm(tmp_path, engine_factory):
    served = engine_factory("delay", "--decision-log", str(tmp_path), "--log-rotate-mb", "1")
    answers = [served.client.schedule(encode_schedule(heartbeat(i))) for i in range(10)]
    served.client.report_events([ContainerStarted(container_id="c1", node_id="n1:8041", ask_id="a",
                                                  decision_id=answers[1].decision_id)])
    assert served.stop() == 0
    assert not list(tmp_path.glob("*.inprogress"))
    t = read_decisions(tmp_path)
    assert t.column("decision_id").to_pylist() == [a.decision_id for a in answers]
    for row, answer in zip(t.to_pylist(), answers):
        assert [(a["ask_id"], a["count"], a["locality"]) for a in row["assignments"]] == [
            (a.ask_id, a.count, a.locality) for a in answer.assignments]
        assert row["latency_us"] > 0
    ev = read_events(tmp_path)
    assert ev.column("decision_id").to_pylist() == [answers[1].decision_id]
    assert ev.to_pylist()[0]["event"] == encode_event(ContainerStarted(
        container_id="c1", node_id="n1:8041", ask_id="a", decision_id=answers[1].decision_id)).SerializeToString()


def test_ask_columns_of_repeated_heartbeats_come_from_the_cache_and_equal_fresh_ones():
    """Behind the server a row's asks column is found by the request's bytes after the node (heartbeats repeat
    their asks): the same column as built from scratch, per node, with each heartbeat's own opportunities."""
    from policy_engine.codec import ScheduleDecoder
    from policy_engine.decision_log import AskColumnCache, _Snapshot, schedule_row

    cache, decoder = AskColumnCache(), ScheduleDecoder()
    engine = Engine(create("delay"))
    for i in range(8):
        raw = encode_schedule(heartbeat(i)).SerializeToString()
        obs = decoder.decode(raw)
        decision = engine.schedule(obs)
        snap = _Snapshot(0, obs, decision, f"d{i}", "delay", "", "", 1.0,
                         tuple(a.scheduling_opportunities for a in obs.asks), raw=raw)
        fresh = schedule_row(snap)
        assert schedule_row(snap, cache) == fresh
        assert [a["scheduling_opportunities"] for a in fresh["asks"]] == list(snap.opportunities)
    assert cache.hits >= 6  # two nodes, one set of asks: built twice, then found
    changed = heartbeat(9)
    changed.asks[0].num_containers = 1  # other asks: another column
    raw = encode_schedule(changed).SerializeToString()
    obs = decoder.decode(raw)
    snap = _Snapshot(0, obs, engine.schedule(obs), "d9", "delay", "", "", 1.0, (0, 0), raw=raw)
    assert schedule_row(snap, cache)["asks"][0]["num_containers"] == 1
