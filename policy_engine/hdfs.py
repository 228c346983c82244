"""HDFS block locations for the engine: where the replicas (on disk and in the centralized cache) of a job's input are.

The plugin forwards a job's input paths (application tag `yarnrl.input=PATH`) without block information; a
`BlockLocator` attached to the engine (`policy-engine serve --webhdfs http://NAMENODE:PORT`) reads them from the
NameNode with WebHDFS `GETFILEBLOCKLOCATIONS` and fills `JobMetadata.input_blocks` of every ask that names input paths
but carries no blocks, before the policy sees the observation.

Lookups never run on the decision path: a path seen for the first time is looked up in a background thread and its
blocks are attached from the next heartbeat on, so a slow NameNode cannot make the engine miss the plugin's deadline.
Results are cached per path; once older than the time-to-live they are refreshed in the background while the old
answer keeps being served (cache directives and replicas move slowly: a stale answer beats none). An answer is
dropped when no refresh has succeeded for `stale_s` (default 10 x TTL). Failed lookups are retried after a shorter
back-off.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

from policy_engine.extras import require

require("hdfs", extra="webhdfs", feature="--webhdfs (HDFS block locations)")

from hdfs import InsecureClient  # noqa: E402
from hdfs.client import _Request  # noqa: E402

from policy_engine.types import BlockInfo, ScheduleObservation  # noqa: E402

log = logging.getLogger(__name__)

MAX_FILES_PER_PATH = 1000


class WebHdfsClient(InsecureClient):
    """HdfsCLI's client plus the one WebHDFS operation it lacks (Hadoop 3.2+'s GETFILEBLOCKLOCATIONS)."""

    # HdfsCLI's metaclass turns `_get_file_block_locations` into the GETFILEBLOCKLOCATIONS operation
    _get_file_block_locations = _Request("GET")

    def block_locations(self, hdfs_path: str) -> list[BlockInfo]:
        """Blocks of one file, in offset order, with disk and cached replica hosts and the replicas' racks."""
        body = self._get_file_block_locations(hdfs_path).json()
        try:
            entries = body["BlockLocations"]["BlockLocation"]
        except (KeyError, TypeError):
            raise ValueError(f"unexpected GETFILEBLOCKLOCATIONS answer for {hdfs_path}: {str(body)[:200]}") from None
        blocks = []
        for e in sorted(entries, key=lambda e: e.get("offset", 0)):
            hosts = tuple(e.get("hosts") or ())
            # topologyPaths are "/rack/ip:port", one per replica in the order of `hosts`
            racks = tuple(p.rsplit("/", 1)[0] or "/" for p in e.get("topologyPaths") or ())
            blocks.append(BlockInfo(
                block_id=f"{hdfs_path}@{e.get('offset', 0)}",
                length=int(e.get("length", 0)),
                hosts=hosts,
                cached_hosts=tuple(e.get("cachedHosts") or ()),
                racks=racks if len(racks) == len(hosts) else (),
            ))
        return blocks

    def path_block_locations(self, hdfs_path: str) -> list[BlockInfo]:
        """Blocks of a file, or of the files directly inside a directory (at most MAX_FILES_PER_PATH of them)."""
        status = self.status(hdfs_path)
        if status["type"] != "DIRECTORY":
            return self.block_locations(hdfs_path)
        blocks = []
        files = [name for name, st in self.list(hdfs_path, status=True) if st["type"] == "FILE"]
        for name in sorted(files)[:MAX_FILES_PER_PATH]:
            blocks.extend(self.block_locations(f"{hdfs_path.rstrip('/')}/{name}"))
        return blocks


def hdfs_path_of(path: str) -> str:
    """`hdfs://nn:8020/a/b` -> `/a/b`; plain paths unchanged."""
    parsed = urlparse(path)
    return parsed.path if parsed.scheme else path


