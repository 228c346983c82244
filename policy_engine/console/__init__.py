"""`policy-engine serve --ui-port N`: a live console an operator leaves open.

One page (static/index.html + console.js + console.css, shipped as package data: no CDN, works offline) that polls
`/api/state`, a small JSON document built here from the engine's own Prometheus registry (read in-process with
`registry.collect()`, so the page shows exactly what /metrics shows) plus what the registry does not hold (the
model's checksum, uptime, the reload history).

Served by the standard library's ThreadingHTTPServer on its own daemon thread: nothing here runs on the engine's
gRPC event loop. A sampler thread takes one sample a second into ring buffers (decisions/s, latency p50/p99 from
the histogram's bucket deltas, the locality mix, engine and YARN in shadow mode), so the page's plots need no
history in Prometheus.

Plugin fallbacks and breaker state are read from the ResourceManager's JMX servlet (`--rm-address`): the plugin
already counts them there by reason (bean Hadoop:service=ResourceManager,name=RlScheduler*), and a fallback is
exactly the moment the engine is unreachable, so the engine cannot be the one told about it. An RM that cannot be
reached is shown as such; the rest of the page keeps working.
"""

from __future__ import annotations

import collections
import hmac
import json
import logging
import math
import ssl
import threading
import time
import urllib.error
import urllib.request
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from urllib.parse import parse_qs, urlsplit

from policy_engine import __version__
from policy_engine.metrics_scrape import histogram_quantile

log = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "::1", "localhost")
LOCALITIES = ("cache_local", "node_local", "rack_local", "off_switch")
STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/console.js": ("console.js", "text/javascript; charset=utf-8"),
          "/console.css": ("console.css", "text/css; charset=utf-8")}
RM_BEAN_QUERY = "Hadoop:service=ResourceManager,name=Rl*"
FALLBACK_PREFIX = "Fallbacks"


def check_ui_exposure(host: str, tls: bool, token: bool) -> str | None:
    """Why the console must not serve on `host`, or None. Off loopback it needs a token (who may look) and TLS (so
    the token, and the page, do not cross the network in clear text)."""
    if host in LOOPBACK:
        return None
    missing = [what for what, ok in (("--tls-cert/--tls-key", tls), ("--token-file", token)) if not ok]
    if missing:
        return (f"--ui-port on {host} (not loopback) needs {' and '.join(missing)}: the console shows the engine's "
                "model and traffic; serve it on 127.0.0.1 or give TLS and a token")
    return None


def _samples(registry) -> dict[str, list]:
    """name -> [(labels, value)] of every sample in the registry (counters' _total/_bucket names as exposed)."""
    out: dict[str, list] = collections.defaultdict(list)
    for family in registry.collect():
        for s in family.samples:
            out[s.name].append((s.labels, s.value))
    return out


def _sum(samples, name, **match) -> float:
    return sum(v for labels, v in samples.get(name, ()) if all(labels.get(k) == x for k, x in match.items()))


def _by(samples, name, key, **match) -> dict[str, float]:
    out: dict[str, float] = {}
    for labels, v in samples.get(name, ()):
        if all(labels.get(k) == x for k, x in match.items()):
            out[labels.get(key, "")] = out.get(labels.get(key, ""), 0.0) + v
    return out


def _buckets(samples) -> list[tuple[float, float]]:
    """Cumulative (le, count) of the decision latency histogram, Schedule and Route together."""
    acc: dict[float, float] = {}
    for labels, v in samples.get("yarnrl_decision_latency_seconds_bucket", ()):
        if labels.get("rpc") in ("schedule", "route"):
            le = float(labels["le"])
            acc[le] = acc.get(le, 0.0) + v
    return sorted(acc.items())


def quantile_from_buckets(buckets: list[tuple[float, float]], q: float) -> float | None:
    """The q-quantile of a cumulative histogram, interpolated linearly inside its bucket (as PromQL's
    histogram_quantile does); None without observations."""
    v = histogram_quantile(buckets, q)
    return None if math.isnan(v) else v


