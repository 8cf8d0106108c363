"""A futures pool leaves no thread of its own running once its block is left.

The thread that feeds a loky pool's call queue frees the queue's semaphores
as it ends. Were it still running at the interpreter's exit, the exit could
halt it between unlinking a semaphore and telling loky's resource tracker,
which then prints a warning of a leaked semaphore after the command's last
line (seen once in some forty commands stopped by SIGTERM). Here the feeder
is made to linger after the queue is closed: leaving the executor's block,
normally or by an interrupt, must wait for it.
"""

from __future__ import annotations

import threading
import time
from contextlib import nullcontext
from typing import Any

import pytest

loky_queues = pytest.importorskip("loky.backend.queues")
pytest.importorskip("coffea")

from rosenblatt.processors.runner import iter_results, make_executor

#: seconds the feeder lingers after its queue is closed
LINGER = 1.0


def feeders() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "QueueFeederThread" and t.is_alive()]


@pytest.fixture
def lingering_feeder(monkeypatch: pytest.MonkeyPatch) -> None:
    """loky's feeder threads last :data:`LINGER` seconds past their queue's end."""
    feed = loky_queues.Queue._feed

    def slow_feed(*args: Any) -> None:
        feed(*args)
        time.sleep(LINGER)

    monkeypatch.setattr(loky_queues.Queue, "_feed", staticmethod(slow_feed))


@pytest.mark.parametrize("ending", ["finished", "interrupted"])
def test_leaving_a_futures_pool_waits_for_its_feeder_thread(
    ending: str, lingering_feeder: None
) -> None:
    before = feeders()
    stops = pytest.raises(KeyboardInterrupt) if ending == "interrupted" else nullcontext()
    with stops, make_executor("futures", workers=1, progress=False) as executor:
        assert list(iter_results(executor, [-1, -2, 3], abs)) == [1, 2, 3]
        assert len(feeders()) > len(before)
        if ending == "interrupted":
            raise KeyboardInterrupt
    assert feeders() == before
