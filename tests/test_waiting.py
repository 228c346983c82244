"""policy_engine.waiting: the shared poll loop returns the first truthy value, retries only the errors it is told
to, and its timeout says what was awaited, the last error and the last state seen."""

from __future__ import annotations

import itertools
import time

import pytest

from policy_engine.waiting import WaitTimeout, retry, wait_until


def test_returns_the_first_truthy_value():
    values = iter([0, None, [], "ready", "later"])
    assert wait_until(lambda: next(values), 5, "a value", interval_s=0.001) == "ready"


def test_an_oserror_counts_as_not_yet_and_other_errors_propagate():
    calls = itertools.count()

    def flaky():
        if next(calls) < 3:
            raise ConnectionRefusedError("not up yet")
        return 42

    assert wait_until(flaky, 5, "the daemon", interval_s=0.001) == 42

    def broken():
        raise ZeroDivisionError("a bug, not a slow daemon")

    with pytest.raises(ZeroDivisionError):
        wait_until(broken, 5, "anything", interval_s=0.001)


def test_the_timeout_names_what_was_awaited_the_last_error_and_the_detail():
    def down():
        raise ConnectionRefusedError("connection refused")

    t0 = time.monotonic()
    with pytest.raises(WaitTimeout) as e:
        wait_until(down, 0.2, "the RM's web server", interval_s=0.01, detail=lambda: {"EngineDecisions": 3})
    assert 0.2 <= time.monotonic() - t0 < 5
    message = str(e.value)
    assert "the RM's web server" in message
    assert "ConnectionRefusedError: connection refused" in message
    assert "{'EngineDecisions': 3}" in message
    assert isinstance(e.value, TimeoutError)


def test_retry_returns_falsy_answers_and_gives_up_at_the_deadline():
    attempts = itertools.count()

    def answers_zero_on_the_third_call():
        if next(attempts) < 2:
            raise OSError("slow")
        return 0

    assert retry(answers_zero_on_the_third_call, 5, "a counter", interval_s=0.001) == 0
    with pytest.raises(WaitTimeout, match="the RM's JMX"):
        retry(lambda: (_ for _ in ()).throw(OSError("down")), 0.05, "the RM's JMX", interval_s=0.01)


def test_a_detail_that_cannot_be_read_still_gives_the_timeout_its_message():
    def down():
        raise ConnectionRefusedError("connection refused")

    with pytest.raises(WaitTimeout) as e:
        wait_until(down, 0.05, "the Router's JMX", interval_s=0.01, detail=down)
    assert "the Router's JMX" in str(e.value) and "last seen: nothing (ConnectionRefusedError" in str(e.value)
