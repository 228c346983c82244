"""Live model reload for `policy-engine serve`: on SIGHUP, or when the --model file changes (`--watch`).

A reload reads the artifact off the event loop and checks it before anything changes: the checksum over its
weights and that it is a model of the policy being served (policy_engine.artifact.load_artifact), then builds the
policy from it with the same options. Only a policy that built is swapped in, on the event loop, so between two
calls: a call is answered entirely by the old model or entirely by the new one. A file that fails any check is
refused - logged, counted in yarnrl_model_reloads_total{result="refused"} - and the old model keeps serving; the
watcher does not retry the same bad content, it waits for the file to change again.

`--watch` polls the file's (mtime, size, inode) every interval and, when it moved, its sha256: an atomic writer
(temp file + rename, as policy_engine.artifact.save_artifact does) is picked up once; a non-atomic writer can be
caught half-way, which is refused like any corrupt file and then picked up when the write completes.

A policy with an online learner gets a fresh learner for the new model; the old one finishes what it had queued
and persists (its save_to) off the decision path. Learned-but-unsaved updates of the old model are not carried
into the new one: the new file is the new starting point.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from pathlib import Path
from typing import Any, Callable

from policy_engine.artifact import ArtifactError, load_artifact

log = logging.getLogger(__name__)

DEFAULT_WATCH_S = 2.0


def file_digest(path: str | Path) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _stat_key(path: str | Path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class ModelReloader:
    """Reloads `engine`'s policy from `model_path`; `build(path)` makes the policy (the registry's create with the
    serve command's options). `on_swap(old, new)` is called on the loop after a swap."""

    def __init__(self, engine, model_path: str | Path, build: Callable[[str], Any], metrics=None,
                 on_swap: Callable[[Any, Any], None] | None = None):
        self.engine = engine
        self.path = str(model_path)
        self.build = build
        self.metrics = metrics
        self.on_swap = on_swap
        # on_result(reason, result, old_version, new_version, error): every outcome (the console's reload history)
        self.on_result: Callable[..., None] | None = None
        self.reloaded = 0
        self.refused = 0
        self.last_error = ""
        self._lock = asyncio.Lock()
        self._digest = file_digest(self.path)   # what is being served (or was last refused)
        self._stat = _stat_key(self.path)

    def _count(self, result: str) -> None:
        if self.metrics is not None:
            self.metrics.reloads.labels(result).inc()

    def _note(self, reason: str, result: str, old=None, new=None, error: str = "") -> None:
        if self.on_result is not None:
            self.on_result(reason, result, getattr(old, "model_version", None), getattr(new, "model_version", None),
                           error)

    def _load(self):
        """In a worker thread: check and build the new policy, or raise ArtifactError / OSError / ValueError."""
        digest = file_digest(self.path)
        if digest is None:
            raise ArtifactError(f"model file {self.path}: cannot read it")
        _, meta = load_artifact(self.path, policy=self.engine.policy.name)  # checksum and policy match
        policy = self.build(self.path)
        if policy.model_checksum and meta.get("checksum") and policy.model_checksum != meta["checksum"]:
            raise ArtifactError(f"policy {policy.name!r} loaded model {policy.model_checksum[:12]} from elsewhere "
                                f"(its save_to), not {self.path} ({meta['checksum'][:12]}); serve it without "
                                "save_to to reload from --model")
        return policy, digest

    async def reload(self, reason: str) -> bool:
        """Check and swap in the model at the path now; True when a new model is serving."""
        async with self._lock:
            self._stat = _stat_key(self.path)
            try:
                policy, digest = await asyncio.to_thread(self._load)
            except (ArtifactError, OSError, ValueError, TypeError) as e:
                self.refused += 1
                self.last_error = str(e)
                self._digest = file_digest(self.path)  # do not retry this content until it changes
                self._count("refused")
                self._note(reason, "refused", self.engine.policy, None, str(e))
                log.error("model reload (%s) refused, the old model keeps serving: %s", reason, e)
                print(f"policy-engine: model reload refused ({reason}): {e}", flush=True)
                return False
            self._digest = digest
            old = self.engine.policy
            if policy.model_checksum and policy.model_checksum == old.model_checksum:
                self._count("unchanged")
                self._note(reason, "unchanged", old, policy)
                log.info("model reload (%s): %s is the model already serving", reason, self.path)
                return False
            old_learning = self.engine.swap_policy(policy)  # on the loop: between two calls
            self.reloaded += 1
            self._count("ok")
            self._note(reason, "ok", old, policy)
            if self.on_swap is not None:
                self.on_swap(old, policy)
            print(f"policy-engine: reloaded model ({reason}): {old.model_version or '-'} -> "
                  f"{policy.model_version or '-'}", flush=True)
            if old_learning is not None:  # its final publish and save, off the event loop
                await asyncio.to_thread(old_learning.close)
            return True

    def changed(self) -> bool:
        """Whether the file moved since the last look (cheap stat first, then the content's hash)."""
        key = _stat_key(self.path)
        if key is None or key == self._stat:
            return False
        self._stat = key
        digest = file_digest(self.path)
        return digest is not None and digest != self._digest

    async def watch(self, interval_s: float = DEFAULT_WATCH_S) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                if self.changed():
                    await self.reload("file changed")
            except Exception:  # the watcher must outlive any surprise; the old model keeps serving
                log.exception("model watcher failed; still watching")
