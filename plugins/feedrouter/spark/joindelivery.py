"""Writing the join stage's folders: each join subscription's delivery of an hour (one result per
pair, with both messages' provenance: part format 2) or the withdrawal of a folder it no longer
has, and its ledger row.

The same code writes them wherever the stage runs: on the driver (the Spark SQL and in-process
engines, whose pairs come back to it) and in the partitioned engine's tasks, each writing its own
part's folders (:func:`feedrouter.spark.joinparts.partitioned_deliveries`). Either way a process
writes many folders, each a few object-store writes that wait on the network: :func:`deliver_joins`
writes several at a time, drawing the deliveries (and holding their results) only as writers free
up. A subscription whose store refuses its folder gets a ``failed`` row (FR607, as in routing) and
the others go on; a transient store error is raised (the stage is re-run whole, and re-runs write
the same bytes).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from feedrouter.catalog import ledger
from feedrouter.delivery import Result, delivery_dir
from feedrouter.errors import StorageError, TransientStorageError
from feedrouter.join.plan import JoinPlan
from feedrouter.join.stage import JoinDelivery
from feedrouter.spark.publish import withdraw
from feedrouter.spark.spec import JobSpec
from feedrouter.spark.tasks import Undelivered, deliver_one
from feedrouter.spark.witnesses import WitnessHours

if TYPE_CHECKING:
    from feedrouter.catalog import Target

#: Join subscriptions' folders a process writes at once (:func:`deliver_joins`).
DELIVERY_THREADS = 8


@dataclass(frozen=True)
class Written:
    """What writing one join subscription's hour did: its ledger row, and its pairs (withheld ones
    included: the stage's report counts them)."""

    sid: str
    pairs: int
    row: ledger.DeliveryRow


def deliver_joins(
    spec: JobSpec,
    targets: Mapping[str, Target],
    plans: Mapping[str, JoinPlan],
    deliveries: Iterable[JoinDelivery],
    witnesses: WitnessHours,
    threads: int = DELIVERY_THREADS,
) -> list[Written]:
    """Write the folders of ``deliveries`` (``targets`` and ``plans`` by subscription id),
    ``threads`` at a time; what each did, in the deliveries' order.

    The deliveries are drawn as writers free up: at most ``2 * threads`` subscriptions' results are
    held at once. The first error raised stops the rest (those not started are cancelled). One
    thread (``threads`` <= 1) writes them in this thread, one after the other."""
    if threads <= 1:  # in this thread: a pool of one only adds hand-offs between two threads
        return [
            Written(
                found.sid,
                found.count,
                deliver_join(spec, targets[found.sid], plans[found.sid], found, witnesses),
            )
            for found in deliveries
        ]
    written: list[Written] = []
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="join-delivery") as pool:
        pending: deque[tuple[str, int, Future[ledger.DeliveryRow]]] = deque()

        def finish_oldest() -> None:
            sid, pairs, future = pending.popleft()
            written.append(Written(sid, pairs, future.result()))

        try:
            for found in deliveries:
                job = (spec, targets[found.sid], plans[found.sid], found, witnesses)
                pending.append((found.sid, found.count, pool.submit(deliver_join, *job)))
                if len(pending) >= 2 * threads:
                    finish_oldest()
            while pending:
                finish_oldest()
        except BaseException:
            for _, _, future in pending:
                future.cancel()
            raise
    return written


def deliver_join(
    spec: JobSpec, target: Target, plan: JoinPlan, found: JoinDelivery, witnesses: WitnessHours
) -> ledger.DeliveryRow:
    """Write one join subscription's folder of the hour (or take it back when it has nothing);
    its ledger row. Safe in a writer thread: the witness hours its provenance reads were read
    when its results were assembled."""
    names = (target.catalog_id, target.subscriber, target.subscription)
    if found.withheld is not None:
        # withheld whatever the store says: the cap is the reason its subscriber must read
        refused = _refused_withdrawal(spec, target)
        message = found.withheld if refused is None else f"{found.withheld}; {refused}"
        return ledger.DeliveryRow(*names, status="withheld", error_code="FR313", error_message=message[:2000])
    # pairs whose result alone passed the feed's max_result_bytes: left out, the row says so
    code, why = _left_out(found)
    if not found.pairs:
        refused = _refused_withdrawal(spec, target)
        if refused is None:
            return ledger.DeliveryRow(*names, error_code=code, error_message=why)
        return ledger.DeliveryRow(*names, status="failed", error_code="FR607", error_message=refused[:2000])
    results = (
        Result.of_pair(
            witnesses.provenance(plan.feeds[0], left), witnesses.provenance(plan.feeds[1], right), body
        )
        for (left, right), body in zip(found.pairs, found.each_result(), strict=True)
    )
    # as routing writes a folder: a refusing store costs this subscription alone (FR607)
    _, delivered = deliver_one(spec, target, found.sid, results, part_format=2)
    if isinstance(delivered, Undelivered):
        return delivered.ledger_row(target.catalog_id)
    manifest = delivered.manifest
    return ledger.DeliveryRow(
        *names,
        delivered.object_uris,
        manifest.results,
        manifest.bytes,
        manifest.digest,
        error_code=code,
        error_message=why,
    )


def _left_out(found: JoinDelivery) -> tuple[str | None, str | None]:
    """The ledger row's error code and message when some pairs' results were refused (FR310)."""
    if not found.refused or found.refusal is None:
        return None, None
    several = f"{found.refused} pairs left out, the first: " if found.refused > 1 else ""
    return "FR310", (several + found.refusal)[:2000]


def _refused_withdrawal(spec: JobSpec, target: Target) -> str | None:
    """Take back a subscription's folder of the hour (it has no results, or is withheld); why its
    store refused, if it did (a transient error is raised)."""
    try:
        _withdraw(spec, target.output_prefix, target.subscription)
    except TransientStorageError:
        raise
    except StorageError as exc:
        return f"[{exc.code}] taking back its folder at {target.output_prefix} failed: {exc}"
    return None


def _withdraw(spec: JobSpec, prefix: str, subscription: str) -> None:
    store = spec.stores.open(prefix)
    folder = delivery_dir(subscription, spec.feed, spec.hour)
    if any(True for _ in store.list(folder + "/")):
        withdraw(store, folder)
