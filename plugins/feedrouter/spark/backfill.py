"""Back-fill an hour's join witnesses (issue 16): stage 1 again, for the witnesses only.

A join subscription added today needs witnesses of its blocks for the hours its window reaches
back to, which were routed before its blocks existed. Those hours are routed again from the inputs
still in the store, with the feed's latest plan build, writing only the hour's witness relations:
no delivery folder, quarantine entry or ledger row changes. Something no streaming engine can do:
the state is rebuilt from the retained inputs instead of starting empty.

Most joins added later select on values their feed's other joins select on too: their blocks are
served by a base witness plan whose rows an hour of format 2 keeps whole. Where the hour records
what those rows hold and it is all a lacking block needs, the block is filed from them: only the
hour's ``blocks.json`` is rewritten, no input is read (:func:`~feedrouter.spark.witnesses.
adopt_blocks`).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from sqlalchemy import Engine

from feedrouter.catalog import ledger
from feedrouter.errors import error
from feedrouter.hours import format_hour, to_hour
from feedrouter.join.plan import BlockSpec
from feedrouter.join.relations import HourWitnesses
from feedrouter.spark.batch import (
    BatchOptions,
    LoadedPlan,
    SessionFactory,
    job_spec,
    list_inputs,
    load_plan_build,
    run_routing,
)
from feedrouter.spark.batchlog import batch_fields, log
from feedrouter.spark.lease import JobCanceller, hour_lock
from feedrouter.spark.session import batch_session
from feedrouter.spark.spec import JobSpec
from feedrouter.spark.stores import StoreOpener
from feedrouter.spark.tasks import WitnessReport, write_witness_hour
from feedrouter.spark.witnesses import adopt_some_blocks, blocks_json_of_hour, holds
from feedrouter.storage import ObjectStore


def backfill_witnesses(
    engine: Engine,
    feed: str,
    hour: datetime,
    *,
    plans_store: ObjectStore,
    options: BatchOptions | None = None,
    stores: StoreOpener | None = None,
    session: SessionFactory | None = None,
    loaded: LoadedPlan | None = None,
) -> WitnessReport | None:
    """Write ``feed``'s ``hour`` of witnesses again with its latest plan build (``loaded``: that
    build, loaded already for the other hours of a window; None: the plan has no join block). Runs
    under the hour's lease, so it never overlaps a routing of the hour; an hour that holds every
    block of the plan by then (another join stage back-filled it) is left as it is (a report of
    nothing routed)."""
    hour = to_hour(hour, strict=True)
    options, stores = options or BatchOptions(), stores or StoreOpener.from_env()
    with batch_fields(feed, format_hour(hour)):
        loaded = loaded or load_plan_build(engine, feed, plans_store)
        spec = replace(job_spec(loaded, hour, stores, options), witnesses_only=True)
        if spec.state_uri is None:
            return None
        cancel = JobCanceller()
        ttl = timedelta(seconds=options.lease_seconds)
        with hour_lock(engine, feed, hour, ttl, on_lost=cancel):
            state = stores.open(spec.state_uri)
            found = blocks_json_of_hour(state, feed, hour)
            joins = loaded.plan.joins
            specs = [joins.specs[block] for block in spec.witness_blocks] if joins is not None else []
            if found is not None and holds(found, specs):
                # another join stage back-filled it while this one waited for the lease
                log.info("the join witnesses of %s %s hold every block already", feed, format_hour(hour))
                return WitnessReport(0, 0, 0, 0)
            adopted = _adopted(state, spec, specs)
            if adopted is not None:
                return adopted
            keys = list_inputs(stores.open(spec.input_uri))
            if not keys:
                _check_nothing_was_routed(engine, feed, hour, spec.input_uri)
                write_witness_hour(spec, HourWitnesses(feed, hour, spec.witness_blocks))
                return WitnessReport(0, 0, 0, 0)
            sessions = session or (lambda: batch_session(None, options.master))
            output = run_routing(spec, loaded, keys, sessions, options, None, cancel)
        log.info("back-filled the join witnesses of %s %s: %s", feed, format_hour(hour), output.witnesses)
        return output.witnesses


def _adopted(state: ObjectStore, spec: JobSpec, specs: list[BlockSpec]) -> WitnessReport | None:
    """Cover the blocks the hour lacks from the witness plans' rows it keeps (format 2), where
    they hold what filing each block needs (:func:`~feedrouter.spark.witnesses.adopt_blocks`): a
    join subscription added later whose blocks share a base with earlier ones costs its window's
    hours a rewrite of their ``blocks.json``, not a routing. None: the hour is routed again (the
    blocks that could be covered so are, first: should its inputs be gone, their joins still pair)."""
    if not spec.witness_roots:
        return None
    found = adopt_some_blocks(state, spec.feed, spec.hour, specs, dict(spec.witness_roots))
    if found is None:
        return None
    adopted, left = found
    if adopted:
        # written even where other blocks are left: should the hour's inputs be gone, the joins
        # that need only these are still paired (the join stage leaves out the others alone)
        log.info(
            "the join witnesses of %s %s cover %d more blocks from the witness plans' rows they keep%s",
            spec.feed,
            spec.hour_text,
            len(adopted),
            f" ({len(left)} others need the hour routed again)" if left else "",
        )
    return None if left else WitnessReport(0, 0, 0, 0)


def _check_nothing_was_routed(engine: Engine, feed: str, hour: datetime, inputs: str) -> None:
    """An hour without inputs is back-filled as an hour without messages only where it routed
    none: an empty hour written over one whose inputs are gone would cost every join whose window
    reaches it its pairs, without a word.

    Raises:
        InputsGone: [FR612] the hour routed documents and its inputs are gone.
    """
    with engine.connect() as conn:
        routed = ledger.routed_documents(conn, feed, hour)
    if routed:
        raise error(
            "FR612",
            f"the join witnesses of {feed} {format_hour(hour)} must be back-filled, but its inputs are "
            f"gone from {inputs} (the hour routed {routed} documents): its pairs cannot be made again; "
            "restore the inputs and re-run",
        )
