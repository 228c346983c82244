"""Shadow mode on the engine side: a shadowed heartbeat is decided and recorded, never counted as assigned, never
learned from; YARN's native placements (ContainerStarted.shadow) are counted beside it on /metrics and in the
decision log, which `emulator replay` reads back. Plus the console's bad-input lines and its histogram quantile."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

import emulator.cli
from heartbeats import map_ask, node, observe
from policy_engine.codec import ScheduleDecoder, decode_schedule, encode_schedule
from policy_engine.console import parse_metrics, quantile
from policy_engine.engine import Engine, EngineMetrics
from policy_engine.policy import create
from policy_engine.types import ContainerStarted, Locality


def counts(registry, name: str, **match) -> dict[str, float]:
    from prometheus_client import generate_latest

    out: dict[str, float] = {}
    for labels, v in parse_metrics(generate_latest(registry).decode()).get(name, ()):
        if all(labels.get(k) == x for k, x in match.items()):
            out[labels.get("locality", "")] = out.get(labels.get("locality", ""), 0) + v
    return out


def shadow_heartbeat(shadow: bool):
    obs = observe(node("n1", "/r1"), [map_ask("a1", "app_1", {"n1": 2}, {"/r1": 2}, 2)])
    obs.shadow = shadow
    return obs


def test_the_shadow_flag_survives_both_decoders():
    req = encode_schedule(shadow_heartbeat(True))
    assert req.shadow and decode_schedule(req).shadow
    decoder = ScheduleDecoder()
    data = req.SerializeToString()
    assert decoder.decode(data).shadow and decoder.decode(data).shadow   # the fast path must not drop it
    assert not decoder.decode(encode_schedule(shadow_heartbeat(False)).SerializeToString()).shadow


def test_shadow_decisions_are_recorded_beside_yarns_and_never_counted_as_assigned():
    metrics = EngineMetrics()
    engine = Engine(create("delay"), metrics)
    active = engine.schedule(shadow_heartbeat(False))
    shadow = engine.schedule(shadow_heartbeat(True))
    assert sum(a.count for a in active.assignments) == 2 and sum(a.count for a in shadow.assignments) == 2
    assert counts(metrics.registry, "yarnrl_assigned_containers_total") == {"node_local": 2}
    assert counts(metrics.registry, "yarnrl_shadow_containers_total", placed_by="engine") == {"node_local": 2}
    engine.report([ContainerStarted(container_id="c1", application_id="app_1", node_id="n1:8041", ask_id="a1",
                                    locality=Locality.RACK_LOCAL, shadow=True),
                   ContainerStarted(container_id="c2", application_id="app_1", node_id="n1:8041", ask_id="a1",
                                    locality=Locality.NODE_LOCAL)])  # not shadowed: not YARN's counterfactual
    assert counts(metrics.registry, "yarnrl_shadow_containers_total", placed_by="yarn") == {"rack_local": 1}
    assert counts(metrics.registry, "yarnrl_shadow_decisions_total") == {"": 1}


def test_histogram_quantile_interpolates_inside_the_bucket():
    assert quantile({0.001: 50, 0.002: 100, float("inf"): 100}, 0.5) == pytest.approx(0.001)
    assert quantile({0.001: 0, 0.002: 100, float("inf"): 100}, 0.99) == pytest.approx(0.00199)
    assert quantile({0.001: 0, float("inf"): 0}, 0.5) is None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(*args):
    return subprocess.run([sys.executable, "-m", "policy_engine.cli", "serve", "--policy", "fifo", *args],
                          capture_output=True, text=True, timeout=60)


def test_console_bad_input_is_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        out = serve("--port", "0", "--ui-port", str(taken.getsockname()[1]))
    assert out.returncode != 0 and "--ui-port 0 picks a free one" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    out = serve("--port", "0", "--ui-port", "0", "--ui-host", "0.0.0.0")
    assert out.returncode != 0 and "not loopback" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    out = serve("--port", "0", "--ui-port", "0", "--ui-rm", "rm:8088")
    assert out.returncode != 0 and "--ui-rm" in out.stderr


def test_emulated_shadow_run_is_in_the_decision_log_and_replay_reads_it(tmp_path, capsys):
    port, log_dir = free_port(), tmp_path / "log"
    proc = subprocess.Popen([sys.executable, "-m", "policy_engine.cli", "serve", "--policy", "clqlmrs", "--port",
                             str(port), "--decision-log", str(log_dir)], stdout=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if "listening on" in line:
                break
        assert emulator.cli.main(["run", "--scenario", "locality-wordcount", "--param", "jobs=2", "--episodes",
                                  "1", "--policy", "clqlmrs", "--remote", f"127.0.0.1:{port}", "--shadow-native",
                                  "fifo", "--no-progress", "--json"]) == 0
        run = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert run["mode"] == "shadow"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert emulator.cli.main(["replay", "--log", str(log_dir), "--policies", "fifo", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    shadow = result["shadow"]
    assert shadow["decisions"] == result["decisions"] > 0            # every heartbeat was shadowed
    assert sum(shadow["engine"].values()) == result["containers"]["logged"]  # the engine's would-be choices
    # what YARN (fifo, in-process) placed: every map container the run started, reported back
    assert sum(shadow["yarn"].values()) > 0
