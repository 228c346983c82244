"""Engine throughput and latency over loopback: a load generator against a real `policy-engine serve`.

Measures, for the FIFO policy and a heartbeat with 20 pending asks (3 hosts + 2 racks each):
  * saturation: unary calls with N in flight, and bidirectional streams pipelined with a window;
  * a fixed offered rate (default 2,000/s), open loop: requests leave on schedule whether or not earlier ones
    have returned, so queueing shows up in the latency instead of lowering the rate.
Client and server share this machine's cores. The last line of stdout is one JSON object.

    .venv/bin/python benchmarks/engine_throughput.py [--seconds 5] [--rate 2000] [--policy fifo]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from pathlib import Path

import grpc
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policy_engine.cli import start_engine_subprocess  # noqa: E402
from policy_engine.client import AsyncPolicyEngineClient, PolicyEngineClient  # noqa: E402
from policy_engine.codec import encode_schedule  # noqa: E402
from policy_engine.types import (  # noqa: E402
    Ask,
    ClusterSummary,
    LocalityRequest,
    Node,
    Resource,
    ScheduleObservation,
)

TARGET_DECISIONS_PER_S = 5000
TARGET_P99_MS_AT_RATE = 5.0


def heartbeat(i: int, asks: int = 20):
    hosts = [f"dn{k}" for k in range(12)]
    node_host = hosts[i % len(hosts)]
    obs = ScheduleObservation(
        node=Node(f"{node_host}:8041", node_host, f"/rack{i % 2}", Resource(65536, 32), Resource(8192, 8)),
        asks=[Ask(ask_id=f"app{a}/20/0", application_id=f"application_1_{a:04d}", priority=20,
                  resource=Resource(1024, 1), num_containers=10, submit_time_ms=a,
                  locality=tuple(LocalityRequest(hosts[(a + k) % len(hosts)], 2) for k in range(3))
                  + (LocalityRequest("/rack0", 5), LocalityRequest("/rack1", 5)))
              for a in range(asks)],
        cluster=ClusterSummary(num_nodes=12, num_racks=2), request_id=f"hb-{i}")
    return encode_schedule(obs)


def stats(latencies_s: list[float], elapsed_s: float) -> dict:
    lat = np.asarray(latencies_s) * 1000
    return {"decisions": int(lat.size), "decisions_per_s": round(lat.size / elapsed_s, 1),
            "p50_ms": round(float(np.percentile(lat, 50)), 3), "p99_ms": round(float(np.percentile(lat, 99)), 3),
            "max_ms": round(float(lat.max()), 3)}


async def unary_saturation(target: str, requests, seconds: float, in_flight: int) -> dict:
    async with AsyncPolicyEngineClient(target, timeout=5.0) as client:
        lat: list[float] = []
        stop = time.perf_counter() + seconds

        async def worker(w: int):
            i = w
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                await client.schedule(requests[i % len(requests)])
                lat.append(time.perf_counter() - t0)
                i += in_flight

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(in_flight)))
        return {"in_flight": in_flight, **stats(lat, time.perf_counter() - t0)}


async def stream_saturation(target: str, requests, seconds: float, streams: int, window: int) -> dict:
    async with AsyncPolicyEngineClient(target, timeout=5.0) as client:
        lat: list[float] = []
        stop = time.perf_counter() + seconds

        async def one_stream(s: int):
            sent: list[float] = []
            credits = asyncio.Semaphore(window)
            done = False

            async def gen():
                nonlocal done
                i = s
                while time.perf_counter() < stop:
                    await credits.acquire()
                    sent.append(time.perf_counter())
                    yield requests[i % len(requests)]
                    i += streams
                done = True

            call = client.schedule_stream(gen(), timeout=seconds + 30)
            k = 0
            async for _ in call:
                lat.append(time.perf_counter() - sent[k])
                k += 1
                credits.release()

        t0 = time.perf_counter()
        await asyncio.gather(*(one_stream(s) for s in range(streams)))
        return {"streams": streams, "window": window, **stats(lat, time.perf_counter() - t0)}


async def fixed_rate_unary(target: str, requests, seconds: float, rate: float) -> dict:
    async with AsyncPolicyEngineClient(target, timeout=5.0) as client:
        lat: list[float] = []
        n = int(seconds * rate)
        start = time.perf_counter() + 0.05
        tasks = []

        errors: list[str] = []

        async def one(i: int):
            t0 = time.perf_counter()
            try:
                await client.schedule(requests[i % len(requests)])
            except grpc.RpcError as e:  # counted, not fatal: the report shows how many calls failed
                errors.append(e.code().name)
                return
            lat.append(time.perf_counter() - t0)

        for i in range(n):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.ensure_future(one(i)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
        return {"offered_per_s": rate, "errors": len(errors), "error_codes": sorted(set(errors)),
                **stats(lat, elapsed)}


async def fixed_rate_stream(target: str, requests, seconds: float, rate: float) -> dict:
    async with AsyncPolicyEngineClient(target, timeout=5.0) as client:
        lat: list[float] = []
        sent: list[float] = []
        n = int(seconds * rate)
        start = time.perf_counter() + 0.05

        async def gen():
            for i in range(n):
                delay = start + i / rate - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                sent.append(time.perf_counter())
                yield requests[i % len(requests)]

        k = 0
        async for _ in client.schedule_stream(gen(), timeout=seconds + 30):
            lat.append(time.perf_counter() - sent[k])
            k += 1
        return {"offered_per_s": rate, **stats(lat, time.perf_counter() - start)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--policy", default="fifo")
    p.add_argument("--seconds", type=float, default=5.0, help="duration of each measurement")
    p.add_argument("--rate", type=float, default=2000.0, help="offered rate for the fixed-rate runs")
    p.add_argument("--asks", type=int, default=20, help="pending asks per heartbeat")
    args = p.parse_args()

    requests = [heartbeat(i, args.asks) for i in range(64)]
    proc, target = start_engine_subprocess(args.policy)
    try:
        with PolicyEngineClient(target) as c:
            c.wait_ready(30)
            for r in requests[:200]:
                c.schedule(r)  # warm up
        result = {"benchmark": "engine_throughput", "policy": args.policy, "asks_per_heartbeat": args.asks,
                  "request_bytes": requests[0].ByteSize(), "seconds_each": args.seconds}
        run = asyncio.run
        result["saturation"] = {
            "unary_1": run(unary_saturation(target, requests, args.seconds, 1)),
            "unary_8": run(unary_saturation(target, requests, args.seconds, 8)),
            "stream_4x16": run(stream_saturation(target, requests, args.seconds, 4, 16)),
        }
        result["fixed_rate"] = {
            "unary": run(fixed_rate_unary(target, requests, args.seconds, args.rate)),
            "stream": run(fixed_rate_stream(target, requests, args.seconds, args.rate)),
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    best = max(v["decisions_per_s"] for v in result["saturation"].values())
    result["targets"] = {"decisions_per_s": TARGET_DECISIONS_PER_S, "p99_ms_at_rate": TARGET_P99_MS_AT_RATE,
                         "best_saturation_decisions_per_s": best,
                         "met": best >= TARGET_DECISIONS_PER_S
                         and min(result["fixed_rate"]["unary"]["p99_ms"], result["fixed_rate"]["stream"]["p99_ms"])
                         <= TARGET_P99_MS_AT_RATE}
    for name, r in {**result["saturation"], **{f"rate_{k}": v for k, v in result["fixed_rate"].items()}}.items():
        print(f"{name:>14}: {r['decisions_per_s']:>8.0f} decisions/s  p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms",
              file=sys.stderr)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
