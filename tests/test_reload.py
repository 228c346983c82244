"""Live model reload of a real `policy-engine serve` (issue 17): --watch and SIGHUP, a bad file refused while the
old model keeps serving, GetInfo naming the new version, and calls in flight answered by one model or the other."""

from __future__ import annotations

import signal
import socket
import threading
import time
from pathlib import Path

import grpc
import pytest
from heartbeats import map_ask, node, observe

from policy_engine.codec import encode_schedule
from policy_engine.metrics_scrape import Metrics
from policy_engine.waiting import wait_until
from algorithms.clqlmrs.policy import ClqlmrsPolicy

REPO = Path(__file__).resolve().parents[1]
RL_FC_MODEL = REPO / "models" / "rl-fc-uniform.safetensors"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clqlmrs_model(path: Path, value: float, episodes: int) -> tuple[str, Path]:
    """A clqlmrs artifact beside `path` whose Q-table differs by `value` (so its checksum and version differ):
    (its model version, its temporary path)."""
    p = ClqlmrsPolicy(learn=False)
    p.model.table.q[0] = value
    tmp = path.with_name(f".{path.name}.{value}.new")
    p.save(tmp, {"episodes": episodes})
    version = ClqlmrsPolicy(model=tmp, learn=False).model_version
    return version, tmp


def install(tmp: Path, path: Path) -> None:
    tmp.replace(path)  # atomic, as save_artifact writes


def heartbeat(i: int):
    asks = [map_ask("a", "app1", hosts={"n1": 2}, racks={"/r1": 2}, total=3, submit=1)]
    return observe(node("n1", rack="/r1", free_gb=4), asks, request_id=f"hb-{i}")


def reloads(metrics_port: int) -> dict[str, float]:
    return Metrics.scrape(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).by_label(
        "yarnrl_model_reloads_total", "result")


def wait_for(predicate, timeout: float = 60.0, what: str = ""):
    return wait_until(predicate, timeout, what, interval_s=0.1)


def test_watch_reloads_a_new_model_and_refuses_bad_files(engine_factory, tmp_path):
    model = tmp_path / "q.safetensors"
    v1, t1 = clqlmrs_model(model, 1.0, 1)
    install(t1, model)
    mport = free_port()
    engine = engine_factory("clqlmrs", "--model", str(model), "--watch", "--watch-interval", "0.2",
                            "--metrics-port", str(mport))
    c = engine.client
    assert c.info().model_version == v1
    v2, t2 = clqlmrs_model(model, 2.0, 2)
    install(t2, model)
    wait_for(lambda: c.info().model_version == v2, what=f"GetInfo to show {v2}")
    assert c.schedule(encode_schedule(heartbeat(1))).model_version == v2
    assert reloads(mport).get("ok") == 1

    bad = [b"\x00not a model" * 100, RL_FC_MODEL.read_bytes()]  # corrupt; a model of another policy
    corrupt_tampered = bytearray(model.read_bytes())
    corrupt_tampered[-1] ^= 0xFF  # weights changed after saving: checksum mismatch
    bad.append(bytes(corrupt_tampered))
    for i, data in enumerate(bad, start=1):
        tmp = tmp_path / f"bad{i}"
        tmp.write_bytes(data)
        install(tmp, model)
        wait_for(lambda: reloads(mport).get("refused", 0) >= i, what=f"bad file {i} to be refused")
        assert c.info().model_version == v2, "the old model keeps serving"
        assert c.schedule(encode_schedule(heartbeat(10 + i))).model_version == v2
    v3, t3 = clqlmrs_model(model, 3.0, 3)  # a good file after bad ones is taken again
    install(t3, model)
    wait_for(lambda: c.info().model_version == v3, what=f"GetInfo to show {v3}")
    counts = reloads(mport)
    assert counts.get("ok") == 2 and counts.get("refused") == 3


def test_sighup_reloads_and_calls_in_flight_see_one_model_or_the_other(engine_factory, tmp_path):
    model = tmp_path / "q.safetensors"
    versions = []
    v, t = clqlmrs_model(model, 1.0, 1)
    install(t, model)
    versions.append(v)
    engine = engine_factory("clqlmrs", "--model", str(model))
    c = engine.client
    seen: list[str] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def caller():
        req = encode_schedule(heartbeat(0))
        try:
            while not stop.is_set():
                seen.append(c.schedule(req, timeout=10.0).model_version)
        except grpc.RpcError as e:
            errors.append(e)

    th = threading.Thread(target=caller)
    th.start()
    try:
        for k in range(2, 5):
            v, t = clqlmrs_model(model, float(k), k)
            install(t, model)
            versions.append(v)
            engine.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: c.info().model_version == v, what=f"SIGHUP reload to {v}")
        bad = tmp_path / "bad"
        bad.write_bytes(b"garbage")
        install(bad, model)
        engine.proc.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        assert c.info().model_version == versions[-1]
    finally:
        stop.set()
        th.join(30)
    assert not errors, errors
    assert seen and set(seen) <= set(versions), set(seen) - set(versions)
    assert engine.proc.poll() is None, "SIGHUP must not stop the engine"


def test_sighup_without_a_model_is_ignored(engine_factory):
    engine = engine_factory("fifo")
    engine.proc.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    assert engine.proc.poll() is None and engine.client.health() == "SERVING"


def test_reload_hands_a_learning_policy_a_new_learner(tmp_path):
    """In process: the engine's swap keeps learning (a new learner on the new model) and closes the old one."""
    from policy_engine.engine import Engine
    from policy_engine.policy import create

    model = tmp_path / "q.safetensors"
    _, t = clqlmrs_model(model, 1.0, 1)
    install(t, model)
    engine = Engine(create("clqlmrs", model=str(model)), learning="thread")
    old = engine.attach_learner()
    assert old is not None
    _, t = clqlmrs_model(model, 2.0, 2)
    install(t, model)
    new_policy = create("clqlmrs", model=str(model))
    old_loop = engine.swap_policy(new_policy)
    assert engine.policy is new_policy and engine.learner is not None and engine.learner is not old
    engine.schedule(heartbeat(0))
    old_loop.close()
    engine.close()
    with pytest.raises(ValueError, match="cannot swap"):
        engine.swap_policy(create("fifo"))


def test_a_reload_that_would_resume_from_save_to_instead_of_the_new_file_is_refused(tmp_path):
    """CLQLMRS with save_to resumes from that file (a restarted learner); a reload that would silently serve it
    instead of the new --model is refused, saying why, and the old model keeps serving."""
    import asyncio

    from policy_engine.engine import Engine
    from policy_engine.policy import create
    from policy_engine.reload import ModelReloader

    model, saved = tmp_path / "q.safetensors", tmp_path / "learned.safetensors"
    v1, t = clqlmrs_model(model, 1.0, 1)
    install(t, model)
    _, t = clqlmrs_model(saved, 5.0, 5)
    install(t, saved)
    options = {"save_to": str(saved)}
    engine = Engine(create("clqlmrs", model=str(model)))
    _, t = clqlmrs_model(model, 2.0, 2)
    install(t, model)
    reloader = ModelReloader(engine, model, lambda path: create("clqlmrs", model=path, **options))
    assert asyncio.run(reloader.reload("test")) is False
    assert reloader.refused == 1 and "save_to" in reloader.last_error
    assert engine.policy.model_version == v1
