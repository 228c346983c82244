"""Engine throughput and latency over loopback: a load generator against a real `policy-engine serve`.

Measures, for the FIFO policy and a heartbeat with 20 pending asks (3 hosts + 2 racks each):
  * saturation: unary calls with 1 and 8 in flight, and 4 bidirectional streams of 64 heartbeats each;
  * a fixed offered rate (default 2,000/s), open loop: requests leave on schedule whether or not earlier ones
    have returned, so queueing shows up in the latency instead of lowering the rate;
  * in-process, the time of one Engine.schedule for CLQLMRS with online learning off and on, in alternating blocks
    (the learner runs in its own thread: a decision must not get slower).
The load generator is ghz (Go; `go install github.com/bojand/ghz/cmd/ghz@latest`, done by this script when Go is
installed and ghz is not), so the client does not compete with the server for Python's interpreter; it is limited
to one core (--cpus 1). ghz times whole stream calls, not single messages, so the fixed-rate *stream* latency is
measured with the Python client (`load_generator` in its result says so). Decisions are counted by the server
(its Prometheus counter), and the server's CPU time per decision is reported: on a shared machine that number
moves less than the rates do. Client and server share this machine's cores; the 1-minute load average is in the
output. The last line of stdout is one JSON object.

    .venv/bin/python benchmarks/engine_throughput.py [--seconds 5] [--rate 2000] [--policy fifo]
                                                     [--load-generator ghz|python]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
import numpy as np


from policy_engine.cli import start_engine_subprocess  # noqa: E402
from policy_engine.client import AsyncPolicyEngineClient, PolicyEngineClient  # noqa: E402
from policy_engine.codec import encode_schedule  # noqa: E402
from policy_engine.metrics_scrape import Metrics  # noqa: E402
from policy_engine.types import (  # noqa: E402
    Ask,
    ClusterSummary,
    LocalityRequest,
    Node,
    Resource,
    ScheduleObservation,
)

# Issue 13's targets, on 2 cores with 20-ask heartbeats.
TARGET_STREAM_DECISIONS_PER_S = 10_000
TARGET_UNARY8_DECISIONS_PER_S = 3_000
TARGET_P99_MS_AT_RATE = 2.0
GHZ_MODULE = "github.com/bojand/ghz/cmd/ghz@latest"
STREAM_MESSAGES = 64


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
    return {"decisions_client": int(lat.size), "seconds": round(elapsed_s, 3),
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


# ---------------------------------------------------------------------------------------------- ghz


def find_ghz(install: bool = True) -> str | None:
    """ghz on PATH or in Go's bin directory; installed with `go install` from the Go module proxy if missing."""
    found = shutil.which("ghz")
    if found:
        return found
    go = shutil.which("go")
    gobin = None
    if go:
        try:
            env = subprocess.run([go, "env", "GOBIN", "GOPATH"], capture_output=True, text=True, timeout=60).stdout
            gobin_s, gopath = (env.splitlines() + ["", ""])[:2]
            gobin = Path(gobin_s) if gobin_s else Path(gopath or Path.home() / "go") / "bin"
        except (OSError, subprocess.SubprocessError):
            gobin = None
    for candidate in ([gobin / "ghz"] if gobin else []) + [Path.home() / "go" / "bin" / "ghz"]:
        if candidate.exists():
            return str(candidate)
    if go and install:
        print(f"installing ghz: go install {GHZ_MODULE} (once; a few minutes)", file=sys.stderr)
        r = subprocess.run([go, "install", GHZ_MODULE], capture_output=True, text=True, timeout=1800)
        if r.returncode == 0:
            return find_ghz(install=False)
        print(f"go install ghz failed:\n{r.stderr[-2000:]}", file=sys.stderr)
    return None