class RmReader:
    """The plugin's counters from the RM's JMX servlet (http(s)://RM:8088/jmx), read on the sampler thread."""

    def __init__(self, address: str, timeout_s: float = 2.0):
        self.base = address if address.startswith(("http://", "https://")) else "http://" + address
        self.timeout_s = timeout_s

    def read(self) -> dict:
        url = f"{self.base.rstrip('/')}/jmx?qry={RM_BEAN_QUERY}"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout_s) as r:
                beans = json.load(r).get("beans", [])
        except (OSError, ValueError, urllib.error.URLError) as e:
            return {"address": self.base, "ok": False, "error": f"cannot read {url}: {getattr(e, 'reason', e)}"}
        if not beans:
            return {"address": self.base, "ok": False,
                    "error": f"the RM at {self.base} has no RlScheduler bean: is the plugin its scheduler?"}
        fallbacks: dict[str, int] = {}
        schedulers = []
        for bean in beans:
            for k, v in bean.items():
                if k.startswith(FALLBACK_PREFIX) and k != FALLBACK_PREFIX and isinstance(v, (int, float)):
                    fallbacks[k[len(FALLBACK_PREFIX):]] = fallbacks.get(k[len(FALLBACK_PREFIX):], 0) + int(v)
            schedulers.append({"bean": bean.get("name", ""), "breaker": bean.get("BreakerState", ""),
                               "engine": bean.get("EngineAddress", ""), "last_error": bean.get("LastCallError", "")})
        return {"address": self.base, "ok": True, "fallbacks": fallbacks, "schedulers": schedulers}


