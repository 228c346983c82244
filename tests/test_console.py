"""The console's server side (`serve --ui-port`) and the engine's shadow recording, over real HTTP and gRPC (the
page itself is tested in a browser: test_console_browser.py)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from policy_engine.codec import encode_schedule
from policy_engine.console import check_ui_exposure, quantile_from_buckets
from policy_engine.server import warm_up_observation
from policy_engine.types import ContainerStarted, Locality


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "policy_engine.cli", "serve", "--policy", "fifo", "--port", "0",
                           *args], capture_output=True, text=True, timeout=timeout)


def _get(url: str, headers: dict | None = None):
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=5) as r:
        return r.status, r.headers, r.read()


def test_quantile_interpolates_inside_the_bucket_like_promql():
    buckets = [(0.001, 50.0), (0.01, 90.0), (0.1, 100.0), (float("inf"), 100.0)]
    assert quantile_from_buckets(buckets, 0.5) == pytest.approx(0.001)
    assert quantile_from_buckets(buckets, 0.7) == pytest.approx(0.001 + 0.009 * 20 / 40)
    assert quantile_from_buckets(buckets, 0.99) == pytest.approx(0.01 + 0.09 * 9 / 10)
    assert quantile_from_buckets([(0.1, 0.0), (float("inf"), 0.0)], 0.5) is None


def test_exposure_rules():
    assert check_ui_exposure("127.0.0.1", False, False) is None
    assert "--tls-cert/--tls-key and --token-file" in check_ui_exposure("0.0.0.0", False, False)
    assert "--token-file" in check_ui_exposure("10.0.0.1", True, False)
    assert check_ui_exposure("10.0.0.1", True, True) is None


def test_taken_ui_port_and_exposed_ui_are_one_line_exit_2():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        r = _serve("--ui-port", str(s.getsockname()[1]))
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "cannot serve the console" in r.stderr and "in use" in r.stderr
    r = _serve("--ui-port", "0", "--ui-host", "0.0.0.0")
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "not loopback" in r.stderr
    r = _serve("--rm-address", "rm:8088")
    assert r.returncode == 2 and "--ui-port" in r.stderr


def _console_url(engine) -> str:
    for line in engine.proc.stdout:
        if "console=" in line:
            return line.split("console=", 1)[1].split()[0]
    raise AssertionError("no console line")


def test_state_matches_the_registry_rm_unreachable_and_shadow(engine_factory):
    metrics_port, rm_port = _free_port(), _free_port()  # nothing listens on rm_port
    engine = engine_factory("delay", "--metrics-port", str(metrics_port), "--ui-port", "0",
                            "--rm-address", f"127.0.0.1:{rm_port}")
    url = _console_url(engine)
    status, headers, body = _get(url)
    assert status == 200 and b"console.js" in body and b"http" not in body.split(b"<body>")[0].replace(
        b'http-equiv', b'')  # nothing loaded from elsewhere
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    assert _get(url + "console.js")[0] == 200 and _get(url + "console.css")[0] == 200
    with pytest.raises(urllib.error.HTTPError) as e:
        _get(url + "nope")
    assert e.value.code == 404

    obs = warm_up_observation()
    active = engine.client.schedule(encode_schedule(obs))
    assert not active.shadow
    req = encode_schedule(obs)
    req.shadow = True
    shadow = engine.client.schedule(req)
    assert shadow.shadow and shadow.decision_id != active.decision_id
    engine_placed = {a.ask_id: a.count for a in shadow.assignments}
    assert engine_placed
    # YARN placed one container of an ask the engine chose, one of the other ask, and one for an active decision
    chosen = next(iter(engine_placed))
    other = next((a.ask_id for a in obs.asks if a.ask_id not in engine_placed), "an-ask-the-engine-left")
    engine.client.report_events([
        ContainerStarted(decision_id=shadow.decision_id, container_id="c1", node_id=obs.node.node_id, ask_id=chosen,
                         locality=Locality.RACK_LOCAL),
        ContainerStarted(decision_id=shadow.decision_id, container_id="c2", node_id=obs.node.node_id, ask_id=other,
                         locality=Locality.OFF_SWITCH),
        ContainerStarted(decision_id=active.decision_id, container_id="c3", node_id=obs.node.node_id, ask_id=chosen,
                         locality=Locality.NODE_LOCAL)])
    state = json.loads(_get(url + "api/state")[2])
    assert state["engine"]["policy"] == "delay" and state["decisions_total"] == 2
    assert state["shadow"]["decisions"] == 1
    yarn = state["locality"]["shadow_yarn"]["totals"]
    assert yarn == {"cache_local": 0, "node_local": 0, "rack_local": 1, "off_switch": 1}  # c3 was not shadow
    assert sum(state["locality"]["shadow_engine"]["totals"].values()) == sum(engine_placed.values())
    outcomes = {"agree": 1.0, "differ": 1.0}
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read().decode()
    for outcome, n in outcomes.items():
        assert f'yarnrl_shadow_placements_total{{outcome="{outcome}"}} {n}' in text
    assert 'yarnrl_shadow_containers_total{locality="rack_local",placed_by="yarn"} 1.0' in text
    # the RM is not there: said plainly, the rest still served
    assert state["rm"]["ok"] is False and f"127.0.0.1:{rm_port}" in state["rm"]["error"]


def test_console_with_a_token(engine_factory, tmp_path):
    from policy_engine.security import ClientSecurity

    token = tmp_path / "token"
    token.write_text("s3cret-token-value\n")
    engine = engine_factory("fifo", "--token-file", str(token), "--ui-port", "0",
                            security=ClientSecurity(token_file=str(token)))
    url = _console_url(engine)
    with pytest.raises(urllib.error.HTTPError) as e:
        _get(url + "api/state")
    assert e.value.code == 401
    assert _get(url + "api/state", {"Authorization": "Bearer s3cret-token-value"})[0] == 200
    status, headers, _ = _get(url + "?token=s3cret-token-value")
    assert status == 200 and "HttpOnly" in headers["Set-Cookie"]
    assert _get(url + "api/state", {"Cookie": headers["Set-Cookie"].split(";")[0]})[0] == 200


def test_shadow_comparison_is_in_the_decision_log_and_replay_prints_it(engine_factory, tmp_path):
    log_dir = tmp_path / "log"
    engine = engine_factory("delay", "--decision-log", str(log_dir))
    obs = warm_up_observation()
    engine.client.schedule(encode_schedule(obs))  # an active decision: not part of the comparison
    req = encode_schedule(obs)
    req.shadow = True
    shadow = engine.client.schedule(req)
    placed = sum(a.count for a in shadow.assignments)
    ask = shadow.assignments[0].ask_id
    engine.client.report_events([ContainerStarted(decision_id=shadow.decision_id, container_id=f"c{i}",
                                                  node_id=obs.node.node_id, ask_id=ask, locality=Locality.NODE_LOCAL)
                                 for i in range(3)])
    assert engine.stop() == 0  # closes the log's files
    r = subprocess.run([sys.executable, "-m", "emulator.cli", "replay", "--log", str(log_dir), "--policies", "fifo",
                        "--json", "--no-progress"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])["shadow"]
    assert got["decisions"] == 1 and sum(got["engine"].values()) == placed
    assert got["yarn"] == {"node_local": 3} and got["placements"] == {"agree": 3, "differ": 0}