def ghz_version(ghz: str) -> str:
    """The module version Go recorded in the binary (`ghz --version` says "dev" for `go install` builds)."""
    try:
        if shutil.which("go"):
            info = subprocess.run(["go", "version", "-m", ghz], capture_output=True, text=True, timeout=30).stdout
            for line in info.splitlines():
                parts = line.split()
                if len(parts) >= 3 and parts[0] == "mod" and parts[1] == "github.com/bojand/ghz":
                    return parts[2]
        out = subprocess.run([ghz, "--version"], capture_output=True, text=True, timeout=30)
        return (out.stdout + out.stderr).strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def write_call_data(requests, directory: Path) -> tuple[Path, Path]:
    """The heartbeats as ghz binary call data (count-prefixed messages) and the service's descriptor set."""
    from google.protobuf import descriptor_pb2
    from google.protobuf.internal.encoder import _VarintBytes

    from policy_engine.proto import pb

    data = directory / "heartbeats.bin"
    with data.open("wb") as f:
        for r in requests:
            raw = r.SerializeToString()
            f.write(_VarintBytes(len(raw)) + raw)
    fds = descriptor_pb2.FileDescriptorSet()
    pb.DESCRIPTOR.CopyToProto(fds.file.add())
    protoset = directory / "yarnrl.protoset"
    protoset.write_bytes(fds.SerializeToString())
    return data, protoset


def run_ghz(ghz: str, target: str, method: str, data: Path, protoset: Path, seconds: float, concurrency: int,
            rps: float | None = None, connections: int = 1) -> dict:
    cmd = [ghz, "--insecure", "--protoset", str(protoset), "--call", f"yarnrl.v1.PolicyEngine.{method}",
           "-B", str(data), "-c", str(concurrency), "-z", f"{seconds}s", "--duration-stop=ignore", "--cpus", "1",
           "--timeout", "10s", "-O", "json", "--connections", str(min(connections, concurrency)), target]
    if rps:
        cmd += ["--rps", str(int(rps))]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120)
    if r.returncode != 0 and not r.stdout.strip():
        raise RuntimeError(f"ghz failed ({r.returncode}): {r.stderr[-2000:]}")
    return json.loads(r.stdout)


def ghz_stats(report: dict, decisions_per_call: int = 1) -> dict:
    lat = {int(d["percentage"]): d["latency"] / 1e6 for d in report.get("latencyDistribution") or []}
    total_s = report["total"] / 1e9
    ok = report.get("statusCodeDistribution", {}).get("OK", 0)
    return {"calls": ok, "calls_per_s": round(ok / total_s, 1), "errors": sum(
        n for code, n in report.get("statusCodeDistribution", {}).items() if code != "OK"),
        "decisions_client": ok * decisions_per_call,
        "p50_ms": round(lat.get(50, float("nan")), 3), "p99_ms": round(lat.get(99, float("nan")), 3),
        "max_ms": round(report.get("slowest", 0) / 1e6, 3), "seconds": round(total_s, 3)}


# ---------------------------------------------------------------------------------------------- server side


class ServerProbe:
    """The server's own count of decisions (Prometheus) and its CPU time (/proc), read around each run; with
    `serve --workers N`, summed over the N processes (metrics on consecutive ports, workers are its children)."""

    def __init__(self, pid: int, metrics_port: int, workers: int = 1):
        self.pid = pid
        self.urls = [f"http://127.0.0.1:{metrics_port + i}/metrics" for i in range(workers)]

    def decisions(self) -> float:
        return sum(Metrics.scrape(url).total("yarnrl_decisions_total", rpc="schedule") for url in self.urls)

    def _pids(self) -> list[int]:
        pids = [self.pid]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == self.pid:
                    pids.append(int(stat.parent.name))
            except (OSError, IndexError, ValueError):
                continue
        return pids

    def cpu_s(self) -> float:
        total = 0.0
        for pid in self._pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except (OSError, IndexError, ValueError):
                continue
        return total

    def measure(self, fn):
        d0, c0, t0 = self.decisions(), self.cpu_s(), time.perf_counter()
        result = fn()
        wall = time.perf_counter() - t0
        d, cpu = self.decisions() - d0, self.cpu_s() - c0
        result.update({"decisions": int(d), "server_cpu_s": round(cpu, 3),
                       "server_cpu_us_per_decision": round(cpu / d * 1e6, 1) if d else None})
        if "seconds" in result and result["seconds"]:
            result["decisions_per_s"] = round(d / result["seconds"], 1)
        else:
            result.setdefault("decisions_per_s", round(d / wall, 1))
        return result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------- learning overhead


