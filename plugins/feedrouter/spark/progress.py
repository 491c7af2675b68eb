"""Progress of a running batch job, read from Spark's status tracker while the driver waits.

A daemon thread polls the tracker for the job group's stages and reports finished tasks over all
tasks; the CLI turns the reports into a progress bar.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: ``(finished tasks, all tasks)``
ProgressCallback = Callable[[int, int], None]


def finished_tasks(sc: Any, group: str) -> int:
    """Tasks finished so far by the jobs of ``group`` (retried tasks count once)."""
    tracker = sc.statusTracker()
    done = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in job.stageIds if job else ():
            stage = tracker.getStageInfo(stage_id)
            done += stage.numCompletedTasks if stage else 0
    return done


@contextmanager
def watching(
    sc: Any, group: str, total: int, callback: ProgressCallback | None, interval: float = 0.2
) -> Iterator[None]:
    """Report the progress of ``group`` to ``callback`` until the block ends."""
    if callback is None:
        yield
        return
    stop = threading.Event()
    thread = threading.Thread(target=_poll, args=(sc, group, total, callback, stop, interval), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
    callback(min(total, finished_tasks(sc, group)), total)


def _poll(
    sc: Any, group: str, total: int, callback: ProgressCallback, stop: threading.Event, interval: float
) -> None:
    while not stop.wait(interval):
        callback(min(total, finished_tasks(sc, group)), total)
