"""Soak: real engines under a fixed mixed load for minutes, watching for leaks and drift (issue 17).

Two `policy-engine serve` processes on loopback: CLQLMRS with online learning on (its learner thread takes every
decision and Report) answers Schedule and Report; RL-FC answers Route. An open-loop client sends at a fixed total
rate (--rate, default 2,000 calls/s): 60 % Schedule, 25 % Route, 15 % Report (batches of 5 events). Requests are
real ones recorded from the emulator (benchmarks/data/corpus.jsonl); application ids churn - every 2,000
heartbeats a new generation of applications replaces the last, and the one before is reported finished - so
state keyed by application (the engine's opportunity counts, the learner's traces) must be released, not just
capped. "Open loop": a call leaves at its scheduled time whether or not earlier ones returned; when more than
--max-in-flight are outstanding the call is dropped and counted (client drops).

Every 5 s: each server's RSS and open file descriptors (/proc), the learner's queue and its drops
(yarnrl_learner_dropped_total), request errors. Per minute: p50 / p99 latency of the calls sent in it (from the
actual send; from the scheduled send too, which adds the client's own lag on a loaded machine), calls answered,
errors, drops. Goals: RSS growth < 5 % after warm-up (the first 20 % of the run, at least 30 s; the median RSS
over the last two minutes against the two minutes after warm-up, both taken from samples with few calls in
flight, since a machine stall queues thousands of calls in the server), no growth in open fds, p99 of the last
minute within 1.5x the first. `--evaluate soak.json` recomputes the goals from a saved run.

    .venv/bin/python benchmarks/soak.py --minutes 10 --rate 2000 [--out benchmarks/results/soak]

The last line of stdout is one JSON object; a PNG of the curves goes next to it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent

from corpus import load_corpus  # noqa: E402
from fuzz import _proc_fds, _proc_rss_mb  # noqa: E402

from policy_engine.metrics_scrape import Metrics  # noqa: E402

MIX = (("schedule", 0.60), ("route", 0.25), ("report", 0.15))
GEN_EVERY = 2000          # heartbeats per generation of application ids
SAMPLE_S = 5.0
RSS_GROWTH_GOAL = 0.05
P99_RATIO_GOAL = 1.5
QUIET_IN_FLIGHT = 50      # samples with at most this many calls outstanding measure the engine, not a backlog
DEFAULT_OUT = REPO / "benchmarks" / "results" / "reliability" / "soak"
METHOD = {"schedule": "/yarnrl.v1.PolicyEngine/Schedule", "route": "/yarnrl.v1.PolicyEngine/Route",
          "report": "/yarnrl.v1.PolicyEngine/Report"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, name: str, args: list[str], workdir: Path):
        self.name = name
        self.metrics_port = free_port()
        self.log = open(workdir / f"serve-{name}.log", "w")
        cmd = [sys.executable, "-m", "policy_engine.cli", "serve", "--port", "0", "--metrics-port",
               str(self.metrics_port), *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.target = None
        for line in self.proc.stdout:
            self.log.write(line)
            if "listening on" in line:
                self.target = line.split("listening on", 1)[1].split()[0]
                break
        if self.target is None:
            raise RuntimeError(f"{' '.join(cmd)} did not start (see {self.log.name})")
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        for line in self.proc.stdout:
            self.log.write(line)
            self.log.flush()

    def metrics(self) -> dict[str, float]:
        m = Metrics.scrape(f"http://127.0.0.1:{self.metrics_port}/metrics")
        return {name: m.total(name) for name in ("yarnrl_learner_dropped_total", "yarnrl_learner_queue",
                                                 "yarnrl_request_errors_total", "yarnrl_decisions_total")}

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.returncode


class Traffic:
    """The messages to send, with application ids of the current generation."""

    def __init__(self, seed: int):
        from policy_engine.proto import pb

        self.pb = pb
        groups = load_corpus()
        self.schedule_templates = [pb.ScheduleRequest.FromString(m) for g in groups if g.policy in ("clqlmrs", "delay")
                                   for m in g.schedule]
        self.routes = [m for g in groups if g.policy == "rl-fc" for m in g.route]
        self.events = [pb.Event.FromString(m) for g in groups if g.policy in ("clqlmrs", "delay") for m in g.events]
        self.rng = np.random.default_rng(seed)
        self.generation = -1
        self.schedules: list[bytes] = []
        self.finished: list[bytes] = []  # Report of the generation before last: JobFinished for its applications
        self.n_schedule = 0
        self._set_generation(0)

    def _set_generation(self, g: int) -> None:
        pb = self.pb
        self.generation = g
        out = []
        apps: set[str] = set()
        for i, t in enumerate(self.schedule_templates):
            req = pb.ScheduleRequest()
            req.CopyFrom(t)
            req.request_id = f"soak-{g}-{i}"
            for a in req.asks:
                a.application_id = f"{a.application_id}-g{g}"
                apps.add(a.application_id)
            out.append(req.SerializeToString())
        self.schedules = out
        old = [a.replace(f"-g{g}", f"-g{g - 2}") for a in apps] if g >= 2 else []
        self.finished = [pb.ReportRequest(events=[pb.Event(job_finished=pb.JobFinished(job_id=a, succeeded=True))
                                                  for a in old]).SerializeToString()] if old else []

    def next(self, kind: str) -> bytes:
        if kind == "schedule":
            self.n_schedule += 1
            if self.n_schedule // GEN_EVERY != self.generation:
                self._set_generation(self.n_schedule // GEN_EVERY)
            return self.schedules[self.n_schedule % len(self.schedules)]
        if kind == "route":
            return self.routes[int(self.rng.integers(len(self.routes)))]
        if self.finished:
            data, self.finished = self.finished[0], []
            return data
        idx = self.rng.integers(len(self.events), size=5)
        return self.pb.ReportRequest(events=[self.events[i] for i in idx]).SerializeToString()


async def drive(servers: dict[str, Server], minutes: float, rate: float, max_in_flight: int, seed: int,
                progress: bool) -> dict:
    import grpc

    traffic = Traffic(seed)
    channels = {"schedule": grpc.aio.insecure_channel(servers["clqlmrs"].target),
                "report": grpc.aio.insecure_channel(servers["clqlmrs"].target),
                "route": grpc.aio.insecure_channel(servers["rl-fc"].target)}
    calls = {k: channels[k].unary_unary(METHOD[k]) for k in METHOD}
    kinds = [k for k, _ in MIX]
    probs = np.array([p for _, p in MIX])
    rng = np.random.default_rng(seed)
    duration = minutes * 60.0
    n_minutes = max(1, int(np.ceil(minutes)))
    # per call: minute, kind, latency from send, latency from schedule, ok
    lat_send: list[list[float]] = [[] for _ in range(n_minutes)]
    lat_sched: list[list[float]] = [[] for _ in range(n_minutes)]
    by_kind = {k: [[] for _ in range(n_minutes)] for k in kinds}
    errors = [0] * n_minutes
    error_codes: dict[str, int] = {}
    error_details: dict[str, str] = {}
    closing = False
    unfinished = 0
    drops = [0] * n_minutes
    sent = [0] * n_minutes
    in_flight = 0
    samples: list[dict] = []

    async def one(kind: str, data: bytes, t_sched: float, minute: int) -> None:
        nonlocal in_flight, unfinished
        t_send = time.perf_counter()
        try:
            await calls[kind](data, timeout=10.0)
            now = time.perf_counter()
            lat_send[minute].append(now - t_send)
            lat_sched[minute].append(now - t_sched)
            by_kind[kind][minute].append(now - t_send)
        except grpc.RpcError as e:
            if closing and e.code() == grpc.StatusCode.CANCELLED:
                unfinished += 1  # still in flight when the run ended: cancelled by closing the channel
                return
            errors[minute] += 1
            error_codes[e.code().name] = error_codes.get(e.code().name, 0) + 1
            error_details.setdefault(e.code().name, " ".join((e.details() or "").split())[:200])
        finally:
            in_flight -= 1

    async def sampler(t0: float) -> None:
        while True:
            t = time.perf_counter() - t0
            row = {"t_s": round(t, 1)}
            for name, s in servers.items():
                row[f"{name}_rss_mb"] = _proc_rss_mb(s.proc.pid)
                row[f"{name}_fds"] = _proc_fds(s.proc.pid)
                try:
                    m = await asyncio.to_thread(s.metrics)
                    row[f"{name}_learner_dropped"] = m.get("yarnrl_learner_dropped_total", 0.0)
                    row[f"{name}_learner_queue"] = m.get("yarnrl_learner_queue", 0.0)
                    row[f"{name}_errors"] = m.get("yarnrl_request_errors_total", 0.0)
                except OSError:
                    pass
            row["client_drops"] = sum(drops)
            row["in_flight"] = in_flight
            samples.append(row)
            if progress and len(samples) % 6 == 1:
                minute = min(int(t // 60), n_minutes - 1)
                cur = lat_send[minute][-2000:]
                p99 = float(np.percentile(cur, 99)) * 1e3 if cur else float("nan")
                print(f"soak: {t / 60:5.2f}/{minutes:g} min  sent {sum(sent)}  p99 {p99:.1f} ms  "
                      f"rss clqlmrs {row.get('clqlmrs_rss_mb')} MB rl-fc {row.get('rl-fc_rss_mb')} MB  "
                      f"fds {row.get('clqlmrs_fds')}/{row.get('rl-fc_fds')}  drops {sum(drops)}  "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
            await asyncio.sleep(SAMPLE_S)

    tasks: set[asyncio.Task] = set()
    t0 = time.perf_counter()
    sampler_task = asyncio.ensure_future(sampler(t0))
    i = 0
    batch = 256
    while True:
        now = time.perf_counter()
        if now - t0 >= duration:
            break
        due = int((now - t0) * rate)  # calls that should have left by now
        choices = rng.choice(len(kinds), size=batch, p=probs)
        fired = 0
        while i < due and fired < batch:
            t_sched = t0 + i / rate
            minute = min(int((t_sched - t0) // 60), n_minutes - 1)
            kind = kinds[choices[fired]]
            fired += 1
            i += 1
            sent[minute] += 1
            if in_flight >= max_in_flight:
                drops[minute] += 1
                continue
            in_flight += 1
            task = asyncio.ensure_future(one(kind, traffic.next(kind), t_sched, minute))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.sleep(max(0.0, t0 + (i + 1) / rate - time.perf_counter()) if i >= due else 0)
    if tasks:
        await asyncio.wait(tasks, timeout=30)
    closing = True
    await asyncio.sleep(SAMPLE_S)  # one more sample after the load
    sampler_task.cancel()
    for ch in channels.values():
        await ch.close()
    elapsed = time.perf_counter() - t0

    def pct(xs, q):
        return round(float(np.percentile(xs, q)) * 1e3, 3) if xs else None

    per_minute = []
    for m in range(n_minutes):
        per_minute.append({
            "minute": m + 1, "sent": sent[m], "answered": len(lat_send[m]), "errors": errors[m],
            "client_drops": drops[m], "p50_ms": pct(lat_send[m], 50), "p99_ms": pct(lat_send[m], 99),
            "p99_ms_from_schedule": pct(lat_sched[m], 99),
            **{f"{k}_p99_ms": pct(by_kind[k][m], 99) for k in kinds},
        })
    return {"per_minute": per_minute, "samples": samples, "error_codes": error_codes,
            "error_details": error_details, "unfinished_at_end": unfinished, "elapsed_s": elapsed,
            "sent": sum(sent), "answered": sum(len(x) for x in lat_send), "client_drops": sum(drops)}


def evaluate(run: dict, minutes: float) -> dict:
    samples = run["samples"]
    warm_s = max(30.0, 0.2 * minutes * 60)
    goals = {}
    for name in ("clqlmrs", "rl-fc"):
        rss = [(s["t_s"], s.get(f"{name}_rss_mb")) for s in samples if s.get(f"{name}_rss_mb")]
        fds = [(s["t_s"], s.get(f"{name}_fds")) for s in samples if s.get(f"{name}_fds")]
        after = [v for t, v in rss if t >= warm_s]
        fds_after = [v for t, v in fds if t >= warm_s]
        if not after:
            continue
        # Medians of the samples taken while few calls were in flight: when the machine stalls, thousands of
        # calls queue in the server for seconds and RSS rises with them and falls back once they are answered;
        # that is queued work, not a leak. Base: the two minutes after warm-up; end: the last two minutes.
        quiet = {s["t_s"] for s in samples if s.get("in_flight", 0) <= QUIET_IN_FLIGHT}
        end_t = rss[-1][0]

        def steady(lo: float, hi: float) -> float:
            window = [v for t, v in rss if lo <= t < hi]
            calm = [v for t, v in rss if lo <= t < hi and t in quiet]
            return float(np.median(calm or window))

        base = steady(warm_s, warm_s + 120)
        end = steady(max(warm_s, end_t - 120), end_t + 1)
        growth = (end - base) / base
        goals[name] = {
            "rss_mb_start": rss[0][1], "rss_mb_after_warmup": round(base, 1), "rss_mb_end": round(end, 1),
            "rss_mb_max": max(after),
            "rss_growth_after_warmup": round(growth, 4), "rss_goal_met": growth < RSS_GROWTH_GOAL,
            "fds_after_warmup": fds_after[0], "fds_end": fds_after[-1], "fds_max": max(fds_after),
            "fd_goal_met": fds_after[-1] <= fds_after[0],
        }
    pm = [m for m in run["per_minute"] if m["p99_ms"] is not None]
    first, last = (pm[0], pm[-1]) if pm else ({}, {})
    ratio = round(last["p99_ms"] / first["p99_ms"], 3) if pm and first["p99_ms"] else None
    learner_dropped = max((s.get("clqlmrs_learner_dropped", 0) for s in samples), default=0)
    return {"warmup_s": warm_s, "servers": goals, "p99_first_minute_ms": first.get("p99_ms"),
            "p99_last_minute_ms": last.get("p99_ms"), "p99_ratio": ratio,
            "p99_goal_met": ratio is not None and ratio <= P99_RATIO_GOAL, "learner_dropped": learner_dropped}


def _all_met(goals: dict) -> bool:
    return all(g["rss_goal_met"] and g["fd_goal_met"] for g in goals["servers"].values()) and goals["p99_goal_met"]


def plot(run: dict, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = run["samples"]
    t = [r["t_s"] / 60 for r in s]
    fig, ax = plt.subplots(4, 1, figsize=(9, 11), sharex=True)
    for name in ("clqlmrs", "rl-fc"):
        ax[0].plot(t, [r.get(f"{name}_rss_mb", np.nan) for r in s], label=f"{name} RSS")
        ax[1].plot(t, [r.get(f"{name}_fds", np.nan) for r in s], label=f"{name} open fds")
    ax[0].set_ylabel("MB")
    ax[1].set_ylabel("fds")
    pm = run["per_minute"]
    mid = [m["minute"] - 0.5 for m in pm]
    ax[2].plot(mid, [m["p50_ms"] for m in pm], "o-", label="p50")
    ax[2].plot(mid, [m["p99_ms"] for m in pm], "o-", label="p99")
    ax[2].plot(mid, [m["p99_ms_from_schedule"] for m in pm], "x--", label="p99 from scheduled send")
    ax[2].set_ylabel("ms")
    ax[2].set_yscale("log")
    ax[3].plot(t, [r.get("clqlmrs_learner_dropped", np.nan) for r in s], label="learner queue drops (total)")
    ax[3].plot(t, [r.get("client_drops", np.nan) for r in s], label="client drops (total)")
    ax[3].plot(t, [r.get("clqlmrs_learner_queue", np.nan) for r in s], label="learner queue length")
    ax[3].set_xlabel("minutes")
    for a in ax:
        a.legend(loc="best", fontsize=8)
        a.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="length of the run (default 10)")
    ap.add_argument("--rate", type=float, default=2000.0, help="calls per second, all kinds (default 2000)")
    ap.add_argument("--max-in-flight", type=int, default=2000, help="outstanding calls before the client drops")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--no-progress", action="store_true", help="no status line every 30 s")
    ap.add_argument("--evaluate", type=Path, metavar="SOAK_JSON", help="recompute the goals of a saved run")
    args = ap.parse_args(argv)
    if args.evaluate is not None:
        saved = json.loads(args.evaluate.read_text())
        goals = evaluate({"samples": saved["samples"], "per_minute": saved["per_minute"]}, saved["minutes"])
        saved.update(goals, all_goals_met=_all_met(goals))
        args.evaluate.write_text(json.dumps(saved, indent=1))
        print(json.dumps({k: v for k, v in saved.items() if k != "samples"}))
        return 0
    if args.minutes <= 0 or args.rate <= 0 or args.max_in_flight < 1:
        ap.error("--minutes and --rate must be positive, --max-in-flight >= 1")
    args.out.mkdir(parents=True, exist_ok=True)
    rl_fc = REPO / "models" / "rl-fc-uniform.safetensors"
    servers = {"clqlmrs": Server("clqlmrs", ["--policy", "clqlmrs"], args.out),
               "rl-fc": Server("rl-fc", ["--policy", "rl-fc", "--model", str(rl_fc)], args.out)}
    try:
        run = asyncio.run(drive(servers, args.minutes, args.rate, args.max_in_flight, args.seed,
                                not args.no_progress))
    finally:
        codes = {name: s.stop() for name, s in servers.items()}
    goals = evaluate(run, args.minutes)
    result = {
        "benchmark": "soak", "minutes": args.minutes, "rate": args.rate, "seed": args.seed,
        "achieved_rate": round(run["sent"] / run["elapsed_s"], 1), "sent": run["sent"], "answered": run["answered"],
        "client_drops": run["client_drops"], "error_codes": run["error_codes"],
        "error_details": run["error_details"], "unfinished_at_end": run["unfinished_at_end"], **goals,
        "all_goals_met": _all_met(goals),
        "per_minute": run["per_minute"], "server_exit_codes": codes,
        "load_avg_1m": round(os.getloadavg()[0], 1), "cpus": os.cpu_count(),
        "plot": str(args.out / "soak.png"),
    }
    (args.out / "soak.json").write_text(json.dumps({**result, "samples": run["samples"]}, indent=1))
    plot(run, args.out / "soak.png", f"soak: {args.minutes:g} min at {args.rate:g} calls/s (Schedule/Route/Report "
                                     f"60/25/15 %), CLQLMRS learning online + RL-FC; load {result['load_avg_1m']}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