def learning_overhead(n: int = 3000, block: int = 250) -> dict:
    """In-process Engine.schedule time for CLQLMRS on a 20-ask heartbeat with map input, learning off and on
    (same exploration rate, 0.05, in both: drawing exploration randomness is part of deciding, not of learning).
    The two engines take turns in blocks of `block` decisions, so a change in the machine's load falls on both."""
    from clqlmrs_heartbeats import map_job, node, observe  # benchmarks/ (this script's folder)

    from policy_engine.engine import Engine
    from policy_engine.policy import create

    jobs = [map_job(f"app{k}", [([f"n{1 + (k + b) % 4}", f"n{1 + (k + b + 1) % 4}"], [f"n{1 + k % 4}"])
                                for b in range(4)], submit=k) for k in range(20)]
    engines, times = {}, {}
    for label, learn in (("off", False), ("on", True)):
        engines[label] = Engine(create("clqlmrs", learn=learn, epsilon=0.05), learning="thread")
        engines[label].attach_learner()
        times[label] = []
    t = 0
    for start in range(0, n, block):
        for label in ("off", "on"):
            engine = engines[label]
            for i in range(start, min(start + block, n)):
                obs = observe(node(f"n{1 + i % 4}", ts=i), jobs, f"r{t}")
                t += 1
                t0 = time.perf_counter()
                engine.schedule(obs)
                times[label].append(time.perf_counter() - t0)
    out = {}
    for label, engine in engines.items():
        engine.close()
        lat = np.asarray(times[label][n // 10:]) * 1e6
        out[label] = {"p50_us": round(float(np.percentile(lat, 50)), 1),
                      "p99_us": round(float(np.percentile(lat, 99)), 1)}
    out["p50_change"] = round(out["on"]["p50_us"] / out["off"]["p50_us"] - 1.0, 3)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--policy", default="fifo")
    p.add_argument("--seconds", type=float, default=5.0, help="duration of each measurement")
    p.add_argument("--rate", type=float, default=2000.0, help="offered rate for the fixed-rate runs")
    p.add_argument("--asks", type=int, default=20, help="pending asks per heartbeat")
    p.add_argument("--load-generator", choices=("ghz", "python"), default="ghz",
                   help="ghz (default; installed with `go install` when missing) or the Python asyncio client")
    p.add_argument("--workers", type=int, default=1,
                   help="server processes sharing the port (`serve --workers`; stateless policies only); ghz then "
                        "opens as many connections as calls in flight, so the kernel can spread them")
    args = p.parse_args()

    requests = [heartbeat(i, args.asks) for i in range(STREAM_MESSAGES)]
    ghz = find_ghz() if args.load_generator == "ghz" else None
    if args.load_generator == "ghz" and ghz is None:
        print("ghz not available (no Go toolchain?): falling back to the Python load generator", file=sys.stderr)
    generator = f"ghz {ghz_version(ghz)} (--cpus 1)" if ghz else "python grpc.aio (same machine, competes for CPU)"
    metrics_port = free_port()
    proc, target = start_engine_subprocess(args.policy, ["--metrics-port", str(metrics_port),
                                                         "--workers", str(args.workers)])
    probe = ServerProbe(proc.pid, metrics_port, args.workers)
    connections = 64 if args.workers > 1 else 1
    result = {"benchmark": "engine_throughput", "policy": args.policy, "workers": args.workers,
              "asks_per_heartbeat": args.asks,
              "request_bytes": requests[0].ByteSize(), "seconds_each": args.seconds, "load_generator": generator,
              "cpus": os.cpu_count(), "load_avg_1m_start": round(os.getloadavg()[0], 2)}
    try:
        deadline = time.monotonic() + 60
        while True:  # every worker up (each serves its metrics once listening)
            try:
                probe.decisions()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        with PolicyEngineClient(target) as c:
            c.wait_ready(30)
            for r in requests * 4:
                c.schedule(r)  # warm up
        run = asyncio.run
        with tempfile.TemporaryDirectory() as tmp:
            if ghz:
                data, protoset = write_call_data(requests, Path(tmp))
                g = lambda method, c, rps=None, per=1: (lambda: ghz_stats(  # noqa: E731
                    run_ghz(ghz, target, method, data, protoset, args.seconds, c, rps, connections), per))
                result["saturation"] = {
                    "unary_1": probe.measure(g("Schedule", 1)),
                    "unary_8": probe.measure(g("Schedule", 8)),
                    f"stream_4x{STREAM_MESSAGES}": probe.measure(g("ScheduleStream", 4, per=STREAM_MESSAGES)),
                }
                result["fixed_rate"] = {
                    "unary": {"offered_per_s": args.rate,
                              **probe.measure(g("Schedule", 64, args.rate))},
                }
            else:
                result["saturation"] = {
                    "unary_1": probe.measure(lambda: run(unary_saturation(target, requests, args.seconds, 1))),
                    "unary_8": probe.measure(lambda: run(unary_saturation(target, requests, args.seconds, 8))),
                    "stream_4x16": probe.measure(lambda: run(stream_saturation(target, requests, args.seconds, 4,
                                                                                16))),
                }
                result["fixed_rate"] = {"unary": probe.measure(
                    lambda: run(fixed_rate_unary(target, requests, args.seconds, args.rate)))}
            stream = probe.measure(lambda: run(fixed_rate_stream(target, requests, args.seconds, args.rate)))
            stream["load_generator"] = "python grpc.aio (ghz cannot time single stream messages)"
            result["fixed_rate"]["stream"] = stream
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    result["learning_overhead_in_process"] = learning_overhead()
    result["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
    sat, rate = result["saturation"], result["fixed_rate"]
    stream_best = max(v["decisions_per_s"] for k, v in sat.items() if k.startswith("stream"))
    checks = {
        "stream_decisions_per_s": (stream_best, TARGET_STREAM_DECISIONS_PER_S, stream_best >= TARGET_STREAM_DECISIONS_PER_S),
        "unary_8_decisions_per_s": (sat["unary_8"]["decisions_per_s"], TARGET_UNARY8_DECISIONS_PER_S,
                                    sat["unary_8"]["decisions_per_s"] >= TARGET_UNARY8_DECISIONS_PER_S),
        "unary_p99_ms_at_rate": (rate["unary"]["p99_ms"], TARGET_P99_MS_AT_RATE,
                                 rate["unary"]["p99_ms"] <= TARGET_P99_MS_AT_RATE),
        "stream_p99_ms_at_rate": (rate["stream"]["p99_ms"], TARGET_P99_MS_AT_RATE,
                                  rate["stream"]["p99_ms"] <= TARGET_P99_MS_AT_RATE),
    }
    result["targets"] = {k: {"measured": m, "target": t, "met": bool(ok)} for k, (m, t, ok) in checks.items()}
    result["targets_met"] = all(ok for _, _, ok in checks.values())
    for name, r in {**sat, **{f"rate_{k}": v for k, v in rate.items()}}.items():
        print(f"{name:>14}: {r['decisions_per_s']:>8.0f} decisions/s  p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms"
              f"  server {r.get('server_cpu_us_per_decision')} us CPU/decision", file=sys.stderr)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
