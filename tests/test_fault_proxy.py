"""docker_cluster/fault_proxy.py and docker_cluster/invalid_engine.py on loopback, without containers: bytes pass through, a delay
holds every chunk at least that long each way, a cut resets open connections and new ones until restored, the
upstream can be re-pointed, bad commands are refused; the invalid engine speaks the protocol (health SERVING,
GetInfo's version) and every answer breaks a rule the plugin re-checks (Snapshots.check). The faults themselves run
on the container cluster in tests/cluster/test_docker_cluster.py."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import grpc
import pytest

from docker_cluster import fault_proxy as fp  # noqa: E402
from docker_cluster import invalid_engine as ie  # noqa: E402
from policy_engine import PROTOCOL_VERSION  # noqa: E402
from policy_engine.proto import SERVICE_NAME, pb, pb_grpc  # noqa: E402

WAIT_S = 30.0  # generous: a loaded 2-core machine


class Running:
    """A proxy in its own event loop thread, in front of `upstream_port`."""

    def __init__(self, upstream_port: int):
        self.loop = asyncio.new_event_loop()
        started = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.proxy, self.data, self.ctl = self.loop.run_until_complete(
                fp.start(("127.0.0.1", 0), ("127.0.0.1", upstream_port), ("127.0.0.1", 0)))
            started.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert started.wait(WAIT_S)
        self.port = self.data.sockets[0].getsockname()[1]
        self.control = ("127.0.0.1", self.ctl.sockets[0].getsockname()[1])

    def send(self, line: str) -> dict:
        return fp.send(self.control, line)

    def close(self):
        async def stop():
            self.data.close()
            self.ctl.close()
            self.proxy._drop_all()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(WAIT_S)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(WAIT_S)


class EchoServer:
    """A TCP echo server on loopback (threads), the proxy's upstream for the byte-level tests."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(c,), daemon=True).start()

    @staticmethod
    def _echo(c):
        with c:
            try:
                while data := c.recv(65536):
                    c.sendall(data)
            except OSError:
                pass


@pytest.fixture
def echo_proxy():
    echo = EchoServer()
    p = Running(echo.port)
    yield p
    p.close()
    echo.sock.close()


