"""TLS, mutual TLS and the bearer token of `policy-engine serve`, against real engines on loopback with
certificates made at test time (tests/certs.py): what is accepted, what is refused, and that the refusal says why.
Health checking and reflection follow the same policy as the service."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

import policy_engine.cli
from certs import CertFactory
from heartbeats import map_ask, node, observe
from policy_engine.client import EngineUnavailable, PolicyEngineClient
from policy_engine.codec import encode_schedule
from policy_engine.proto import SERVICE_NAME, pb
from policy_engine.security import ClientSecurity, SecurityConfigError, ServerSecurity, TokenAuthInterceptor

TOKEN = "t0ken-for-tests-6f1c"


def heartbeat(i: int):
    asks = [map_ask("a", "app1", hosts={"n1": 2}, racks={"/r1": 2}, total=3, submit=1)]
    return observe(node("n1", rack="/r1", free_gb=4), asks, request_id=f"hb-{i}")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    f = CertFactory(d)
    ca, other = f.ca("ca"), f.ca("other-ca")
    (d / "token").write_text(TOKEN + "\n")
    (d / "wrong-token").write_text("not-the-token\n")
    (d / "empty-token").write_text("  \n")
    return {
        "dir": d, "ca": ca[0].cert, "other_ca": other[0].cert,
        "server": f.leaf("server", ca, server=True), "client": f.leaf("client", ca, server=False),
        "expired_client": f.leaf("client-expired", ca, server=False, expired=True),
        "expired_server": f.leaf("server-expired", ca, server=True, expired=True),
        "foreign_client": f.leaf("client-foreign", other, server=False),
        "token": str(d / "token"), "wrong_token": str(d / "wrong-token"), "empty_token": str(d / "empty-token"),
    }


@pytest.fixture(scope="module")
def mtls(engine_factory, pki):
    s = pki["server"]
    return engine_factory("fifo", "--tls-cert", s.cert, "--tls-key", s.key, "--tls-client-ca", pki["ca"],
                          "--token-file", pki["token"], security=ClientSecurity(**_good(pki)))


def _client(engine, pki, **kw) -> PolicyEngineClient:
    return PolicyEngineClient(engine.target, timeout=5.0, security=ClientSecurity(**kw) if kw else None)


def _good(pki, **over):
    kw = {"ca": pki["ca"], "cert": pki["client"].cert, "key": pki["client"].key, "token_file": pki["token"]}
    kw.update(over)
    return {k: v for k, v in kw.items() if v is not None}


def _all_calls(client: PolicyEngineClient):
    """One call of every kind the server offers, health and reflection included: (name, thunk)."""
    req = encode_schedule(heartbeat(0))

    def reflect():
        stub = reflection_pb2_grpc.ServerReflectionStub(client.channel)
        answers = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                            timeout=5.0)
        return [s.name for a in answers for s in a.list_services_response.service]

    return [("Schedule", lambda: client.schedule(req)),
            ("ScheduleStream", lambda: list(client.schedule_stream([req], timeout=5.0))),
            ("Report", lambda: client.report([])),
            ("GetInfo", lambda: client.info()),
            ("Health", lambda: client.health()),
            ("Reflection", reflect)]


def test_mtls_with_token_serves_every_call_including_health_and_reflection(mtls, pki):
    with _client(mtls, pki, **_good(pki)) as c:
        results = {name: call() for name, call in _all_calls(c)}
    assert results["Schedule"].request_id == "hb-0" and results["Health"] == "SERVING"
    assert results["GetInfo"].policy == "fifo" and SERVICE_NAME in results["Reflection"]


@pytest.mark.parametrize("token,why", [(None, "missing credentials"), ("wrong", "invalid token")])
def test_every_call_without_the_right_token_is_unauthenticated(mtls, pki, token, why):
    over = {"token_file": None, "token": token}
    with _client(mtls, pki, **_good(pki, **over)) as c:
        for name, call in _all_calls(c):
            with pytest.raises(grpc.RpcError) as e:
                call()
            assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED, name
            assert why in e.value.details(), (name, e.value.details())
            assert TOKEN not in e.value.details()
    # and the engine still answers a caller with the token
    with _client(mtls, pki, **_good(pki)) as c:
        assert c.health() == "SERVING"


@pytest.mark.parametrize("case,kw,hint", [
    ("no client certificate", {"cert": None, "key": None}, "require a client certificate"),
    ("client certificate of another CA", {"cert": "foreign_client"}, "refused the client certificate"),
    ("plaintext", {"ca": None, "cert": None, "key": None}, "it may serve TLS"),
    ("server certificate not signed by the client's CA", {"ca": "other_ca"}, "certificate was refused"),
])
def test_mtls_refuses_bad_peers_with_a_clear_error(mtls, pki, case, kw, hint):
    over = {}
    for k, v in kw.items():
        if k == "cert" and v is not None:
            over.update(cert=pki[v].cert, key=pki[v].key)
        elif k == "ca" and v is not None:
            over["ca"] = pki[v]
        else:
            over[k] = v
    with _client(mtls, pki, **_good(pki, **over)) as c:
        with pytest.raises(grpc.RpcError) as e:
            c.schedule(encode_schedule(heartbeat(1)))
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE, case
        with pytest.raises(EngineUnavailable, match=hint):
            c.wait_ready(3)
    with _client(mtls, pki, **_good(pki)) as c:
        assert c.health() == "SERVING"


def test_an_expired_client_certificate_is_refused_by_the_engine_and_by_our_client(mtls, pki):
    """Our client refuses to present an expired certificate (one clear line); a client that does present one
    (raw gRPC credentials here) is refused in the handshake by the engine."""
    e = pki["expired_client"]
    with pytest.raises(SecurityConfigError, match="expired on"):
        _client(mtls, pki, **_good(pki, cert=e.cert, key=e.key))
    creds = grpc.ssl_channel_credentials(Path(pki["ca"]).read_bytes(), Path(e.key).read_bytes(),
                                         Path(e.cert).read_bytes())
    with grpc.secure_channel(mtls.target, creds) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        with pytest.raises(grpc.RpcError) as err:
            stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5.0,
                       metadata=(("authorization", "Bearer " + TOKEN),))
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    with _client(mtls, pki, **_good(pki)) as c:
        assert c.health() == "SERVING"


def test_tls_without_client_ca_takes_clients_without_certificates_and_listens_on_loopback(engine_factory, pki):
    s = pki["server"]
    engine = engine_factory("fifo", "--tls-cert", s.cert, "--tls-key", s.key, security=ClientSecurity(ca=pki["ca"]))
    assert engine.target.startswith("127.0.0.1:")
    with _client(engine, pki, ca=pki["ca"]) as c:
        assert c.schedule(encode_schedule(heartbeat(2))).request_id == "hb-2"
    with PolicyEngineClient(engine.target, timeout=3.0) as c, pytest.raises(grpc.RpcError):
        c.health()


def test_token_on_plaintext_and_the_info_command(engine_factory, pki, capsys):
    engine = engine_factory("fifo", "--token-file", pki["token"], security=ClientSecurity(token_file=pki["token"]))
    with PolicyEngineClient(engine.target, timeout=3.0) as c, pytest.raises(grpc.RpcError) as e:
        c.health()
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert policy_engine.cli.main(["info", "--target", engine.target, "--token-file", pki["token"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["health"] == "SERVING"
    with pytest.raises(SystemExit) as ex:
        policy_engine.cli.main(["info", "--target", engine.target, "--token-file", pki["wrong_token"]])
    assert ex.value.code == 1
    err = capsys.readouterr().err
    assert "UNAUTHENTICATED" in err and "invalid token" in err and "--token-file" in err


def test_info_over_mtls(mtls, pki, capsys):
    c = pki["client"]
    assert policy_engine.cli.main(["info", "--target", mtls.target, "--tls-ca", pki["ca"], "--tls-cert", c.cert,
                                   "--tls-key", c.key, "--token-file", pki["token"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["policy"] == "fifo"


def test_server_security_checks_its_files_before_serving(pki):
    s, e = pki["server"], pki["expired_server"]
    with pytest.raises(SecurityConfigError, match="expired on"):
        ServerSecurity.from_files(e.cert, e.key)
    with pytest.raises(SecurityConfigError, match="is not the key of"):
        ServerSecurity.from_files(s.cert, pki["client"].key)
    with pytest.raises(SecurityConfigError, match="go together"):
        ServerSecurity.from_files(s.cert, None)
    with pytest.raises(SecurityConfigError, match="needs --tls-cert"):
        ServerSecurity.from_files(None, None, pki["ca"])
    with pytest.raises(SecurityConfigError, match="is empty"):
        ServerSecurity.from_files(token_file=pki["empty_token"])
    with pytest.raises(SecurityConfigError, match="not a PEM certificate|no PEM certificate"):
        ServerSecurity.from_files(s.key, s.key)
    sec = ServerSecurity.from_files(s.cert, s.key, pki["ca"], pki["token"])
    assert sec.describe() == "mtls+token" and sec.token == TOKEN


def test_token_check_refuses_near_misses():
    check = TokenAuthInterceptor("abc").check
    assert check([("authorization", "Bearer abc")]) is None
    for value in ("Bearer ab", "Bearer abcd", "Bearer ", "bearer abc", "Basic abc", "abc"):
        assert check([("authorization", value)]) is not None, value
    assert "missing" in check([("x-other", "Bearer abc")])


def test_serve_refuses_an_expired_certificate_before_listening(pki):
    """The CLI sweep covers the other bad files; the expired certificate needs this module's PKI."""
    e = pki["expired_server"]
    with pytest.raises(SystemExit) as ex:
        policy_engine.cli.main(["serve", "--policy", "fifo", "--port", "0", "--tls-cert", e.cert, "--tls-key", e.key])
    assert ex.value.code == 2 and "expired on" in str(ex.value)
