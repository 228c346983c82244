"""Online learning off the decision path: a bounded queue between the engine and a policy's learner.

The engine hands every decision's trace (what the policy returned with its decision) and every batch of Report
events to a LearningLoop and goes on; it never waits for the learner and never blocks on a full queue: an item
that does not fit is dropped and counted (`dropped`, and yarnrl_learner_dropped_total when the engine has
metrics). The learner consumes the queue in its own thread, so its updates and its saves (file I/O, fsync) run
off the gRPC event loop. After each Report batch it publishes what it learned to the policy's model; a caller that
waits for its Report (`events(..., done=...)`) gets decisions from the updated model afterwards, which is how the
emulator's remote mode and the in-process driver see the same decisions.

`threaded=False` runs the learner inline in the caller's thread, in the same order: the emulator's in-process
driver and offline training use it (nothing to drop, nothing to wait for, bit-identical runs).

A learner implements: on_decision(trace), on_events(list[Event]), publish(), maybe_save(), close(), and counts
its own failures in `errors` (a failure is logged and counted, never raised into a decision or a Report).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Any, Callable, Protocol

from policy_engine.types import Event

log = logging.getLogger(__name__)

DEFAULT_CAPACITY = 10_000


class Learner(Protocol):
    errors: int

    def on_decision(self, trace: Any) -> None: ...

    def on_events(self, events: list[Event]) -> None: ...

    def publish(self) -> None: ...

    def maybe_save(self) -> None: ...

    def close(self) -> None: ...


class LearningLoop:
    """`threaded`: the learner runs in its own thread. Decisions are appended to a deque (no lock, no wake-up:
    the cheapest thing a decision can do) and the thread takes them in batches every `poll_s`; a Report batch
    wakes it at once, since its caller may be waiting for it. Decisions only matter to the learner once their
    Report comes, so `poll_s` is long (0.25 s): a thread that woke every few milliseconds took the GIL from the
    gRPC loop as often, and on an oversubscribed machine (the learner thread descheduled while holding it) that
    stalled Schedule calls past the plugin's deadline."""

    def __init__(self, learner: Learner, capacity: int = DEFAULT_CAPACITY, threaded: bool = True,
                 on_drop: Callable[[str], None] | None = None, poll_s: float = 0.25):
        if capacity < 1:
            raise ValueError(f"learning queue capacity must be >= 1, not {capacity}")
        self.learner = learner
        self.threaded = threaded
        self.capacity = capacity
        self.poll_s = poll_s
        self.dropped = {"decision": 0, "report": 0}
        self.processed = 0
        self._on_drop = on_drop
        self._queue: deque = deque()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._stopping = False
        if threaded:
            self._thread = threading.Thread(target=self._run, name=f"learner-{type(learner).__name__}", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------ producer side (the engine; never blocks)

    def decision(self, trace: Any) -> bool:
        """Queue one decision's trace; False when it was dropped (queue full, or closed)."""
        if not self.threaded:
            self._apply(self.learner.on_decision, trace)
            return True
        return self._put(("decision", trace, None))

    def events(self, events: list[Event], done: Callable[[], None] | None = None) -> bool:
        """Queue one Report batch; `done()` is called (from the learner's thread) once the learner has taken it in
        and published the result. False, and no `done()`, when it was dropped."""
        if not self.threaded:
            self._apply(self.learner.on_events, events)
            self._apply(self.learner.publish)
            self._apply(self.learner.maybe_save)
            if done is not None:
                done()
            return True
        if self._put(("report", events, done)):
            self._wake.set()
            return True
        return False

    def _put(self, item) -> bool:
        # deque.append and len are atomic under the GIL; the bound may be overshot by a racing producer, never
        # by more than the number of producer threads (the server has one).
        if self._closed or self._stopping or len(self._queue) >= self.capacity:
            self.dropped[item[0]] += 1
            if self._on_drop is not None:
                self._on_drop(item[0])
            if sum(self.dropped.values()) in (1, 1000, 100_000):  # log once, then rarely
                log.warning("learning queue full (%d items): %s dropped so far", self.capacity, self.dropped)
            return False
        self._queue.append(item)
        return True

    def pending(self) -> int:
        return len(self._queue)

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until everything queued so far has been learned (tests, shutdown). True when it has."""
        if not self.threaded:
            return True
        flushed = threading.Event()
        self._queue.append(("flush", None, flushed.set))  # past the bound on purpose: a flush is never dropped
        self._wake.set()
        return flushed.wait(timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Learn what is queued, stop the thread and let the learner persist (its final save)."""
        if self._closed:
            return
        if self._thread is not None:
            self._stopping = True
            self._wake.set()
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.error("learner did not finish within %.0f s; its last updates are not saved", timeout)
        self._closed = True
        self._apply(self.learner.close)

    # ------------------------------------------------------------ consumer side (the learner's thread)

    def _apply(self, fn, *args) -> None:
        try:
            fn(*args)
        except Exception:  # learning must never fail a decision or a Report, nor stop the loop
            self.learner.errors += 1
            log.exception("learner %s failed in %s", type(self.learner).__name__, getattr(fn, "__name__", fn))

    def _run(self) -> None:
        learner, q, wake = self.learner, self._queue, self._wake
        while True:
            wake.wait(self.poll_s)
            wake.clear()
            unsaved = False
            while q:
                kind, payload, done = q.popleft()
                if kind == "decision":
                    self._apply(learner.on_decision, payload)
                    unsaved = True
                elif kind == "report":
                    self._apply(learner.on_events, payload)
                    self._apply(learner.publish)
                    # before done(): a caller whose Report has returned finds no save of it still in progress
                    self._apply(learner.maybe_save)
                    unsaved = False
                self.processed += 1
                if done is not None:
                    try:
                        done()
                    except Exception:
                        log.exception("learning: completion callback failed")
            if unsaved:
                self._apply(learner.maybe_save)
            if self._stopping and not q:
                self._apply(learner.publish)
                return