def roundtrip(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as s:
        s.sendall(payload)
        got = b""
        while len(got) < len(payload):
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


def answered(port: int) -> bool:
    try:
        return roundtrip(port, b"y") == b"y"
    except (ConnectionResetError, BrokenPipeError, ConnectionAbortedError):
        return False


def test_bytes_pass_through_unchanged(echo_proxy):
    payload = bytes(range(256)) * 4096  # 1 MiB, many chunks
    assert roundtrip(echo_proxy.port, payload) == payload
    assert echo_proxy.send("status")["accepted"] == 1


def test_delay_holds_each_direction_then_goes(echo_proxy):
    assert echo_proxy.send("delay 300")["delay_ms"] == 300
    t = time.monotonic()
    assert roundtrip(echo_proxy.port, b"ping") == b"ping"
    assert time.monotonic() - t >= 0.6  # 300 ms there and 300 ms back, at least
    assert echo_proxy.send("delay 0")["delay_ms"] == 0
    assert roundtrip(echo_proxy.port, b"pong") == b"pong"


def test_cut_resets_open_and_new_connections_until_restored(echo_proxy):
    s = socket.create_connection(("127.0.0.1", echo_proxy.port), timeout=WAIT_S)
    s.sendall(b"x")
    assert s.recv(1) == b"x"
    state = echo_proxy.send("cut")
    assert state["cut"] and state["dropped"] == 1 and state["open"] == 0
    with pytest.raises(ConnectionResetError):
        s.recv(1)  # the RST arrived
    s.close()
    assert not answered(echo_proxy.port)  # a new connection is reset as soon as it is accepted
    assert echo_proxy.send("status")["refused"] >= 1
    assert not echo_proxy.send("restore")["cut"]
    assert roundtrip(echo_proxy.port, b"z") == b"z"


def test_upstream_down_closes_the_client_connection():
    dead = socket.create_server(("127.0.0.1", 0))
    port = dead.getsockname()[1]
    dead.close()  # nothing listens there
    p = Running(port)
    try:
        assert not answered(p.port)  # closed (or reset) by the proxy, as the engine's own address would be
        assert p.send("status")["failed_upstream"] == 1
    finally:
        p.close()


@pytest.mark.parametrize("line, message", [
    ("", "empty command"),
    ("delay", "unknown command"),
    ("delay -5", "delay: 0..600000 ms"),
    ("delay soon", "could not convert"),
    ("upstream nowhere", "expected HOST:PORT"),
    ("explode", "unknown command 'explode'"),
])
def test_bad_commands_are_refused_and_change_nothing(echo_proxy, line, message):
    before = echo_proxy.send("status")
    with pytest.raises(ValueError, match=message):
        echo_proxy.send(line)
    assert echo_proxy.send("status") == before


def test_command_line_refuses_a_bad_address(capsys):
    with pytest.raises(SystemExit) as e:
        fp.main(["--upstream", "engine"])
    assert e.value.code == 2
    assert "--upstream: expected HOST:PORT, got 'engine'" in capsys.readouterr().err


# --------------------------------------------------------------------------------- the invalid engine
REQUEST = pb.ScheduleRequest(request_id="r7", asks=[pb.ResourceAsk(ask_id="a1", num_containers=2),
                                                    pb.ResourceAsk(ask_id="a2", num_containers=1)])


def broken_rule(req, resp) -> str | None:
    """The plugin's re-validation (yarn_plugin Snapshots.check), minus the node's free resources."""
    if resp.request_id != req.request_id:
        return "request id"
    outstanding = {a.ask_id: a.num_containers for a in req.asks}
    for a in resp.assignments:
        if a.ask_id not in outstanding:
            return "unknown ask"
        if a.count <= 0:
            return "non-positive count"
        if a.count > outstanding[a.ask_id]:
            return "beyond outstanding"
    return None


def test_every_kind_of_invalid_answer_breaks_a_rule_the_plugin_checks():
    broken = {kind: broken_rule(REQUEST, ie.invalid_answer(REQUEST, kind)) for kind in ie.KINDS}
    assert broken == {"over_allocate": "beyond outstanding", "unknown_ask": "unknown ask",
                      "wrong_request": "request id", "zero_count": "non-positive count"}
    over = ie.invalid_answer(REQUEST, "over_allocate")
    assert sum(a.count for a in over.assignments) == 2003  # also far beyond any node's free resources
    with pytest.raises(ValueError, match="unknown kind"):
        ie.invalid_answer(REQUEST, "polite")


def test_the_waiting_engine_answers_validly_and_never_places_anything():
    resp = ie.invalid_answer(REQUEST, ie.WAIT)
    assert broken_rule(REQUEST, resp) is None and list(resp.assignments) == []
    server, port = ie.build_server("127.0.0.1", 0, (ie.WAIT,))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            answers = [pb_grpc.PolicyEngineStub(ch).Schedule(REQUEST, timeout=WAIT_S) for _ in range(3)]
        assert all(a.request_id == "r7" and not a.assignments for a in answers)
        assert server.servicer.answered == {ie.WAIT: 3}
    finally:
        server.stop(0)


def test_invalid_engine_through_the_proxy_passes_handshake_and_health_but_never_answers_validly():
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    server, port = ie.build_server("127.0.0.1", 0)
    p = Running(port)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{p.port}") as ch:
            info = pb_grpc.PolicyEngineStub(ch).GetInfo(pb.GetInfoRequest(), timeout=WAIT_S)
            assert info.protocol_version == PROTOCOL_VERSION and "schedule" in info.capabilities
            health = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME),
                                                          timeout=WAIT_S)
            assert health.status == health_pb2.HealthCheckResponse.SERVING
            stub = pb_grpc.PolicyEngineStub(ch)
            answers = [stub.Schedule(REQUEST, timeout=WAIT_S) for _ in range(8)]
        assert all(broken_rule(REQUEST, a) for a in answers)
        assert server.servicer.answered == {k: 2 for k in ie.KINDS}  # in turn
    finally:
        p.close()
        server.stop(0)
