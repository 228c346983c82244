"""The live console: `policy-engine serve --ui-port N`, a page an operator leaves open.

The server samples the engine's own Prometheus registry once a second (text exposition, parsed with
prometheus_client's parser, so the page shows exactly what /metrics says) and keeps ten minutes of derived
series: decisions/s, decision latency p50/p99 per interval (from histogram bucket deltas), errors by code, the
locality mix of assigned containers, and in shadow mode the engine's would-be mix beside YARN's. The page
(static/, shipped with the package: hand-rolled SVG, no network) polls /api/state.

The plugin's fallbacks and breaker state are read from the RM's JMX REST endpoint (`--ui-rm http://RM:8088`),
not reported by the plugin to the engine: fallbacks matter most when the plugin cannot reach the engine (breaker
open, engine down), exactly when a report to the engine would not arrive; the RM's bean (RlScheduler, the same
numbers as `yarn rmadmin`/JMX) is there either way, and needs no protocol change. An unreachable RM is shown as
such on the page; the rest keeps serving.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
import time
import urllib.request
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from urllib.parse import parse_qs, urlparse

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

log = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "::1", "localhost")
LOCALITIES = ("cache_local", "node_local", "rack_local", "off_switch")
RM_BEAN = "Hadoop:service=ResourceManager,name=RlScheduler"


def parse_metrics(text: str) -> dict[str, list[tuple[dict, float]]]:
    """Prometheus text -> {sample name: [(labels, value)]}."""
    out: dict[str, list[tuple[dict, float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((dict(s.labels), float(s.value)))
    return out


def total(samples, name: str, **match) -> float:
    return sum(v for labels, v in samples.get(name, ()) if all(labels.get(k) == x for k, x in match.items()))


def by_label(samples, name: str, label: str, **match) -> dict[str, float]:
    out: dict[str, float] = {}
    for labels, v in samples.get(name, ()):
        if all(labels.get(k) == x for k, x in match.items()):
            out[labels.get(label, "")] = out.get(labels.get(label, ""), 0.0) + v
    return out


def quantile(buckets: dict[float, float], q: float) -> float | None:
    """Quantile from cumulative histogram buckets {upper bound: count}, interpolated inside the bucket (as
    Prometheus's histogram_quantile does); None without observations."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return None
    rank = q * buckets[bounds[-1]]
    prev_b, prev_c = 0.0, 0.0
    for b in bounds:
        c = buckets[b]
        if c >= rank:
            if b == float("inf"):
                return prev_b
            return prev_b + (b - prev_b) * ((rank - prev_c) / (c - prev_c) if c > prev_c else 0.0)
        prev_b, prev_c = b, c
    return bounds[-1]


def latency_buckets(samples) -> dict[float, float]:
    out: dict[float, float] = {}
    for labels, v in samples.get("yarnrl_decision_latency_seconds_bucket", ()):
        le = float(labels["le"])
        out[le] = out.get(le, 0.0) + v
    return out


class Console:
    """Samples `registry` every `interval_s`, keeps `keep` samples; `info()` gives policy/model/reload facts."""

    def __init__(self, registry, info, interval_s: float = 1.0, keep: int = 600, rm_url: str | None = None):
        self.registry = registry
        self.info = info
        self.interval_s = interval_s
        self.rm_url = rm_url.rstrip("/") if rm_url else None
        self.series: deque[dict] = deque(maxlen=keep)
        self.started = time.time()
        self.rm: dict = {"configured": self.rm_url is not None}
        self._last = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="console-sampler", daemon=True)

    def start(self) -> None:
        self.sample()
        self._thread.start()

    def close(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        n = 0
        while not self._stop.wait(self.interval_s):
            try:
                self.sample()
                if self.rm_url and n % 5 == 0:  # the RM's bean every 5 samples: a slow RM never delays the page
                    self.poll_rm()
            except Exception:  # the console must never take the engine down
                log.exception("console sample failed")
            n += 1

    def metrics_text(self) -> str:
        return generate_latest(self.registry).decode()

    def sample(self) -> dict:
        now = time.time()
        samples = parse_metrics(self.metrics_text())
        cur = {
            "time": now,
            "decisions": total(samples, "yarnrl_decisions_total"),
            "buckets": latency_buckets(samples),
            "errors": by_label(samples, "yarnrl_request_errors_total", "code"),
            "assigned": by_label(samples, "yarnrl_assigned_containers_total", "locality"),
            "shadow_engine": by_label(samples, "yarnrl_shadow_containers_total", "locality", placed_by="engine"),
            "shadow_yarn": by_label(samples, "yarnrl_shadow_containers_total", "locality", placed_by="yarn"),
            "shadow_decisions": total(samples, "yarnrl_shadow_decisions_total"),
            "learner_queue": total(samples, "yarnrl_learner_queue"),
            "learner_dropped": total(samples, "yarnrl_learner_dropped_total"),
            "learner_errors": total(samples, "yarnrl_learner_errors"),
            "reports": total(samples, "yarnrl_report_events_total"),
            "reloads": by_label(samples, "yarnrl_model_reloads_total", "result"),
        }
        point = {"t": now, "totals": {k: v for k, v in cur.items() if k not in ("buckets", "time")}}
        last = self._last
        if last is not None:
            dt = max(now - last["time"], 1e-6)
            point["rate"] = (cur["decisions"] - last["decisions"]) / dt
            delta = {b: cur["buckets"].get(b, 0.0) - last["buckets"].get(b, 0.0) for b in cur["buckets"]}
            p50, p99 = quantile(delta, 0.5), quantile(delta, 0.99)
            point["p50_ms"] = None if p50 is None else p50 * 1e3
            point["p99_ms"] = None if p99 is None else p99 * 1e3
            for key in ("assigned", "shadow_engine", "shadow_yarn"):
                point[key] = {loc: cur[key].get(loc, 0.0) - last[key].get(loc, 0.0) for loc in LOCALITIES}
        self._last = cur
        with self._lock:
            self.series.append(point)
        return point

    def poll_rm(self) -> None:
        url = f"{self.rm_url}/jmx?qry={RM_BEAN}"
        try:
            with urllib.request.urlopen(url, timeout=2.0) as r:
                beans = json.load(r).get("beans", [])
            if not beans:
                raise ValueError(f"no {RM_BEAN} bean (is the RM running an RL scheduler?)")
            bean = beans[0]
            self.rm = {"configured": True, "ok": True, "url": self.rm_url, "time": time.time(),
                       "breaker": bean.get("BreakerState", "?"),
                       "fallbacks": {k[len("Fallbacks"):]: v for k, v in bean.items()
                                     if k.startswith("Fallbacks") and isinstance(v, (int, float))}}
        except Exception as e:
            self.rm = {"configured": True, "ok": False, "url": self.rm_url, "time": time.time(),
                       "error": f"cannot read the RM's JMX at {url}: {e}"}

    def state(self) -> dict:
        with self._lock:
            series = list(self.series)
        info = dict(self.info())
        info["uptime_s"] = time.time() - self.started
        return {"info": info, "rm": self.rm, "interval_s": self.interval_s, "series": series,
                "latest": series[-1]["totals"] if series else {}}


def _handler(console: Console, token: str | None):
    static = resources.files("policy_engine.console") / "static"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):  # quiet: the page polls every second
            log.debug("console: " + fmt, *args)

        def _authorized(self, query) -> bool:
            if token is None:
                return True
            given = self.headers.get("Authorization", "")
            return given == f"Bearer {token}" or query.get("token", [""])[0] == token

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            url = urlparse(self.path)
            query = parse_qs(url.query)
            if not self._authorized(query):
                self._send(401, b"console: a bearer token is required (?token=... or Authorization header)\n",
                           "text/plain")
                return
            if url.path == "/api/state":
                self._send(200, json.dumps(console.state()).encode(), "application/json")
            elif url.path == "/metrics":
                self._send(200, console.metrics_text().encode(), "text/plain; version=0.0.4")
            elif url.path in ("/", "/index.html"):
                self._send(200, (static / "index.html").read_bytes(), "text/html; charset=utf-8")
            elif url.path == "/console.js":
                self._send(200, (static / "console.js").read_bytes(), "text/javascript")
            elif url.path == "/console.css":
                self._send(200, (static / "console.css").read_bytes(), "text/css")
            else:
                self._send(404, b"not found\n", "text/plain")

    return Handler


def check_ui_address(host: str, tls: bool, token: str | None) -> None:
    """A console off loopback needs TLS or a token: raise ValueError with the one line to print otherwise."""
    if host not in LOOPBACK and not tls and not token:
        raise ValueError(f"--ui-host {host} is not loopback: serve the console with --tls-cert/--tls-key or "
                         "--token-file, or keep it on 127.0.0.1")


def start_console(console: Console, host: str, port: int, security=None) -> ThreadingHTTPServer:
    """Serve the page on host:port in a daemon thread (TLS and the bearer token of the engine's `security`)."""
    token = getattr(security, "token", None)
    check_ui_address(host, bool(getattr(security, "tls", False)), token)
    import socket

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        daemon_threads = True

    httpd = Server((host, port), _handler(console, token))
    if security is not None and security.tls:
        import tempfile

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.NamedTemporaryFile() as cert, tempfile.NamedTemporaryFile() as key:
            cert.write(security.cert_pem), cert.flush()
            key.write(security.key_pem), key.flush()
            ctx.load_cert_chain(cert.name, key.name)
        httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    console.start()
    threading.Thread(target=httpd.serve_forever, name="console-http", daemon=True).start()
    return httpd
