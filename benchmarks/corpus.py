"""Real request messages recorded from the emulator's scenarios: the fuzzer's seeds and the soak's traffic.

Each scenario family runs one short episode in process with a policy that fits it; the driver records every
ScheduleRequest, RouteRequest and Report event it is asked for, serialized as the wire carries them, until it has
`limit` of each. Recorded with the policy that produced them, so a replay sends each message to an engine whose
policy understands it (a DeepRM slot heartbeat to a DeepRM policy, a DSRAP manager view to a DSRAP policy).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from emulator.drivers import InProcessDriver  # noqa: E402
from emulator.scenario import get_scenario  # noqa: E402
from policy_engine.codec import encode_event, encode_route, encode_schedule  # noqa: E402
from policy_engine.policy import create  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

# (scenario, its parameters for a short episode, policy, model file or None)
SOURCES = [
    ("locality-wordcount", {"jobs": 4}, "clqlmrs", None),
    ("locality-sort", {"jobs": 1}, "delay", None),
    ("multicluster-uniform", {"jobs": 20}, "rl-fc", REPO / "models" / "rl-fc-uniform.safetensors"),
    ("hetero-elastic-uniform", {}, "rr", None),
    ("deeprm", {"simu_len": 10}, "sjf", None),
    ("dsrap-light", {"steps": 20, "window": 10, "curve_every": 10}, "bdl", None),
]


class _Enough(Exception):
    pass


@dataclass
class Recorded:
    """Serialized messages of one scenario family, and the policy (with its model) that answered them."""

    scenario: str
    policy: str
    model: str | None
    schedule: list[bytes] = field(default_factory=list)
    route: list[bytes] = field(default_factory=list)
    events: list[bytes] = field(default_factory=list)


class RecordingDriver(InProcessDriver):
    def __init__(self, policy, out: Recorded, limit: int):
        super().__init__(policy)
        self.out, self.limit = out, limit
        self.calls = 0
        self._schedule, self._route = self.schedule, self.route
        self.schedule, self.route = self._record_schedule, self._record_route

    def _full(self) -> None:
        o = self.out
        primary = max(len(o.schedule), len(o.route))
        if primary >= self.limit and (len(o.events) >= self.limit or primary >= 3 * self.limit):
            raise _Enough  # DSRAP reports no events: its episode stops on decisions alone

    def _record_schedule(self, obs):
        self.calls += 1
        if obs.asks and len(self.out.schedule) < self.limit:
            self.out.schedule.append(encode_schedule(obs).SerializeToString())
        decision = self._schedule(obs)
        self._full()
        return decision

    def _record_route(self, obs):
        self.calls += 1
        if len(self.out.route) < self.limit:
            self.out.route.append(encode_route(obs).SerializeToString())
        decision = self._route(obs)
        self._full()
        return decision

    def report(self, events):
        events = list(events)
        for ev in events:
            if len(self.out.events) < self.limit:
                self.out.events.append(encode_event(ev).SerializeToString())
        return super().report(events)


def record(limit: int = 200, seed: int = 0, sources=SOURCES) -> list[Recorded]:
    """One short episode per source (stopped once `limit` messages of each kind are in)."""
    out = []
    for scenario, params, policy, model in sources:
        rec = Recorded(scenario, policy, str(model) if model else None)
        driver = RecordingDriver(create(policy, model=str(model)) if model else create(policy), rec, limit)
        try:
            get_scenario(scenario, **params).run_episode(driver, seed)
        except _Enough:
            pass
        finally:
            driver.close()
        out.append(rec)
    return out


CORPUS = REPO / "benchmarks" / "data" / "corpus.jsonl"


def write_corpus(path: Path = CORPUS, limit: int = 40, seed: int = 0) -> dict:
    """Record and store the corpus (committed, so the fuzzer and the soak start in a second instead of running
    six episodes on a loaded machine): one JSON line per message, base64 of its serialized bytes."""
    import base64
    import json
    import time

    path.parent.mkdir(parents=True, exist_ok=True)
    counts = {}
    with open(path, "w") as f:
        for src in SOURCES:
            t0 = time.perf_counter()
            rec = record(limit, seed, [src])[0]
            for kind in ("schedule", "route", "events"):
                for data in getattr(rec, kind):
                    f.write(json.dumps({"scenario": rec.scenario, "policy": rec.policy, "model": rec.model and
                                        str(Path(rec.model).relative_to(REPO)), "kind": kind,
                                        "data": base64.b64encode(data).decode()}) + "\n")
            counts[rec.scenario] = {"schedule": len(rec.schedule), "route": len(rec.route),
                                    "events": len(rec.events), "seconds": round(time.perf_counter() - t0, 1)}
            print(rec.scenario, counts[rec.scenario], flush=True)
    return counts


def load_corpus(path: Path = CORPUS) -> list[Recorded]:
    """The stored corpus, grouped as recorded (model paths made absolute)."""
    import base64
    import json

    groups: dict[str, Recorded] = {}
    for line in Path(path).read_text().splitlines():
        d = json.loads(line)
        rec = groups.get(d["scenario"])
        if rec is None:
            rec = groups[d["scenario"]] = Recorded(d["scenario"], d["policy"], str(REPO / d["model"]) if d["model"]
                                                   else None)
        getattr(rec, d["kind"]).append(base64.b64decode(d["data"]))
    return list(groups.values())


if __name__ == "__main__":
    import argparse
    import json

    ap = argparse.ArgumentParser(description="Record the fuzzer's and soak's request corpus from the emulator.")
    ap.add_argument("--limit", type=int, default=40, help="messages of each kind per scenario (default 40)")
    ap.add_argument("--out", type=Path, default=CORPUS)
    args = ap.parse_args()
    print(json.dumps({"corpus": str(args.out), "counts": write_corpus(args.out, args.limit)}))
