"""Decision-log cost: write throughput, size per row, decision latency with logging on and off, drops under a stall.

In-process, with the engine as `policy-engine serve` runs it (writer thread behind a bounded queue):
  * latency: mean and p99 of Engine.schedule_logged for the Delay policy on a heartbeat with `--asks` pending map
    asks (3 hosts + 2 racks + HDFS blocks each), with no log, and with a Parquet log in a temporary directory;
  * decision path: CPU per schedule_logged without a log and with one whose writer is held back, so only the
    decision path's own share of logging (the snapshot and the queue) is counted;
  * write throughput: rows per second the writer thread turns into Parquet (from the first decision to the files
    closed), and bytes per decision row on disk (zstd);
  * stall: the sink blocks for `--stall-s` seconds while decisions go on; how many were answered, how many the
    log dropped (yarnrl_decision_log_dropped_total) and the slowest decision meanwhile.
And served, as an operator sees it (`--served-rounds`, 0 to leave out): a real `policy-engine serve --policy
delay` without and with `--decision-log`, alternated round by round, each driven by ghz (the Go load generator of
benchmarks/engine_throughput.py; the Python asyncio client when ghz is missing) at a fixed offered rate (open loop:
p50/p99 of the call latency) and with 8 calls in flight (decisions/s); the server's CPU time per decision, and the
log's rows and drops.
Timings on a shared machine move with its load; the 1-minute load average is in the output. Last line: JSON.

    .venv/bin/python benchmarks/decision_log.py [--decisions 20000] [--asks 10] [--stall-s 1]
                                                [--served-rounds 2] [--rate 1000] [--seconds 4]
"""

from __future__ import annotations

import argparse
import json
import asyncio
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np


from policy_engine.codec import encode_schedule  # noqa: E402
from policy_engine.engine import Engine, EngineMetrics  # noqa: E402
from policy_engine.metrics_scrape import Metrics  # noqa: E402
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


def decision_path_cost(observations, raws, rounds: int = 5) -> dict:
    """CPU time of Engine.schedule_logged without a log and with one whose writer is held back (snapshots queue up
    and nobody builds rows): what logging adds to the decision path itself, apart from the writer thread's share
    of the interpreter. Best of `rounds`, in the same process and order, so the machine's load moves both alike."""
    n = len(observations)

    def best(engine) -> float:
        out = float("inf")
        for _ in range(rounds):
            t0 = time.process_time()
            for i in range(n):
                engine.schedule_logged(observations[i], raws[i])
            out = min(out, (time.process_time() - t0) / n * 1e6)
            if engine.decision_log is not None:
                engine.decision_log._queue.clear()  # as a writer would: the queue does not grow round after round
        return out

    with tempfile.TemporaryDirectory() as d:
        off, on = Engine(create("delay"), EngineMetrics()), Engine(create("delay"), EngineMetrics())
        dlog = on.attach_decision_log(d, threaded=False, capacity=n + 1)
        dlog.threaded = True  # queue only: no thread takes the snapshots
        cpu_off, cpu_on = best(off), best(on)
        dlog.close()
    return {"off_cpu_us": round(cpu_off, 1), "on_cpu_us": round(cpu_on, 1), "added_cpu_us": round(cpu_on - cpu_off, 1)}