class BlockLocator:
    """Per-path cache of WebHDFS block locations, filled in the background; `annotate` is an engine annotator."""

    def __init__(self, url: str, ttl_s: float = 60.0, retry_s: float = 5.0, max_paths: int = 10_000,
                 user: str | None = None, timeout_s: float = 5.0, registry=None, client: WebHdfsClient | None = None,
                 stale_s: float | None = None, clock=time.monotonic):
        if ttl_s <= 0 or retry_s <= 0:
            raise ValueError("ttl_s and retry_s must be positive")
        self.url = url
        self.client = client or WebHdfsClient(url, user=user, timeout=timeout_s)
        self.ttl_s = ttl_s
        self.retry_s = retry_s
        self.stale_s = 10 * ttl_s if stale_s is None else stale_s
        if self.stale_s < ttl_s:
            raise ValueError("stale_s must be at least ttl_s")
        self.max_paths = max_paths
        self._clock = clock
        # path -> (blocks, monotonic time of the lookup), least recently used first
        self._cache: OrderedDict[str, tuple[tuple[BlockInfo, ...], float]] = OrderedDict()
        self._failed_until: dict[str, float] = {}
        self._in_flight: set[str] = set()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="webhdfs")
        self._lookups = None
        if registry is not None:
            from prometheus_client import Counter

            self._lookups = Counter("yarnrl_webhdfs_lookups", "WebHDFS block-location lookups", ["outcome"],
                                    registry=registry)

    def lookup(self, path: str) -> tuple[BlockInfo, ...]:
        """Look one path up now (blocking) and cache the answer."""
        hdfs_path = hdfs_path_of(path)
        try:
            blocks = tuple(self.client.path_block_locations(hdfs_path))
        except Exception as e:  # HdfsError, connection errors, bad JSON: the path stays unannotated for a while
            with self._lock:
                self._failed_until[path] = self._clock() + self.retry_s
            if self._lookups is not None:
                self._lookups.labels("error").inc()
            log.warning("WebHDFS block locations of %s from %s failed: %s", hdfs_path, self.url, e)
            raise
        with self._lock:
            self._cache[path] = (blocks, self._clock())
            self._cache.move_to_end(path)
            while len(self._cache) > self.max_paths:
                self._cache.popitem(last=False)
            self._failed_until.pop(path, None)
        if self._lookups is not None:
            self._lookups.labels("ok").inc()
        return blocks

    def _lookup_in_background(self, path: str) -> None:
        try:
            self.lookup(path)
        except Exception:
            pass  # counted and logged in lookup()
        finally:
            with self._lock:
                self._in_flight.discard(path)

    def cached(self, path: str) -> tuple[BlockInfo, ...] | None:
        """The cached blocks of a path, or None when they are not known yet. Starts a background lookup when the
        path is unknown or its answer is older than the TTL (the old answer is returned meanwhile)."""
        now = self._clock()
        with self._lock:
            entry = self._cache.get(path)
            blocks = None
            if entry is not None:
                age = now - entry[1]
                if age > self.stale_s:
                    del self._cache[path]
                else:
                    self._cache.move_to_end(path)
                    blocks = entry[0]
                    if age <= self.ttl_s:
                        return blocks
            if path in self._in_flight or self._failed_until.get(path, 0.0) > now:
                return blocks
            self._in_flight.add(path)
        self._pool.submit(self._lookup_in_background, path)
        return blocks

    def blocks_of(self, paths) -> tuple[BlockInfo, ...] | None:
        """The blocks of all `paths` from the cache (lookups of missing ones start in the background), None
        unless every path is known: never blocks (policy_engine.labels builds late ledgers with it)."""
        blocks: list[BlockInfo] = []
        for path in paths:
            found = self.cached(path)
            if not found:
                return None
            blocks.extend(found)
        return tuple(blocks)

    def annotate(self, obs: ScheduleObservation) -> None:
        """Attach input blocks to every ask whose job names input paths but has no blocks."""
        for ask in obs.asks:
            job = ask.job
            if job is None or job.input_blocks or not job.input_paths:
                continue
            blocks: list[BlockInfo] = []
            for path in job.input_paths:
                found = self.cached(path)
                if found:
                    blocks.extend(found)
            if blocks:
                job.input_blocks = tuple(blocks)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
