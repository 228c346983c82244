"""Waiting with a deadline: the one poll loop the tests, benchmarks and the container cluster share.

A daemon coming up, a counter reaching a value, a web page updating: each is polled until a condition holds or the
deadline passes, and the timeout says what was awaited and the last error seen, so a failed run reads as a sentence.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


class WaitTimeout(TimeoutError):
    """The condition did not hold before the deadline."""


def wait_until(cond: Callable[[], T], timeout_s: float, what: str, interval_s: float = 0.5,
               retry_on: tuple[type[BaseException], ...] = (OSError,),
               detail: Callable[[], object] | None = None) -> T:
    """Polls ``cond`` every ``interval_s`` until it returns a truthy value, and returns that value.

    A poll that raises one of ``retry_on`` (by default OSError: a daemon's HTTP server not up yet, or slow to answer
    on a loaded machine) counts as "not yet". After ``timeout_s`` it raises WaitTimeout naming ``what``, the last
    such error and, when given, ``detail()`` (e.g. the counters last read)."""
    until = time.monotonic() + timeout_s
    last_error = ""
    while True:
        try:
            value = cond()
        except retry_on as e:
            value, last_error = None, f"{type(e).__name__}: {e}"
        if value:
            return value
        if time.monotonic() >= until:
            break
        time.sleep(interval_s)
    message = f"timed out after {timeout_s:g} s waiting for {what}"
    if last_error:
        message += f" (last error: {last_error})"
    if detail is not None:
        try:
            message += f"; last seen: {detail()}"
        except retry_on as e:  # the thing awaited may still not answer: the timeout must still say what it was
            message += f"; last seen: nothing ({type(e).__name__}: {e})"
    raise WaitTimeout(message)


def retry(fn: Callable[[], T], timeout_s: float, what: str, interval_s: float = 0.5,
          retry_on: tuple[type[BaseException], ...] = (OSError,)) -> T:
    """``fn()``'s result once a call does not raise one of ``retry_on`` (bounded by ``timeout_s``); a falsy result
    counts as an answer too."""
    box: list[T] = []
    wait_until(lambda: box.append(fn()) or True, timeout_s, what, interval_s, retry_on)
    return box[-1]
