"""The worker processes of the executors share the cores: one numba thread each.

Two processes each running numba's parallel kernels on every core stall on a
busy machine; a worker's compiled kernels therefore run one thread, unless
the user's environment says otherwise. Workers hold the transforms and models
for a whole run, so loky does not take their growth for a leak and restart them.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("numba")
pytest.importorskip("loky")

from rosenblatt.processors.runner import (
    WORKER_MEMORY_GROWTH,
    make_executor,
    worker_environment,
)


def _worker_settings() -> tuple[int, str | None]:
    import numba

    return numba.get_num_threads(), os.environ.get("LOKY_MAX_MEMORY_LEAK_SIZE")


def _settings_of_a_futures_worker() -> tuple[int, str | None]:
    with make_executor("futures", workers=1, progress=False) as executor:
        result: tuple[int, str | None] = executor.pool.submit(_worker_settings).result()
    return result


def test_a_futures_worker_runs_one_numba_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    monkeypatch.delenv("LOKY_MAX_MEMORY_LEAK_SIZE", raising=False)
    threads, leak = _settings_of_a_futures_worker()
    assert threads == 1
    assert leak == str(WORKER_MEMORY_GROWTH)


def test_the_users_settings_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMBA_NUM_THREADS", "2")
    monkeypatch.setenv("LOKY_MAX_MEMORY_LEAK_SIZE", "1e9")
    assert worker_environment() == {"NUMBA_NUM_THREADS": "2", "LOKY_MAX_MEMORY_LEAK_SIZE": "1e9"}


def _task_threads() -> int:
    import numba

    from rosenblatt._jit import one_thread_in_a_dask_worker

    one_thread_in_a_dask_worker()
    return int(numba.get_num_threads())


def test_a_dask_workers_task_runs_one_numba_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed")
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    with make_executor("dask", workers=1, progress=False) as executor:
        assert executor.client.submit(_task_threads, pure=False).result() == 1
    # outside a dask worker (this process), nothing is changed
    import numba

    before = numba.get_num_threads()
    assert _task_threads() == before
