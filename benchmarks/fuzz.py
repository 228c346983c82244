"""Fuzz the policy engine: its request decoders and Engine in process, and a running `policy-engine serve` over the
wire. Every input must get a decision or INVALID_ARGUMENT (UNIMPLEMENTED for a call the served policy does not
make, e.g. Route to a scheduling policy); no crash, no hang, no unbounded memory; the engine answers a valid call
afterwards.

In process (most of the time budget): a coverage-guided fuzzer, atheris (libFuzzer) when it is installed, over one
function that takes bytes: the first byte picks the target - a ScheduleRequest through the server's fast
ScheduleDecoder *and* the full protobuf path (both must agree on accept/refuse: a differential check), a
RouteRequest, a ReportRequest, or a ScheduleBatchRequest (many heartbeats, the asks once: policy_engine.batch,
with its invariants checked on every accepted batch: nothing beyond a node's room, no ask given more containers over
the batch than it had outstanding, refused nodes without assignments) - and the engine (policy) that answers it; the rest is the message. The seeds
are real requests recorded from the emulator's scenarios (benchmarks/corpus.py, benchmarks/data/corpus.jsonl),
and a structure-aware mutator also feeds *mutated valid messages* (a field set to NaN, inf, -0, extreme or
negative integers, huge or empty strings, duplicated or removed repeated entries, unknown enum values).
Without atheris (`--engine mutate`, or when it is not installed) a seeded mutation fuzzer of our own (byte flips,
inserts, deletions, splices, interesting bytes, and the same structured mutator) drives the same function.

Over the wire (--wire-share of the time): real engines (`policy-engine serve`, a learning CLQLMRS and RL-FC)
get random and mutated gRPC payloads on every method (ours, health, reflection), request streams, and raw TCP
connections with random and malformed HTTP/2 frames (bad prefaces, random frame types and flags, a gRPC message
whose 5-byte prefix lies about its length or claims compression, a declared 4 GB message). Every 25 inputs a
valid Schedule and a health check must be answered; the servers' RSS and open file descriptors are sampled.

    .venv/bin/python benchmarks/fuzz.py --seconds 60 [--engine atheris|mutate] [--wire-share 0.3] [--seed 0]

The last line of stdout is one JSON object: inputs tried (in process and over the wire), crashes (with their
inputs saved under --out), the distinct status codes seen, and the servers' memory and fds over the run.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import math
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

ACCEPTED_CODES = {"OK", "INVALID_ARGUMENT", "UNIMPLEMENTED"}
TARGETS = ("schedule", "route", "report", "schedule_batch")
DEFAULT_OUT = REPO / "benchmarks" / "results" / "reliability" / "fuzz"


# ---------------------------------------------------------------------------------------------------------------
# Structure-aware mutation of protobuf messages

INTS = [0, 1, -1, 2, 7, 127, 128, 255, 65535, 2**31 - 1, -2**31, 2**32, 2**53, 2**63 - 1, -2**63, 10**9, 10**12]
FLOATS = [0.0, -0.0, math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, 1e-9, -1.0, 0.5, 1e6]
STRINGS = ["", "x", "n1", "/r1", "*", "/default-rack", "\x00", "é", "☃" * 50, "a" * 5000, "../../etc/passwd",
           "%s%n", "app1", "hb-0", "-1", "NaN"]


def _scalar(field, rng: random.Random):
    from google.protobuf.descriptor import FieldDescriptor as F

    t = field.type
    if t in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
        return rng.choice(FLOATS) if rng.random() < 0.8 else rng.uniform(-1e4, 1e4)
    if t == F.TYPE_BOOL:
        return rng.random() < 0.5
    if t in (F.TYPE_STRING,):
        return rng.choice(STRINGS) if rng.random() < 0.8 else "".join(chr(rng.randrange(32, 0x2FF))
                                                                      for _ in range(rng.randrange(12)))
    if t == F.TYPE_BYTES:
        return rng.randbytes(rng.randrange(64))
    if t == F.TYPE_ENUM:
        return rng.choice([0, 1, 2, 3, 5, 99, -1, 2**31 - 1])
    v = rng.choice(INTS) if rng.random() < 0.8 else rng.randrange(-1000, 1000)
    if t in (F.TYPE_UINT32, F.TYPE_FIXED32):
        return abs(v) % 2**32
    if t in (F.TYPE_UINT64, F.TYPE_FIXED64):
        return abs(v) % 2**64
    if t in (F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32):
        return max(-2**31, min(2**31 - 1, v))
    return max(-2**63, min(2**63 - 1, v))


def _repeated(field) -> bool:
    flag = getattr(field, "is_repeated", None)  # protobuf >= 5.29; `label` is deprecated there
    if flag is not None:
        return bool(flag() if callable(flag) else flag)
    return field.label == field.LABEL_REPEATED


def mutate_message(msg, rng: random.Random, depth: int = 0) -> None:
    """Change one field somewhere in `msg` (in place) to an interesting value."""
    from google.protobuf.descriptor import FieldDescriptor as F

    fields = msg.DESCRIPTOR.fields
    if not fields:
        return
    f = rng.choice(fields)
    is_map = f.type == F.TYPE_MESSAGE and f.message_type.GetOptions().map_entry
    try:
        if is_map:
            m = getattr(msg, f.name)
            key_f, val_f = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            if len(m) and rng.random() < 0.3:
                del m[rng.choice(list(m.keys()))]
                return
            key = rng.choice(list(m.keys())) if len(m) and rng.random() < 0.5 else _scalar(key_f, rng)
            if val_f.type == F.TYPE_MESSAGE:
                mutate_message(m[key], rng, depth + 1)
            else:
                m[key] = _scalar(val_f, rng)
        elif _repeated(f):
            c = getattr(msg, f.name)
            op = rng.random()
            if f.type == F.TYPE_MESSAGE:
                if len(c) and op < 0.25:
                    c.add().CopyFrom(c[rng.randrange(len(c))])        # duplicate an entry (same ids)
                elif len(c) and op < 0.4:
                    del c[rng.randrange(len(c))]
                elif len(c) and op < 0.45:
                    for _ in range(rng.choice([10, 100, 1000])):       # many entries
                        c.add().CopyFrom(c[0])
                elif len(c) and depth < 6:
                    mutate_message(c[rng.randrange(len(c))], rng, depth + 1)
                else:
                    mutate_message(c.add(), rng, depth + 1)
            else:
                if len(c) and op < 0.3:
                    del c[rng.randrange(len(c))]
                elif len(c) and op < 0.6:
                    c[rng.randrange(len(c))] = _scalar(f, rng)
                else:
                    c.extend(_scalar(f, rng) for _ in range(rng.choice([1, 2, 50])))
        elif f.type == F.TYPE_MESSAGE:
            sub = getattr(msg, f.name)
            if rng.random() < 0.1:
                msg.ClearField(f.name)
            elif depth < 6:
                mutate_message(sub, rng, depth + 1)
        else:
            setattr(msg, f.name, _scalar(f, rng))
    except (ValueError, TypeError, OverflowError):
        pass  # a value the Python protobuf API itself refuses (the wire can still carry it: byte mutations do)


def mutate_bytes(data: bytes, rng: random.Random, others: list[bytes]) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randrange(1, 6)):
        op = rng.randrange(8)
        if op == 0 and b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1 and b:
            b[rng.randrange(len(b))] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, 0x0A, 0x12, 0x1A, 0x22])
        elif op == 2:
            i = rng.randrange(len(b) + 1)
            b[i:i] = rng.randbytes(rng.randrange(1, 16))
        elif op == 3 and b:
            i = rng.randrange(len(b))
            del b[i:i + rng.randrange(1, 32)]
        elif op == 4 and b:
            i = rng.randrange(len(b))
            j = min(len(b), i + rng.randrange(1, 64))
            b[j:j] = b[i:j]
        elif op == 5 and others:
            o = rng.choice(others)
            if o:
                cut = rng.randrange(len(o))
                b = b[:rng.randrange(len(b) + 1)] + o[cut:]
        elif op == 6 and b:  # a varint that grows: lengths that lie
            i = rng.randrange(len(b))
            b[i:i + 1] = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F])
        elif op == 7 and b:
            b = b[:rng.randrange(len(b))]
    return bytes(b)


# ---------------------------------------------------------------------------------------------------------------
# The in-process harness (the engine's modules are imported inside it, so atheris can instrument them first): bytes -> decoder -> Engine -> encoded answer

class Harness:
    """`one(data)` never raises: it classifies each input's outcome as the server would answer it, and records
    anything else as a crash (type, place, input saved)."""

    def __init__(self, groups, out_dir: Path | None, max_input: int = 1 << 20):
        from policy_engine.codec import ScheduleDecoder
        from policy_engine.engine import Engine, EngineMetrics
        from policy_engine.policy import ROUTE, SCHEDULE, create

        self.out_dir = out_dir
        self.max_input = max_input
        self.decoder = ScheduleDecoder(max_cached=2000)
        self.engines: dict[str, list] = {"schedule": [], "route": [], "report": [], "schedule_batch": []}
        self.batchers: dict[int, object] = {}
        built = set()
        extra = [("fifo", None), ("delay", None), ("acl", None), ("lf-e", None), ("random", None), ("maf", None),
                 ("packer", None)]
        for name, model in [(g.policy, g.model) for g in groups] + extra:
            if (name, model) in built:
                continue
            built.add((name, model))
            policy = create(name, model=model) if model else create(name)
            engine = Engine(policy, EngineMetrics(), learning="inline")  # the learner runs too, on fuzzed events
            engine.attach_learner()
            if SCHEDULE in policy.capabilities:
                self.engines["schedule"].append(engine)
                self.engines["schedule_batch"].append(engine)
                from policy_engine.batch import BatchScheduler

                self.batchers[id(engine)] = BatchScheduler(engine)
            if ROUTE in policy.capabilities:
                self.engines["route"].append(engine)
            self.engines["report"].append(engine)
        self.inputs = 0
        self.by_target = collections.Counter()
        self.codes = collections.Counter()
        self.crashes: list[dict] = []
        self.signatures: dict[str, int] = {}
        self.slowest_s = 0.0

    def seeds(self, groups) -> list[bytes]:
        """Selector byte + message for every recorded message, for every engine of its kind."""
        out = []
        rng = random.Random(0)
        for g in groups:
            for kind, target in (("schedule", 0), ("route", 1), ("events", 2)):
                msgs = getattr(g, kind)
                n = len(self.engines[TARGETS[target]])
                for i, m in enumerate(msgs):
                    body = m if kind != "events" else _report_of([m])
                    out.append(bytes([target + len(TARGETS) * (i % n)]) + body)
            n = len(self.engines["schedule_batch"])
            for i in range(min(len(g.schedule), 40)):
                out.append(bytes([3 + len(TARGETS) * (i % n)]) + batch_of(g.schedule, rng))
        return out

    def one(self, data: bytes) -> str:
        if not data:
            return "EMPTY"
        self.inputs += 1
        sel = data[0]
        target = TARGETS[sel % len(TARGETS)]
        engines = self.engines[target]
        engine = engines[(sel // len(TARGETS)) % len(engines)]
        body = data[1:self.max_input]
        self.by_target[target] += 1
        t0 = time.perf_counter()
        try:
            code = getattr(self, f"_{target}")(engine, body)
        except Exception as e:  # noqa: BLE001 - every other exception is what the fuzzer looks for
            code = "CRASH"
            self._crash(data, e, target, engine.policy.name)
        dt = time.perf_counter() - t0
        self.slowest_s = max(self.slowest_s, dt)
        self.codes[code] += 1
        return code

    def _schedule(self, engine, body: bytes) -> str:
        from policy_engine.codec import InvalidRequest, decode_schedule_bytes, encode_schedule_decision
        from policy_engine.policy import ObservationMismatch

        fast = full = None
        try:
            fast = self.decoder.decode(body)
        except InvalidRequest as e:
            fast = e
        try:
            full = decode_schedule_bytes(body)
        except InvalidRequest as e:
            full = e
        if isinstance(fast, Exception) != isinstance(full, Exception):
            raise AssertionError(f"ScheduleDecoder and decode_schedule disagree: fast path "
                                 f"{'refused' if isinstance(fast, Exception) else 'accepted'}, full path "
                                 f"{'refused' if isinstance(full, Exception) else 'accepted'} ({fast!r} / {full!r})")
        if isinstance(fast, Exception):
            return "INVALID_ARGUMENT"
        if (fast.request_id, fast.node.node_id, [a.ask_id for a in fast.asks]) != \
                (full.request_id, full.node.node_id, [a.ask_id for a in full.asks]):
            raise AssertionError("ScheduleDecoder and decode_schedule decoded different observations")
        try:
            decision, decision_id = engine.schedule_logged(fast, body)
        except NotImplementedError:
            return "UNIMPLEMENTED"
        except ObservationMismatch:
            return "INVALID_ARGUMENT"
        p = engine.policy
        encode_schedule_decision(decision, fast.request_id, decision_id, p.name, p.model_version).SerializeToString()
        _check_schedule(fast, decision)
        return "OK"

    def _schedule_batch(self, engine, body: bytes) -> str:
        """ScheduleBatch as the server runs it; on every accepted batch the decision must hold the batched path's
        invariants: one result per node in order, refused nodes without assignments, nothing beyond a node's free
        resources, no ask given more containers over all nodes than it had outstanding."""
        from policy_engine.batch import encode_batch_decision_bytes, parse_batch_request
        from policy_engine.codec import InvalidRequest

        batcher = self.batchers[id(engine)]
        try:
            batch = batcher.decode(parse_batch_request(body), body)
        except InvalidRequest:
            return "INVALID_ARGUMENT"
        outstanding = {b.ask.ask_id: b.any for b in batch.asks}
        sizes = {b.ask.ask_id: b.ask.resource for b in batch.asks}
        nodes = list(batch.nodes)
        decision = batcher.decide(batch)
        p = engine.policy
        encode_batch_decision_bytes(decision, p.name, p.model_version)
        if len(decision.results) != len(nodes):
            raise AssertionError(f"{len(decision.results)} results for {len(nodes)} nodes")
        given: collections.Counter = collections.Counter()
        for node, r in zip(nodes, decision.results):
            if r.refusal and r.assignments:
                raise AssertionError(f"refused node {r.node_id!r} got assignments")
            if node is None:
                continue
            mem = sum(sizes[a.ask_id].memory_mb * a.count for a in r.assignments)
            cpu = sum(sizes[a.ask_id].vcores * a.count for a in r.assignments)
            if mem > node.unallocated.memory_mb or cpu > node.unallocated.vcores:
                raise AssertionError(f"node {r.node_id!r}: {mem} MB / {cpu} vcores assigned, "
                                     f"{node.unallocated.memory_mb} / {node.unallocated.vcores} free")
            for a in r.assignments:
                given[a.ask_id] += a.count
        for ask_id, n in given.items():
            if n > outstanding[ask_id]:
                raise AssertionError(f"ask {ask_id!r}: {n} containers over the batch, {outstanding[ask_id]} "
                                     "outstanding")
        return "OK"

    def _route(self, engine, body: bytes) -> str:
        from policy_engine.codec import InvalidRequest, decode_route_bytes, encode_route_decision
        from policy_engine.policy import ObservationMismatch

        try:
            obs = decode_route_bytes(body)
        except InvalidRequest:
            return "INVALID_ARGUMENT"
        try:
            decision, decision_id = engine.route_logged(obs)
        except NotImplementedError:
            return "UNIMPLEMENTED"
        except ObservationMismatch:
            return "INVALID_ARGUMENT"
        p = engine.policy
        encode_route_decision(decision, obs, decision_id, p.name, p.model_version).SerializeToString()
        return "OK"

    def _report(self, engine, body: bytes) -> str:
        from google.protobuf.message import DecodeError

        from policy_engine.codec import InvalidRequest, decode_events
        from policy_engine.proto import pb

        try:
            events = decode_events(pb.ReportRequest.FromString(body).events)
        except (InvalidRequest, DecodeError):  # DecodeError: the server's StrictDecoding answers INVALID_ARGUMENT
            return "INVALID_ARGUMENT"
        engine.report(events)
        return "OK"

    def _crash(self, data: bytes, e: BaseException, target: str, policy: str) -> None:
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{Path(fr.filename).name}:{fr.lineno}" for fr in reversed(tb)
                      if "policy_engine" in fr.filename or "emulator" in fr.filename), "?")
        sig = f"{target}/{policy}: {type(e).__name__} at {where}"
        first = sig not in self.signatures
        self.signatures[sig] = self.signatures.get(sig, 0) + 1
        if first:
            entry = {"signature": sig, "message": " ".join(str(e).split())[:300]}
            if self.out_dir is not None:
                self.out_dir.mkdir(parents=True, exist_ok=True)
                name = hashlib.sha1(data).hexdigest()[:16]
                (self.out_dir / f"crash-{name}.bin").write_bytes(data)
                (self.out_dir / f"crash-{name}.txt").write_text(sig + "\n" + "".join(traceback.format_exception(e)))
                entry["input"] = str(self.out_dir / f"crash-{name}.bin")
            self.crashes.append(entry)

    def stats(self) -> dict:
        return {"inputs": self.inputs, "by_target": dict(self.by_target), "codes": dict(self.codes),
                "crashes": sum(self.signatures.values()), "crash_signatures": self.crashes,
                "slowest_input_ms": round(self.slowest_s * 1e3, 1),
                "max_rss_mb": round(_max_rss_mb(), 1)}


def batch_of(schedule_msgs: list[bytes], rng: random.Random) -> bytes:
    """A ScheduleBatchRequest from recorded heartbeats: the nodes of 1-6 of them, the asks of the first, their
    entries in the locality table (or, one time in three, left inside the asks)."""
    from policy_engine.proto import pb

    reqs = [pb.ScheduleRequest.FromString(rng.choice(schedule_msgs)) for _ in range(rng.randrange(1, 7))]
    batch = pb.ScheduleBatchRequest(batch_id=f"fuzz-{rng.randrange(1000)}", cluster=reqs[0].cluster)
    seen = set()
    for r in reqs:
        if r.node.node_id not in seen:
            seen.add(r.node.node_id)
            batch.nodes.append(r.node)
            batch.request_ids.append(r.request_id)
    batch.asks.extend(reqs[0].asks)
    if rng.random() < 0.67:
        col, names = batch.locality, {}
        for i, a in enumerate(batch.asks):
            for lr in a.locality:
                k = names.setdefault(lr.resource_name, len(names))
                if k == len(col.names):
                    col.names.append(lr.resource_name)
                col.ask_index.append(i)
                col.name_index.append(k)
                col.num_containers.append(lr.num_containers)
                col.relax_locality.append(lr.relax_locality)
            del a.locality[:]
    return batch.SerializeToString()


def _report_of(events: list[bytes]) -> bytes:
    from policy_engine.proto import pb

    return pb.ReportRequest(events=[pb.Event.FromString(e) for e in events]).SerializeToString()


def _check_schedule(obs, decision) -> None:
    """The engine's safety invariant holds on every accepted input: nothing beyond the node's free resources."""
    free = obs.node.unallocated
    asks = {a.ask_id: a for a in obs.asks}
    mem = sum(asks[a.ask_id].resource.memory_mb * a.count for a in decision.assignments)
    cpu = sum(asks[a.ask_id].resource.vcores * a.count for a in decision.assignments)
    if mem > free.memory_mb or cpu > free.vcores:
        raise AssertionError(f"decision assigns {mem} MB / {cpu} vcores on a node with {free.memory_mb} MB / "
                             f"{free.vcores} vcores free")


def _max_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def structured_inputs(groups, harness: Harness, rng: random.Random, n: int) -> list[bytes]:
    """`n` mutated valid messages (selector byte + message), for the seed corpus and the mutation loop."""
    from policy_engine.proto import pb

    out = []
    pools = [(0, g.schedule, pb.ScheduleRequest) for g in groups if g.schedule] + \
            [(1, g.route, pb.RouteRequest) for g in groups if g.route] + \
            [(2, g.events, None) for g in groups if g.events] + \
            [(3, g.schedule, pb.ScheduleBatchRequest) for g in groups if g.schedule]
    for _ in range(n):
        target, msgs, cls = rng.choice(pools)
        if cls is None:
            msg = pb.ReportRequest.FromString(_report_of(rng.sample(msgs, min(len(msgs), rng.randrange(1, 6)))))
        elif cls is pb.ScheduleBatchRequest:
            msg = cls.FromString(batch_of(msgs, rng))
        else:
            msg = cls.FromString(rng.choice(msgs))
        for _ in range(rng.randrange(1, 4)):
            mutate_message(msg, rng)
        sel = target + len(TARGETS) * rng.randrange(len(harness.engines[TARGETS[target]]))
        out.append(bytes([sel]) + msg.SerializeToString())
    return out


# ---------------------------------------------------------------------------------------------------------------
# In-process drivers: atheris (child process: libFuzzer ends the process) or our own mutation loop

def run_mutation(seconds: float, seed: int, out_dir: Path, stats_path: Path | None = None) -> dict:
    from corpus import load_corpus

    groups = load_corpus()
    h = Harness(groups, out_dir / "crashes")
    rng = random.Random(seed)
    seeds = h.seeds(groups)
    for s in seeds:
        h.one(s)
    deadline = time.monotonic() + seconds
    pool = list(seeds)
    while time.monotonic() < deadline:
        for _ in range(50):
            r = rng.random()
            if r < 0.35:
                data = structured_inputs(groups, h, rng, 1)[0]
            elif r < 0.4:
                data = bytes([rng.randrange(256)]) + rng.randbytes(rng.randrange(200))
            else:
                data = mutate_bytes(rng.choice(pool), rng, pool)
            h.one(data)
            if len(pool) < 5000 and rng.random() < 0.02:
                pool.append(data)  # keep some mutants to mutate further (no coverage signal: a random walk)
    result = {"engine": "mutate", **h.stats()}
    if stats_path is not None:
        stats_path.write_text(json.dumps(result))
    return result


def atheris_child(seconds: float, seed: int, out_dir: Path, stats_path: Path) -> None:
    """Runs in its own process: libFuzzer exits the process when it stops, so the stats go to a file first."""
    import atheris

    with atheris.instrument_imports(include=["policy_engine"]):
        import policy_engine.codec  # noqa: F401
        import policy_engine.engine  # noqa: F401
        import policy_engine.locality  # noqa: F401
        from corpus import load_corpus
        from policy_engine.modules import import_all

        import_all("policy_engine.policies")
    groups = load_corpus()
    h = Harness(groups, out_dir / "crashes")
    corpus_dir = Path(tempfile.mkdtemp(prefix="fuzz-corpus-"))
    rng = random.Random(seed)
    for i, s in enumerate(h.seeds(groups) + structured_inputs(groups, h, rng, 300)):
        (corpus_dir / f"seed-{i:05d}").write_bytes(s)
    deadline = time.monotonic() + seconds
    last_write = [0.0]

    def write_stats() -> None:
        stats_path.write_text(json.dumps({"engine": "atheris", **h.stats()}))

    def test_one(data: bytes) -> None:
        # every 8th input is a fresh structured mutant of a valid message: libFuzzer's byte mutations rarely
        # produce a NaN double or a duplicated ask id in a message that otherwise parses
        if h.inputs % 8 == 7:
            h.one(structured_inputs(groups, h, rng, 1)[0])
        h.one(data)
        now = time.monotonic()
        if now - last_write[0] > 1.0:
            last_write[0] = now
            write_stats()
        if now > deadline:
            write_stats()
            shutil.rmtree(corpus_dir, ignore_errors=True)  # libFuzzer's working corpus: gone with the run
            os._exit(0)

    atheris.Setup([sys.argv[0], str(corpus_dir), "-rss_limit_mb=3072", "-timeout=30", f"-seed={seed + 1}",
                   f"-artifact_prefix={out_dir}/",
                   "-max_len=65536", "-print_final_stats=0"], test_one)
    atheris.Fuzz()


def run_in_process(seconds: float, engine: str, seed: int, out_dir: Path) -> dict:
    if engine == "mutate":
        return run_mutation(seconds, seed, out_dir)
    stats_path = out_dir / "atheris-stats.json"
    stats_path.unlink(missing_ok=True)
    cmd = [sys.executable, __file__, "--child-atheris", "--seconds", str(seconds), "--seed", str(seed),
           "--out", str(out_dir)]
    log_path = out_dir / "atheris.log"
    with open(log_path, "w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=seconds + 300).returncode
    stats = json.loads(stats_path.read_text()) if stats_path.exists() else {"engine": "atheris", "inputs": 0,
                                                                           "crashes": 0, "crash_signatures": []}
    if rc != 0:  # libFuzzer stopped on its own: a deadly signal, a timeout (hang) or the RSS limit
        tail = log_path.read_text(errors="replace").splitlines()[-15:]
        stats["crashes"] = stats.get("crashes", 0) + 1
        stats.setdefault("crash_signatures", []).append({"signature": f"libFuzzer exit {rc}", "message":
                                                         " | ".join(tail)[-1500:]})
    stats["exit_code"] = rc
    return stats


# ---------------------------------------------------------------------------------------------------------------
# Over the wire

METHODS = {
    "Schedule": "/yarnrl.v1.PolicyEngine/Schedule", "Route": "/yarnrl.v1.PolicyEngine/Route",
    "Report": "/yarnrl.v1.PolicyEngine/Report", "GetInfo": "/yarnrl.v1.PolicyEngine/GetInfo",
    "ScheduleBatch": "/yarnrl.v1.PolicyEngine/ScheduleBatch",
    "Health": "/grpc.health.v1.Health/Check",
}
STREAMS = {"ScheduleStream": "/yarnrl.v1.PolicyEngine/ScheduleStream",
           "RouteStream": "/yarnrl.v1.PolicyEngine/RouteStream",
           "Reflection": "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"}
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream & 0x7FFFFFFF) + \
        payload


def _hpack_literal(name: bytes, value: bytes) -> bytes:
    """A literal header field without indexing, no Huffman (lengths < 127)."""
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def _headers(path: str, authority: str) -> bytes:
    fields = [(b":method", b"POST"), (b":scheme", b"http"), (b":path", path.encode()),
              (b":authority", authority.encode()), (b"content-type", b"application/grpc"), (b"te", b"trailers")]
    return b"".join(_hpack_literal(n, v) for n, v in fields)


def raw_frames(rng: random.Random, message: bytes, authority: str) -> tuple[str, bytes]:
    """A malformed HTTP/2 / gRPC byte stream and the name of its kind."""
    path = rng.choice(list(METHODS.values()) + list(STREAMS.values()) + ["/no.such/Method", "/"])
    settings = _frame(4, 0, 0, b"")
    headers = _frame(1, 0x4, 1, _headers(path, authority))
    kind = rng.randrange(9)
    if kind == 0:
        return "random-bytes", rng.randbytes(rng.randrange(1, 2048))
    if kind == 1:
        return "bad-preface", mutate_bytes(PREFACE, rng, []) + rng.randbytes(rng.randrange(64))
    if kind == 2:
        frames = b"".join(_frame(rng.randrange(0, 12), rng.randrange(256), rng.randrange(0, 8),
                                 rng.randbytes(rng.randrange(0, 64))) for _ in range(rng.randrange(1, 20)))
        return "random-frames", PREFACE + settings + frames
    if kind == 3:  # the gRPC prefix claims more bytes than follow, then the stream ends
        body = b"\x00" + struct.pack(">I", len(message) + rng.randrange(1, 1000)) + message
        return "length-lies", PREFACE + settings + headers + _frame(0, 0x1, 1, body)
    if kind == 4:  # compressed flag set, no grpc-encoding
        body = b"\x01" + struct.pack(">I", len(message)) + message
        return "compressed-flag", PREFACE + settings + headers + _frame(0, 0x1, 1, body)
    if kind == 5:  # a declared 4 GB message
        body = b"\x00" + struct.pack(">I", 0xFFFFFFFF) + message[:100]
        return "huge-declared", PREFACE + settings + headers + _frame(0, 0x1, 1, body)
    if kind == 6:  # a valid frame layout with a mutated message
        m = mutate_bytes(message, rng, [])
        body = b"\x00" + struct.pack(">I", len(m)) + m
        return "mutated-message", PREFACE + settings + headers + _frame(0, 0x1, 1, body)
    if kind == 7:  # headers and then nothing, or a truncated frame
        data = PREFACE + settings + headers + _frame(0, 0, 1, b"\x00\x00\x00")
        return "truncated", data[:rng.randrange(len(PREFACE), len(data) + 1)]
    # a frame header announcing a large payload that never comes
    return "frame-length-lies", PREFACE + settings + struct.pack(">I", 0xFFFFFF)[1:] + b"\x00\x00\x00\x00\x00\x01"


class WireFuzzer:
    def __init__(self, groups, seed: int, workdir: Path):
        self.rng = random.Random(seed)
        self.groups = groups
        self.workdir = workdir
        self.servers: list[dict] = []
        self.codes = collections.Counter()
        self.raw = collections.Counter()
        self.inputs = 0
        self.crashes: list[dict] = []
        self.unanswered = 0
        self.probes = 0
        self.samples: list[dict] = []

    # -- servers
    def start(self) -> None:
        model = next((g.model for g in self.groups if g.policy == "rl-fc"), None)
        for policy, extra in (("clqlmrs", []), ("rl-fc", ["--model", model] if model else None)):
            if extra is None:
                continue
            self.servers.append(self._spawn(policy, extra))

    def _spawn(self, policy: str, extra: list[str]) -> dict:
        log = open(self.workdir / f"serve-{policy}.log", "a")
        cmd = [sys.executable, "-m", "policy_engine.cli", "serve", "--policy", policy, "--port", "0", *extra]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        target = None
        for line in proc.stdout:
            log.write(line)
            if "listening on" in line:
                target = line.split("listening on", 1)[1].split()[0]
                break
        if target is None:
            raise RuntimeError(f"{' '.join(cmd)} did not start; see {log.name}")
        # drain its output into the log, so a chatty server never blocks on a full pipe
        threading.Thread(target=lambda: [log.write(ln) for ln in proc.stdout], daemon=True).start()
        import grpc

        from policy_engine.client import PolicyEngineClient

        client = PolicyEngineClient(target, timeout=10.0)
        client.wait_ready(60)
        channel = grpc.insecure_channel(target, options=[("grpc.max_send_message_length", 64 << 20)])
        msgs = [m for g in self.groups for m in (g.schedule if policy == "clqlmrs" else g.route)
                if g.policy == policy or policy == "clqlmrs" and g.schedule and g.policy in ("clqlmrs", "delay")]
        return {"policy": policy, "extra": extra, "proc": proc, "target": target, "client": client,
                "channel": channel, "msgs": msgs or [b""], "rss": [], "fds": []}

    def stop(self) -> None:
        for s in self.servers:
            s["client"].close()
            s["channel"].close()
            if s["proc"].poll() is None:
                s["proc"].send_signal(signal.SIGTERM)
                try:
                    s["proc"].wait(30)
                except subprocess.TimeoutExpired:
                    s["proc"].kill()

    # -- inputs
    def _message(self, server) -> bytes:
        rng = self.rng
        base = rng.choice(server["msgs"])
        r = rng.random()
        if r < 0.4:
            return mutate_bytes(base, rng, server["msgs"])
        if r < 0.8:
            from policy_engine.proto import pb

            cls = pb.ScheduleRequest if server["policy"] == "clqlmrs" else pb.RouteRequest
            msg = cls.FromString(base)
            for _ in range(rng.randrange(1, 4)):
                mutate_message(msg, rng)
            return msg.SerializeToString()
        return rng.randbytes(rng.randrange(0, 512))

    def _batch_message(self, server) -> bytes:
        """A ScheduleBatch payload: built from the schedule corpus and mutated, or random bytes."""
        rng = self.rng
        from policy_engine.proto import pb

        msgs = [m for g in self.groups for m in g.schedule]
        if not msgs or rng.random() < 0.2:
            return rng.randbytes(rng.randrange(0, 512))
        data = batch_of(msgs, rng)
        if rng.random() < 0.5:
            return mutate_bytes(data, rng, msgs)
        msg = pb.ScheduleBatchRequest.FromString(data)
        for _ in range(rng.randrange(1, 4)):
            mutate_message(msg, rng)
        return msg.SerializeToString()

    def one(self) -> None:
        import grpc

        rng = self.rng
        server = rng.choice(self.servers)
        self.inputs += 1
        r = rng.random()
        try:
            if r < 0.5:
                name = rng.choice(list(METHODS))
                if name in ("Schedule", "Route"):
                    payload = self._message(server)
                elif name == "ScheduleBatch":
                    payload = self._batch_message(server)
                elif name == "Report":
                    evs = [e for g in self.groups for e in g.events]
                    payload = mutate_bytes(_report_of(rng.sample(evs, min(3, len(evs)))), rng, evs)
                else:
                    payload = rng.randbytes(rng.randrange(0, 64)) if rng.random() < 0.7 else b""
                call = server["channel"].unary_unary(METHODS[name])
                call(payload, timeout=10.0)
                self.codes[f"{name}:OK"] += 1
            elif r < 0.65:
                name = rng.choice(list(STREAMS))
                payloads = [self._message(server) if name != "Reflection" else rng.randbytes(rng.randrange(40))
                            for _ in range(rng.randrange(1, 8))]
                list(server["channel"].stream_stream(STREAMS[name])(iter(payloads), timeout=10.0))
                self.codes[f"{name}:OK"] += 1
            else:
                kind, data = raw_frames(rng, rng.choice(server["msgs"]), server["target"])
                self._raw(server["target"], data)
                self.raw[kind] += 1
        except grpc.RpcError as e:
            code = e.code().name
            key = f"{name}:{code}"
            self.codes[key] += 1
            if code not in ACCEPTED_CODES:
                self.crashes.append({"signature": f"wire {server['policy']} {key}",
                                     "message": " ".join((e.details() or "").split())[:300]})

    @staticmethod
    def _raw(target: str, data: bytes) -> None:
        host, port = target.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.settimeout(0.3)
            try:
                s.sendall(data)
                deadline = time.monotonic() + 0.2
                while time.monotonic() < deadline:
                    if not s.recv(65536):
                        break
            except (socket.timeout, ConnectionError, OSError):
                pass

    def probe(self) -> bool:
        """A valid Schedule/Route and a health check must be answered; record RSS and fds."""
        import grpc

        ok = True
        self.probes += 1
        for s in self.servers:
            if s["proc"].poll() is not None:
                self.crashes.append({"signature": f"wire {s['policy']}: server exited {s['proc'].returncode}",
                                     "message": "see the serve log"})
                ok = False
                s.update(self._spawn(s["policy"], s["extra"]))
                continue
            answered = False
            for _attempt in range(3):
                try:
                    valid = s["msgs"][0]
                    method = METHODS["Schedule" if s["policy"] == "clqlmrs" else "Route"]
                    s["channel"].unary_unary(method)(valid, timeout=10.0)
                    answered = s["client"].health(timeout=10.0) == "SERVING"
                    break
                except grpc.RpcError:
                    time.sleep(1.0)
            if not answered:
                self.unanswered += 1
                ok = False
            rss, fds = _proc_rss_mb(s["proc"].pid), _proc_fds(s["proc"].pid)
            s["rss"].append(rss)
            s["fds"].append(fds)
        return ok

    def stats(self) -> dict:
        servers = {}
        for s in self.servers:
            rss, fds = s["rss"] or [0], s["fds"] or [0]
            servers[s["policy"]] = {"rss_mb_first": rss[0], "rss_mb_max": max(rss), "rss_mb_last": rss[-1],
                                    "fds_first": fds[0], "fds_max": max(fds), "fds_last": fds[-1]}
        return {"inputs": self.inputs, "codes": dict(self.codes), "raw_connections": dict(self.raw),
                "crashes": len(self.crashes), "crash_signatures": self.crashes[:50], "probes": self.probes,
                "unanswered_probes": self.unanswered, "servers": servers}


def _proc_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return 0.0


def _proc_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def run_wire(seconds: float, seed: int, out_dir: Path) -> dict:
    from corpus import load_corpus

    w = WireFuzzer(load_corpus(), seed, out_dir)
    w.start()
    try:
        w.probe()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for _ in range(25):
                w.one()
            w.probe()
        valid_after = w.probe()
    finally:
        w.stop()
    return {**w.stats(), "valid_call_after": valid_after}


# ---------------------------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0, help="total time (default 60)")
    ap.add_argument("--engine", choices=("atheris", "mutate", "auto"), default="auto",
                    help="in-process fuzzer: atheris (coverage-guided; needs the atheris package), mutate (our seeded "
                         "mutation fuzzer), auto: atheris when installed (default)")
    ap.add_argument("--wire-share", type=float, default=0.3,
                    help="share of the time spent over the wire against running engines (default 0.3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="crash inputs, logs and the JSON result")
    ap.add_argument("--child-atheris", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.seconds <= 0 or not 0 <= args.wire_share <= 1:
        ap.error("--seconds must be positive and --wire-share in [0, 1]")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.child_atheris:
        atheris_child(args.seconds, args.seed, args.out, args.out / "atheris-stats.json")
        return 0
    engine = args.engine
    if engine == "auto":
        try:
            import atheris  # noqa: F401
            engine = "atheris"
        except ImportError:
            engine = "mutate"
    t0 = time.monotonic()
    wire_s = args.seconds * args.wire_share
    print(f"fuzz: {args.seconds - wire_s:.0f} s in process ({engine}), {wire_s:.0f} s over the wire", flush=True)
    in_proc = run_in_process(args.seconds - wire_s, engine, args.seed, args.out) if wire_s < args.seconds else {}
    print(f"fuzz: in process: {in_proc.get('inputs', 0)} inputs, {in_proc.get('crashes', 0)} crashes", flush=True)
    wire = run_wire(wire_s, args.seed, args.out) if wire_s > 0 else {}
    if wire:
        print(f"fuzz: wire: {wire['inputs']} inputs, {wire['crashes']} crashes, {wire['unanswered_probes']} "
              f"unanswered probes", flush=True)
    codes = set(in_proc.get("codes", {})) | {k.split(":", 1)[1] for k in wire.get("codes", {})}
    crashes = in_proc.get("crashes", 0) + wire.get("crashes", 0) + wire.get("unanswered_probes", 0)
    result = {
        "benchmark": "fuzz", "seconds": round(time.monotonic() - t0, 1), "engine": engine, "seed": args.seed,
        "inputs": in_proc.get("inputs", 0) + wire.get("inputs", 0), "crashes": crashes,
        "distinct_codes": sorted(codes), "unexpected_codes": sorted(codes - ACCEPTED_CODES - {"CRASH"}),
        "valid_call_after": wire.get("valid_call_after", True), "in_process": in_proc, "wire": wire,
        "load_avg_1m": round(os.getloadavg()[0], 1), "cpus": os.cpu_count(),
    }
    (args.out / "fuzz.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result))
    return 0 if crashes == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