def served(args) -> dict:
    """Latency and CPU of a served engine with the decision log off and on, rounds alternated (off, on, off, on)."""
    from engine_throughput import (
        ServerProbe,
        find_ghz,
        fixed_rate_unary,
        free_port,
        ghz_stats,
        ghz_version,
        run_ghz,
        unary_saturation,
        write_call_data,
    )

    from policy_engine.cli import start_engine_subprocess
    from policy_engine.client import PolicyEngineClient
    from policy_engine.decision_log import read_decisions

    requests = [encode_schedule(heartbeat(i, args.asks)) for i in range(64)]
    ghz = find_ghz()
    out: dict = {"policy": "delay", "offered_per_s": args.rate, "seconds_each": args.seconds,
                 "load_generator": f"ghz {ghz_version(ghz)} (--cpus 1)" if ghz else "python grpc.aio",
                 "rounds": []}
    with tempfile.TemporaryDirectory() as tmp:
        if ghz:
            data, protoset = write_call_data(requests, Path(tmp))
        for r in range(args.served_rounds):
            for mode in ("off", "on"):
                log_dir = Path(tmp) / f"log-{r}"
                metrics_port = free_port()
                extra = ["--metrics-port", str(metrics_port)] + (["--decision-log", str(log_dir)] if mode == "on"
                                                                 else [])
                proc, target = start_engine_subprocess("delay", extra)
                probe = ServerProbe(proc.pid, metrics_port)
                try:
                    with PolicyEngineClient(target) as c:
                        c.wait_ready(30)
                        for q in requests * 4:
                            c.schedule(q)  # warm up
                    if ghz:
                        rate = probe.measure(lambda: ghz_stats(run_ghz(ghz, target, "Schedule", data, protoset,
                                                                       args.seconds, 64, args.rate)))
                        sat = probe.measure(lambda: ghz_stats(run_ghz(ghz, target, "Schedule", data, protoset,
                                                                      args.seconds, 8)))
                    else:
                        rate = probe.measure(lambda: asyncio.run(fixed_rate_unary(target, requests, args.seconds,
                                                                                  args.rate)))
                        sat = probe.measure(lambda: asyncio.run(unary_saturation(target, requests, args.seconds, 8)))
                    decided = probe.decisions()
                    dropped = 0.0
                    if mode == "on":
                        dropped = Metrics.scrape(probe.urls[0]).total("yarnrl_decision_log_dropped_total")
                finally:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(timeout=60)
                row = {"round": r + 1, "log": mode,
                       "at_rate": {k: rate[k] for k in ("decisions_per_s", "p50_ms", "p99_ms", "max_ms", "errors",
                                                        "server_cpu_us_per_decision") if k in rate},
                       "in_flight_8": {k: sat[k] for k in ("decisions_per_s", "p50_ms", "p99_ms",
                                                           "server_cpu_us_per_decision") if k in sat},
                       "decisions": int(decided), "load_1min": round(os.getloadavg()[0], 2)}
                if mode == "on":
                    row["log_rows"] = read_decisions(log_dir).num_rows
                    row["log_dropped"] = int(dropped)
                out["rounds"].append(row)
                print(f"served round {r + 1} log {mode:>3}: at {args.rate:.0f}/s p50 {rate['p50_ms']} ms p99 "
                      f"{rate['p99_ms']} ms, server {rate['server_cpu_us_per_decision']} us CPU/decision; 8 in "
                      f"flight {sat['decisions_per_s']}/s" + (f"; log rows {row['log_rows']} dropped "
                                                              f"{row['log_dropped']}" if mode == "on" else ""),
                      file=sys.stderr)
    for mode in ("off", "on"):
        rows = [x for x in out["rounds"] if x["log"] == mode]
        out[mode] = {
            "p50_ms": round(float(np.median([x["at_rate"]["p50_ms"] for x in rows])), 3),
            "p99_ms": round(float(np.median([x["at_rate"]["p99_ms"] for x in rows])), 3),
            "server_cpu_us_per_decision": round(float(np.median([x["at_rate"]["server_cpu_us_per_decision"]
                                                                 for x in rows])), 1),
            "decisions_per_s_8_in_flight": round(float(np.median([x["in_flight_8"]["decisions_per_s"]
                                                                  for x in rows])), 1),
        }
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--decisions", type=int, default=20_000)
    p.add_argument("--asks", type=int, default=10)
    p.add_argument("--stall-s", type=float, default=1.0)
    p.add_argument("--served-rounds", type=int, default=2,
                   help="off/on rounds against a served engine (0: in-process measurements only)")
    p.add_argument("--rate", type=float, default=1000.0, help="offered Schedule calls/s in the served rounds")
    p.add_argument("--seconds", type=float, default=4.0, help="duration of each served measurement")
    args = p.parse_args()
    observations = [heartbeat(i, args.asks) for i in range(args.decisions)]
    # as behind the server: the request bytes it received travel with the observation (logged as they are)
    raws = [encode_schedule(o).SerializeToString() for o in observations]
    result: dict = {"decisions": args.decisions, "asks": args.asks, "load_1min": os.getloadavg()[0]}

    result["decision_path"] = decision_path_cost(observations[:4000], raws[:4000])
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
    if args.served_rounds > 0:
        result["served"] = served(args)
        print(f"served (median of {args.served_rounds} rounds): off {result['served']['off']}, "
              f"on {result['served']['on']}")
    print(f"decision path, CPU per decision (us): {result['decision_path']}")
    print(f"latency per decision (us): off {result['latency_us']['off']}, on {result['latency_us']['on']}")
    print(f"writer: {result['write']}")
    print(f"stalled sink: {result['stall']}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
