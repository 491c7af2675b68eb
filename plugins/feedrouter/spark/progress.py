"""Progress of a running batch job, from what the session offers while the driver waits.

* Spark Connect: the client's progress handler (``registerProgressHandler``): the server reports
  the stages of the running operation with their tasks;
* classic Spark: the status tracker of the session's context, polled by a daemon thread for the
  jobs of the batch's job group (classic only: Connect has no SparkContext).

Either way the callback receives ``(finished tasks, all tasks)``; the CLI turns it into a bar.
"all tasks" is the job's estimate (routing plus delivery tasks) and finished tasks are capped at
it: the DataFrame job has a few more (the listing's own stage), and with adaptive execution a job
lists the stages it reuses again as skipped stages, so the stages' own task counts overstate it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

#: ``(finished tasks, all tasks)``
ProgressCallback = Callable[[int, int], None]


def is_connect(spark: Any) -> bool:
    """True for a Spark Connect session (its class lives in ``pyspark.sql.connect``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


@contextmanager
def watching(
    spark: Any, group: str, total: int, callback: ProgressCallback | None, interval: float = 0.2
) -> Iterator[None]:
    """Report the progress of the jobs this block starts to ``callback`` until it ends.

    ``total`` is the tasks the job is expected to run; stages the session reports add theirs.
    """
    if callback is None:
        yield
    elif is_connect(spark):
        with _connect_progress(spark, total, callback):
            yield
    else:
        with _classic_progress(spark.sparkContext, group, total, callback, interval):
            yield


class StageCounter:
    """Finished and known tasks over the stages a Connect progress handler has seen."""

    def __init__(self, total: int, callback: ProgressCallback) -> None:
        self.total, self.callback = total, callback
        self.stages: dict[int, tuple[int, int]] = {}  # stage id: (finished, tasks)

    def __call__(
        self, stages: Iterable[Any] | None, inflight_tasks: int, operation_id: object, done: bool
    ) -> None:
        for stage in stages or ():
            self.stages[stage.stage_id] = (stage.num_completed_tasks, stage.num_tasks)
        self.report()

    def report(self) -> None:
        finished = sum(done for done, _ in self.stages.values())
        self.callback(min(finished, self.total), self.total)


@contextmanager
def _connect_progress(spark: Any, total: int, callback: ProgressCallback) -> Iterator[None]:
    counter = StageCounter(total, callback)
    spark.registerProgressHandler(counter)
    try:
        yield
    finally:
        spark.removeProgressHandler(counter)
    counter.report()


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


def _report(sc: Any, group: str, total: int, callback: ProgressCallback) -> None:
    callback(min(total, finished_tasks(sc, group)), total)


@contextmanager
def _classic_progress(
    sc: Any, group: str, total: int, callback: ProgressCallback, interval: float
) -> Iterator[None]:
    # the status tracker finds jobs by group, a thread-local property: set it in this thread
    sc.setJobGroup(group, f"feedrouter {group}")
    stop = threading.Event()
    thread = threading.Thread(target=_poll, args=(sc, group, total, callback, stop, interval), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        sc.setLocalProperty("spark.jobGroup.id", None)
    _report(sc, group, total, callback)


def _poll(
    sc: Any, group: str, total: int, callback: ProgressCallback, stop: threading.Event, interval: float
) -> None:
    while not stop.wait(interval):
        _report(sc, group, total, callback)