class Console:
    """The console's state: the engine, its metrics, ring buffers of samples, and the reload history."""

    def __init__(self, engine, metrics, interval_s: float = 1.0, history: int = 600, rm_address: str | None = None,
                 security_desc: str = "plaintext"):
        self.engine = engine
        self.metrics = metrics
        self.interval_s = interval_s
        self.started = time.time()
        self.reloads: collections.deque = collections.deque(maxlen=50)
        self.rm = RmReader(rm_address) if rm_address else None
        self.rm_state: dict | None = None
        self.security_desc = security_desc
        self.series: dict[str, collections.deque] = collections.defaultdict(lambda: collections.deque(maxlen=history))
        self._prev: dict | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ what the engine tells us

    def record_reload(self, reason: str, result: str, old_version: str | None, new_version: str | None,
                      error: str = "") -> None:
        self.reloads.append({"time": time.time(), "reason": reason, "result": result,
                             "from": old_version or "-", "to": new_version or "-", "error": error})

    # ------------------------------------------------------------ sampling (its own thread)

    def start(self) -> None:
        self.sample()
        self._thread = threading.Thread(target=self._run, name="console-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sample()
            except Exception:  # the console must never take the engine down
                log.exception("console sampler failed")

    def _totals(self, s) -> dict:
        return {
            "decisions": _sum(s, "yarnrl_decisions_total"),
            "errors": _by(s, "yarnrl_request_errors_total", "code"),
            "engine": _by(s, "yarnrl_assigned_containers_total", "locality"),
            "shadow_engine": _by(s, "yarnrl_shadow_containers_total", "locality", placed_by="engine"),
            "shadow_yarn": _by(s, "yarnrl_shadow_containers_total", "locality", placed_by="yarn"),
            "shadow_decisions": _sum(s, "yarnrl_shadow_decisions_total"),
            "buckets": _buckets(s),
        }

    def sample(self) -> None:
        s = _samples(self.metrics.registry)
        now = time.time()
        cur = self._totals(s)
        cur["time"] = now
        if self.rm is not None:
            self.rm_state = self.rm.read()
        with self._lock:
            prev, self._prev = self._prev, cur
            if prev is None:
                return
            dt = max(now - prev["time"], 1e-6)
            ser = self.series
            ser["t"].append(now)
            ser["decisions_per_s"].append((cur["decisions"] - prev["decisions"]) / dt)
            delta = [(le, c - dict(prev["buckets"]).get(le, 0.0)) for le, c in cur["buckets"]]
            for name, q in (("p50_ms", 0.5), ("p99_ms", 0.99)):
                v = quantile_from_buckets(delta, q)
                ser[name].append(None if v is None else round(v * 1000, 4))
            for mix in ("engine", "shadow_engine", "shadow_yarn"):
                for loc in LOCALITIES:
                    ser[f"{mix}:{loc}"].append(cur[mix].get(loc, 0.0) - prev[mix].get(loc, 0.0))

    # ------------------------------------------------------------ the JSON document

    def state(self) -> dict:
        s = _samples(self.metrics.registry)
        totals = self._totals(s)
        policy = self.engine.policy
        learning = self.engine.learning
        learner = None
        if learning is not None:
            learner = {"queue": learning.pending(), "updates": learning.processed,
                       "dropped": _by(s, "yarnrl_learner_dropped_total", "kind"),
                       "errors": getattr(learning.learner, "errors", 0)}
        with self._lock:
            series = {k: list(v) for k, v in self.series.items()}
        mixes = {}
        for mix in ("engine", "shadow_engine", "shadow_yarn"):
            mixes[mix] = {"totals": {loc: totals[mix].get(loc, 0.0) for loc in LOCALITIES},
                          "series": {loc: series.pop(f"{mix}:{loc}", []) for loc in LOCALITIES}}
        return {
            "engine": {"policy": policy.name, "model_version": policy.model_version or "",
                       "model_checksum": policy.model_checksum or "", "engine_version": __version__,
                       "started": self.started, "uptime_s": round(time.time() - self.started, 1),
                       "security": self.security_desc},
            "reloads": list(self.reloads),
            "reload_counts": _by(s, "yarnrl_model_reloads_total", "result"),
            "decisions_total": totals["decisions"],
            "decisions_by_rpc": _by(s, "yarnrl_decisions_total", "rpc"),
            "errors": totals["errors"],
            "latency_ms": {"p50": _ms(quantile_from_buckets(totals["buckets"], 0.5)),
                           "p99": _ms(quantile_from_buckets(totals["buckets"], 0.99))},
            "shadow": {"decisions": totals["shadow_decisions"],
                       "placements_seen": _sum(s, "yarnrl_shadow_placements_total")},
            "locality": mixes,
            "learner": learner,
            "rm": self.rm_state if self.rm is not None else {"ok": None, "error": "no --rm-address given"},
            "series": series,
            "interval_s": self.interval_s,
            "now": time.time(),
        }


def _ms(v: float | None) -> float | None:
    return None if v is None else round(v * 1000, 4)


def _handler(console: Console, token: str | None):
    class Handler(BaseHTTPRequestHandler):
        server_version = f"yarnrl-console/{__version__}"

        def log_message(self, fmt, *args):  # access log at DEBUG, not on stderr
            log.debug("console %s " + fmt, self.client_address[0], *args)

        def _authorized(self, query: dict) -> tuple[bool, bool]:
            """(allowed, set_cookie). A token comes as `Authorization: Bearer`, a cookie, or ?token= once."""
            if token is None:
                return True, False
            given = []
            auth = self.headers.get("Authorization", "")
            if auth.startswith("Bearer "):
                given.append(auth[7:].strip())
            for part in self.headers.get("Cookie", "").split(";"):
                k, _, v = part.strip().partition("=")
                if k == "yarnrl_token":
                    given.append(v)
            from_query = query.get("token", [])
            given += from_query
            ok = any(hmac.compare_digest(g.encode(), token.encode()) for g in given)
            return ok, ok and bool(from_query)

        def _send(self, status: int, body: bytes, ctype: str, cookie: bool = False) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Security-Policy", "default-src 'self'")
            self.send_header("X-Content-Type-Options", "nosniff")
            if cookie:
                self.send_header("Set-Cookie", f"yarnrl_token={token}; HttpOnly; SameSite=Strict; Path=/"
                                 + ("; Secure" if isinstance(self.connection, ssl.SSLSocket) else ""))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802 (http.server's name)
            url = urlsplit(self.path)
            ok, cookie = self._authorized(parse_qs(url.query))
            if not ok:
                self._send(HTTPStatus.UNAUTHORIZED, b"console: a token is needed (?token=... or "
                           b"Authorization: Bearer)\n", "text/plain; charset=utf-8")
                return
            if url.path == "/api/state":
                try:
                    body = json.dumps(console.state(), allow_nan=False).encode()
                except Exception as e:  # never a dead page: the error is the answer
                    log.exception("console state failed")
                    self._send(500, json.dumps({"error": str(e)}).encode(), "application/json")
                    return
                self._send(200, body, "application/json", cookie)
                return
            entry = STATIC.get(url.path)
            if entry is None:
                self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")
                return
            body = resources.files(__package__).joinpath("static", entry[0]).read_bytes()
            self._send(200, body, entry[1], cookie)

    return Handler


class ConsoleServer:
    """The HTTP server of the console on its own thread; `close()` stops it and the sampler."""

    def __init__(self, console: Console, host: str, port: int, token: str | None = None,
                 certfile: str | None = None, keyfile: str | None = None):
        cls = ThreadingHTTPServer
        if ":" in host:
            import socket

            class V6(ThreadingHTTPServer):
                address_family = socket.AF_INET6
            cls = V6
        self.httpd = cls((host, port), _handler(console, token))
        self.httpd.daemon_threads = True
        self.tls = certfile is not None
        if certfile is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(certfile, keyfile)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.console = console
        self.host = host
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.5},
                                        name="console-http", daemon=True)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/"

    def start(self) -> None:
        self.console.start()
        self._thread.start()

    def close(self) -> None:
        self.console.stop()
        self.httpd.shutdown()
        self.httpd.server_close()
