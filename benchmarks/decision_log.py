"""Decision-log cost: write throughput, size per row, decision latency with logging on and off, drops under a stall.

In-process, with the engine as `policy-engine serve` runs it (writer thread behind a bounded queue):
  * latency: mean and p99 of Engine.schedule_logged for the Delay policy on a heartbeat with `--asks` pending map
    asks (3 hosts + 2 racks + HDFS blocks each), with no log, and with a Parquet log in a temporary directory;
  * write throughput: rows per second the writer thread turns into Parquet (from the first decision to the files
    closed), and bytes per decision row on disk (zstd);
  * stall: the sink blocks for `--stall-s` seconds while decisions go on; how many were answered, how many the
    log dropped (yarnrl_decision_log_dropped_total) and the slowest decision meanwhile.
Timings on a shared machine move with its load; the 1-minute load average is in the output. Last line: JSON.

    .venv/bin/python benchmarks/decision_log.py [--decisions 20000] [--asks 10] [--stall-s 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policy_engine.codec import encode_schedule  # noqa: E402
from policy_engine.engine import Engine, EngineMetrics  # noqa: E402
from policy_engine.policy import create  # noqa: E402
from policy_engine.types import (  # noqa: E402
    Ask,
    BlockInfo,
    ClusterSummary,
    JobMetadata,
    LocalityRequest,
    Node,
    Resource,
    ScheduleObservation,
)


def heartbeat(i: int, asks: int) -> ScheduleObservation:
    hosts = [f"dn{k}" for k in range(1, 7)]
    out = []
    for a in range(asks):
        h = [hosts[(a + k) % 6] for k in range(3)]
        blocks = tuple(BlockInfo(f"blk_{a}_{b}", 128 << 20, tuple(h), (h[0],) if b % 3 == 0 else (),
                                 ("/rack1", "/rack2")) for b in range(4))
        loc = tuple(LocalityRequest(x, 2) for x in h) + (LocalityRequest("/rack1", 4), LocalityRequest("/rack2", 4),
                                                          LocalityRequest("*", 4))
        out.append(Ask(f"app{a}/map", f"app{a}", priority=20, resource=Resource(1024, 1), num_containers=4,
                       locality=loc, submit_time_ms=a, job=JobMetadata(input_blocks=blocks)))
    node = Node(f"dn{i % 6 + 1}:8041", f"dn{i % 6 + 1}", f"/rack{i % 2 + 1}", Resource(8192, 8), Resource(4096, 4))
    return ScheduleObservation(node, out, ClusterSummary(6, 2), request_id=f"hb-{i}")


def timed(engine: Engine, observations, raws) -> np.ndarray:
    out = np.empty(len(observations))
    for i, obs in enumerate(observations):
        t0 = time.perf_counter()
        engine.schedule_logged(obs, raws[i])
        out[i] = time.perf_counter() - t0
    return out * 1e6


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--decisions", type=int, default=20_000)
    p.add_argument("--asks", type=int, default=10)
    p.add_argument("--stall-s", type=float, default=1.0)
    args = p.parse_args()
    observations = [heartbeat(i, args.asks) for i in range(args.decisions)]
    # as behind the server: the request bytes it received travel with the observation (logged as they are)
    raws = [encode_schedule(o).SerializeToString() for o in observations]
    result: dict = {"decisions": args.decisions, "asks": args.asks, "load_1min": os.getloadavg()[0]}

    off = timed(Engine(create("delay"), EngineMetrics()), observations, raws)
    with tempfile.TemporaryDirectory() as d:
        engine = Engine(create("delay"), EngineMetrics())
        dlog = engine.attach_decision_log(d, threaded=True, capacity=args.decisions + 1)
        t0 = time.perf_counter()
        on = timed(engine, observations, raws)
        engine.close()
        wall = time.perf_counter() - t0
        size = sum(f.stat().st_size for f in Path(d).glob("decisions-*.parquet"))
        result["write"] = {"rows": dlog.written["decisions"], "rows_per_s": round(dlog.written["decisions"] / wall),
                           "bytes_per_row": round(size / max(dlog.written["decisions"], 1), 1),
                           "dropped": dlog.dropped["decision"]}
    result["latency_us"] = {
        "off": {"mean": round(float(off.mean()), 1), "p99": round(float(np.percentile(off, 99)), 1)},
        "on": {"mean": round(float(on.mean()), 1), "p99": round(float(np.percentile(on, 99)), 1)},
    }

    class Stalled:
        def __init__(self):
            self.release = threading.Event()

        def write(self, table):
            self.release.wait(args.stall_s)

        def close(self):
            pass

    sinks = []

    def factory(table, schema):
        sinks.append(Stalled())
        return sinks[-1]

    with tempfile.TemporaryDirectory() as d:
        metrics = EngineMetrics()
        engine = Engine(create("delay"), metrics)
        engine.attach_decision_log(d, threaded=True, capacity=1000, batch_rows=1, sink_factory=factory)
        answered, slowest = 0, 0.0
        end = time.perf_counter() + args.stall_s
        i = 0
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            engine.schedule_logged(observations[i % len(observations)], raws[i % len(raws)])
            slowest = max(slowest, time.perf_counter() - t0)
            answered += 1
            i += 1
        for s in sinks:
            s.release.set()
        dropped = metrics.registry.get_sample_value("yarnrl_decision_log_dropped_total", {"kind": "decision"})
        engine.close()
        result["stall"] = {"seconds": args.stall_s, "queue_capacity": 1000, "answered": answered,
                           "dropped": int(dropped or 0), "slowest_decision_us": round(slowest * 1e6, 1)}
    print(f"latency per decision (us): off {result['latency_us']['off']}, on {result['latency_us']['on']}")
    print(f"writer: {result['write']}")
    print(f"stalled sink: {result['stall']}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
