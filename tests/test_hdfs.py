"""policy_engine.hdfs: WebHDFS block locations through HdfsCLI, per-path TTL cache, the engine annotator.

The NameNode here is a small real HTTP server on loopback answering the three WebHDFS operations the locator uses
with the JSON shapes Hadoop 3 returns; the locator against a real NameNode (MiniDFSCluster with a cached file) is
exercised by the plugin's integration test (yarn_plugin RlSchedulerIT).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from prometheus_client import CollectorRegistry

from policy_engine.engine import Engine
from policy_engine.hdfs import BlockLocator, WebHdfsClient, hdfs_path_of
from policy_engine.policies.fifo import FifoPolicy
from policy_engine.types import Ask, BlockInfo, JobMetadata, LocalityRequest, Node, Resource, ScheduleObservation
from policy_engine.waiting import WaitTimeout, wait_until

FILES = {
    "/data/in/part-0": [
        {"offset": 1048576, "length": 500, "hosts": ["h3", "h2"], "cachedHosts": [], "names": [],
         "topologyPaths": ["/rack2/127.0.0.1:9003", "/rack1/127.0.0.1:9002"], "storageTypes": ["DISK", "DISK"]},
        {"offset": 0, "length": 1048576, "hosts": ["h1", "h4"], "cachedHosts": ["h1"], "names": [],
         "topologyPaths": ["/rack1/127.0.0.1:9001", "/rack2/127.0.0.1:9004"], "storageTypes": ["DISK", "DISK"]},
    ],
    "/data/in/part-1": [
        {"offset": 0, "length": 10, "hosts": ["h2"], "cachedHosts": [], "names": [],
         "topologyPaths": ["/rack1/127.0.0.1:9002"], "storageTypes": ["DISK"]},
    ],
}


class NameNode(BaseHTTPRequestHandler):
    requests: list[tuple[str, str]] = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urlparse(self.path)
        path = url.path.removeprefix("/webhdfs/v1")
        op = parse_qs(url.query)["op"][0]
        NameNode.requests.append((op, path))
        if op == "GETFILESTATUS" and path in FILES:
            body = {"FileStatus": {"type": "FILE", "length": 1, "pathSuffix": ""}}
        elif op == "GETFILESTATUS" and path == "/data/in":
            body = {"FileStatus": {"type": "DIRECTORY", "length": 0, "pathSuffix": ""}}
        elif op == "LISTSTATUS" and path == "/data/in":
            body = {"FileStatuses": {"FileStatus": [
                {"pathSuffix": "part-1", "type": "FILE"}, {"pathSuffix": "part-0", "type": "FILE"},
                {"pathSuffix": "_logs", "type": "DIRECTORY"}]}}
        elif op == "GETFILEBLOCKLOCATIONS" and path in FILES:
            body = {"BlockLocations": {"BlockLocation": FILES[path]}}
        else:
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps({"RemoteException": {
                "exception": "FileNotFoundException", "javaClassName": "java.io.FileNotFoundException",
                "message": f"File does not exist: {path}"}}).encode())
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def namenode():
    NameNode.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), NameNode)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def wait_for(predicate, timeout=5.0):
    """True once predicate holds (False after timeout: the callers assert it)."""
    try:
        return bool(wait_until(predicate, timeout, "the lookup", interval_s=0.01))
    except WaitTimeout:
        return False


def ask(ask_id="a/1/0", job=None):
    return Ask(ask_id=ask_id, application_id="app_1", resource=Resource(1024, 1), num_containers=2,
               locality=(LocalityRequest("h1", 1), LocalityRequest("/rack1", 2)), job=job)


def observation(*asks):
    node = Node("h1:45454", "h1", "/rack1", Resource(8192, 8), Resource(8192, 8))
    return ScheduleObservation(node=node, asks=list(asks), request_id="r1")


def test_block_locations_of_a_file_in_offset_order_with_racks(namenode):
    blocks = WebHdfsClient(namenode).block_locations("/data/in/part-0")
    assert blocks == [
        BlockInfo("/data/in/part-0@0", 1048576, ("h1", "h4"), ("h1",), ("/rack1", "/rack2")),
        BlockInfo("/data/in/part-0@1048576", 500, ("h3", "h2"), (), ("/rack2", "/rack1")),
    ]
    assert NameNode.requests == [("GETFILEBLOCKLOCATIONS", "/data/in/part-0")]


def test_a_directory_gives_the_blocks_of_its_files(namenode):
    blocks = WebHdfsClient(namenode).path_block_locations("/data/in")
    assert [b.block_id for b in blocks] == ["/data/in/part-0@0", "/data/in/part-0@1048576", "/data/in/part-1@0"]


def test_hdfs_uri_is_reduced_to_its_path():
    assert hdfs_path_of("hdfs://nn.example:8020/data/in") == "/data/in"
    assert hdfs_path_of("/data/in") == "/data/in"


def test_annotate_attaches_blocks_after_a_background_lookup_and_reuses_them(namenode):
    registry = CollectorRegistry()
    locator = BlockLocator(namenode, ttl_s=60, registry=registry)
    wanted = ask(job=JobMetadata(input_paths=("hdfs://nn:8020/data/in/part-0",)))
    annotated_by_caller = ask("b/1/0", JobMetadata(input_paths=("/data/in/part-1",),
                                                   input_blocks=(BlockInfo("given", 1, ("h9",)),)))
    no_job = ask("c/1/0")
    obs = observation(wanted, annotated_by_caller, no_job)
    locator.annotate(obs)  # first sight: lookup starts in the background, nothing attached yet
    assert wanted.job.input_blocks == ()
    assert wait_for(lambda: registry.get_sample_value("yarnrl_webhdfs_lookups_total", {"outcome": "ok"}) == 1)
    locator.annotate(obs)
    assert [b.cached_hosts for b in wanted.job.input_blocks] == [("h1",), ()]
    assert annotated_by_caller.job.input_blocks == (BlockInfo("given", 1, ("h9",)),)
    assert no_job.job is None
    # a new ask for the same path is served from the cache: no second request to the NameNode
    again = ask("d/1/0", JobMetadata(input_paths=("hdfs://nn:8020/data/in/part-0",)))
    locator.annotate(observation(again))
    assert len(again.job.input_blocks) == 2
    assert [op for op, _ in NameNode.requests] == ["GETFILESTATUS", "GETFILEBLOCKLOCATIONS"]
    locator.close()


def test_entries_older_than_the_ttl_are_refreshed_in_the_background_and_served_meanwhile(namenode):
    now = [100.0]
    locator = BlockLocator(namenode, ttl_s=10, stale_s=30, clock=lambda: now[0])
    assert len(locator.lookup("/data/in/part-1")) == 1
    assert locator.cached("/data/in/part-1") is not None
    assert [op for op, _ in NameNode.requests].count("GETFILEBLOCKLOCATIONS") == 1
    now[0] += 11  # past the TTL: the old answer is still served while a refresh runs
    assert locator.cached("/data/in/part-1") is not None
    assert wait_for(lambda: [op for op, _ in NameNode.requests].count("GETFILEBLOCKLOCATIONS") == 2)
    assert wait_for(lambda: not locator._in_flight)
    assert locator._cache["/data/in/part-1"][1] == now[0]  # refreshed at the current time
    locator.close()


def test_an_answer_no_refresh_could_renew_is_dropped_after_stale_s(namenode):
    now = [100.0]
    locator = BlockLocator(namenode, ttl_s=10, stale_s=30, retry_s=1000, clock=lambda: now[0])
    locator.lookup("/data/in/part-1")
    locator.url = "unused"
    locator.client = WebHdfsClient("http://127.0.0.1:9", timeout=0.5)  # the NameNode goes away
    now[0] += 11
    assert locator.cached("/data/in/part-1") is not None  # stale, refresh fails in the background
    assert wait_for(lambda: not locator._in_flight)
    now[0] += 20
    assert locator.cached("/data/in/part-1") is None  # older than stale_s: dropped, not served
    locator.close()


def test_a_failed_lookup_is_counted_and_not_retried_before_the_back_off(namenode):
    registry = CollectorRegistry()
    locator = BlockLocator(namenode, retry_s=60, registry=registry)
    missing = ask(job=JobMetadata(input_paths=("/no/such/file",)))
    locator.annotate(observation(missing))
    assert wait_for(lambda: registry.get_sample_value("yarnrl_webhdfs_lookups_total", {"outcome": "error"}) == 1)
    assert wait_for(lambda: locator.cached("/no/such/file") is None and not locator._in_flight)
    for _ in range(3):
        locator.annotate(observation(missing))
    assert missing.job.input_blocks == ()
    assert len(NameNode.requests) == 1  # only the first GETFILESTATUS
    locator.close()


def test_unreachable_namenode_leaves_asks_unannotated():
    locator = BlockLocator("http://127.0.0.1:9", timeout_s=0.5)
    with pytest.raises(Exception):
        locator.lookup("/data/in/part-0")
    assert locator.cached("/data/in/part-0") is None
    locator.close()


def test_engine_runs_annotators_before_the_policy(namenode):
    locator = BlockLocator(namenode)
    locator.lookup("/data/in/part-0")
    seen = []

    class Capture(FifoPolicy):
        def schedule(self, obs):
            seen.append([b.cached_hosts for a in obs.asks for b in a.job.input_blocks])
            return super().schedule(obs)

    engine = Engine(Capture())
    engine.annotators.append(locator.annotate)
    decision = engine.schedule(observation(ask(job=JobMetadata(input_paths=("/data/in/part-0",)))))
    assert seen == [[("h1",), ()]]
    assert sum(a.count for a in decision.assignments) == 2
    locator.close()


def test_bad_ttl_is_refused():
    with pytest.raises(ValueError):
        BlockLocator("http://127.0.0.1:1", ttl_s=0)
    with pytest.raises(ValueError):
        BlockLocator("http://127.0.0.1:1", ttl_s=10, stale_s=5)


def test_engine_counts_asks_with_and_without_block_locations(namenode):
    from policy_engine.engine import EngineMetrics

    locator = BlockLocator(namenode)
    locator.lookup("/data/in/part-0")
    metrics = EngineMetrics()
    engine = Engine(FifoPolicy(), metrics)
    engine.annotators.append(locator.annotate)
    engine.schedule(observation(ask(job=JobMetadata(input_paths=("/data/in/part-0",))), ask("b/1/0")))
    assert (engine.asks_seen, engine.asks_with_blocks) == (2, 1)
    assert metrics.registry.get_sample_value("yarnrl_asks_total", {"blocks": "yes"}) == 1
    assert metrics.registry.get_sample_value("yarnrl_asks_total", {"blocks": "no"}) == 1
    locator.close()


def test_serve_refuses_a_bad_webhdfs_url():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "policy_engine.cli", "serve", "--policy", "fifo", "--port", "0",
                        "--webhdfs", "namenode:9870"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "--webhdfs takes http(s)://HOST:PORT" in r.stderr
