"""Where a learner's episodes are played: in its own process, in a pool of local processes, or on a Ray cluster.

A learner hands the pool module-level functions and their arguments; whichever pool runs them, each call is a
pure function of its arguments (the network's weights, the episode's index and seeds), so the same seed trains the
same model with 1 or N workers, locally or on Ray. Every process that plays limits BLAS to one thread, so a
matrix product sums in the same order wherever it runs.

`setup(*args)` runs once per worker process before its first call (the learner's own process for the inline pool):
it builds what every call reuses (the scenario, a simulator) into module state, so a call carries only the
weights and the episode.

    pool = make_pool(workers=2, ray_address=None, setup=rl_fc.worker_setup, setup_args=(scenario, cfg))
    futures = [pool.submit(rl_fc.play_episode, tensors, ep) for ep in episodes]
    results = [f.result() for f in futures]    # in submission order
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

from threadpoolctl import threadpool_limits


@dataclass(frozen=True)
class RolloutSpec:
    """How `emulator train` was asked to play episodes: `--workers N` and `--ray ADDRESS`."""

    workers: int = 1
    ray_address: str | None = None

    def describe(self) -> dict[str, Any]:
        return {"workers": self.workers, "ray": self.ray_address}


class _Deferred:
    """A call run when its result is first asked for, shaped like a Future."""

    def __init__(self, fn: Callable, args: tuple):
        self._fn, self._args, self._value, self._ran = fn, args, None, False

    def result(self) -> Any:
        # run when asked for: a round submitted ahead is played after the learner's update, on the weights it was
        # submitted with (the same answer as a worker's, on one core)
        if not self._ran:
            self._value = self._fn(*self._args)
            self._ran, self._fn, self._args = True, None, None
        return self._value


class InlinePool:
    """Calls run in the learner's own process (`--workers 1`, the default)."""

    kind = "inline"
    workers = 1

    def __init__(self, setup: Callable, setup_args: tuple):
        _single_threaded_blas()
        setup(*setup_args)

    def submit(self, fn: Callable, *args: Any) -> _Deferred:
        return _Deferred(fn, args)

    def close(self) -> None:
        pass


def _single_threaded_blas() -> None:
    # process-wide, as algorithms.rl_fc.policy does for its numpy forward passes (torch's threads are separate)
    threadpool_limits(limits=1, user_api="blas")


def _process_init(setup: Callable, setup_args: tuple) -> None:
    _single_threaded_blas()
    setup(*setup_args)


class ProcessPool:
    """`--workers N`: N forked local processes (fork: the scenario and the imports come with the process, no
    re-import per worker). The workers play with numpy only; torch stays in the learner."""

    kind = "processes"

    def __init__(self, workers: int, setup: Callable, setup_args: tuple):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers
        self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                         initializer=_process_init, initargs=(setup, setup_args))

    def submit(self, fn: Callable, *args: Any):
        return self._pool.submit(fn, *args)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


# Ray: one task per call. A worker process runs `setup` the first time it meets a pool's token, so Ray's scheduler
# balances the calls over the cluster's CPUs and a reused worker keeps its scenario.
_ray_token: str | None = None


def _ray_call(token: str, setup: Callable, setup_args: tuple, fn: Callable, *args: Any) -> Any:
    global _ray_token
    if _ray_token != token:
        _single_threaded_blas()
        setup(*setup_args)
        _ray_token = token
    return fn(*args)


class _RayFuture:
    def __init__(self, ref):
        self._ref = ref

    def result(self) -> Any:
        import ray

        return ray.get(self._ref)


class RayPool:
    """`--ray ADDRESS`: calls are Ray tasks (one CPU each) on the cluster at ADDRESS; 'local' starts a Ray instance
    on this machine for the run with `--workers` CPUs. On a remote cluster the cluster's CPUs bound how many run at
    once, and yarn-rl must be importable on its nodes (installed, or a runtime_env)."""

    kind = "ray"

    def __init__(self, address: str, workers: int, setup: Callable, setup_args: tuple):
        from policy_engine.extras import require

        require("ray", extra="ray", feature="emulator train --ray")
        import ray

        self._started_here = not ray.is_initialized()
        if self._started_here:
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "configure_logging": False}
            if address == "local":
                ray.init(num_cpus=max(1, workers), **kwargs)
            else:
                ray.init(address=address, **kwargs)
        self.workers = workers
        self.address = address
        self._remote = ray.remote(num_cpus=1, max_retries=3)(_ray_call)
        self._token = f"{os.getpid()}-{id(self)}"
        self._setup = setup
        self._setup_args_ref = ray.put(setup_args)
        self._last: tuple[Any, Any] | None = None   # (weights dict, its object ref): put once per round

    def _arg(self, a: Any) -> Any:
        import ray

        if not isinstance(a, dict):
            return a
        if self._last is None or self._last[0] is not a:
            self._last = (a, ray.put(a))
        return self._last[1]

    def submit(self, fn: Callable, *args: Any) -> _RayFuture:
        return _RayFuture(self._remote.remote(self._token, self._setup, self._setup_args_ref, fn,
                                              *(self._arg(a) for a in args)))

    def close(self) -> None:
        import ray

        self._last = None
        if self._started_here:
            ray.shutdown()


def make_pool(spec: RolloutSpec | None, setup: Callable, setup_args: tuple):
    spec = spec or RolloutSpec()
    if spec.workers < 1:
        raise ValueError(f"--workers must be at least 1, not {spec.workers}")
    if spec.ray_address is not None:
        return RayPool(spec.ray_address, spec.workers, setup, setup_args)
    if spec.workers == 1:
        return InlinePool(setup, setup_args)
    return ProcessPool(spec.workers, setup, setup_args)
