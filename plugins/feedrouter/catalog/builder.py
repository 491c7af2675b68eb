"""Plan builds: compile a feed's active subscriptions at one catalog version into a stored artifact.

One build is one transaction: read the version and the subscriptions at one snapshot, compile them
with the feed's DTD, write each subscription's status back, store the artifact, record the
``plan_builds`` row. A build for a version that already has one is a no-op.

Concurrency on Postgres: builds of one feed serialize on ``pg_advisory_xact_lock`` (keyed by the
feed, :mod:`feedrouter.catalog.locks`) inside a REPEATABLE READ transaction. A repeatable-read
snapshot is taken by the first statement, i.e. *before* a blocking lock call returns, so a builder
that had to wait would work on a snapshot that misses the build it waited for. Hence: try the lock;
if it is busy, wait for it, roll back and start over with a fresh snapshot. The lock lives and dies
with the transaction (safe with connection pools and PgBouncer's transaction mode). The rare race
left — the holder commits between our snapshot and our lock — ends in a unique-key or serialization
failure, which is retried.

The retries (a fresh snapshot after waiting for the lock, after a serialization failure, a
deadlock or a racing build's row) are tenacity's: :class:`_Budget` counts the two kinds apart.

Nothing a batch could fail on reaches a plan: before compiling, each subscription's delivery target
is checked (:mod:`feedrouter.catalog.validation`: its encoded name, its subscriber's canonical
prefix clear of every location feedrouter owns) and after compiling, two subscriptions that would
share a folder are resolved in favour of the older one. The losers are marked invalid (FR403,
FR404) and left out of the plan; the feed's other subscriptions build as usual.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session
from tenacity import RetryCallState, Retrying, retry_if_exception

import feedrouter
from feedrouter import heap
from feedrouter.catalog import locks, repository
from feedrouter.catalog.artifact import FORMAT_VERSION, SUFFIX, encode, load_plan
from feedrouter.catalog.compiled import CompiledPlan, FeedConfig
from feedrouter.catalog.joins import JoinsOfFeed, compile_joins
from feedrouter.catalog.outcomes import Outcome, classify, explain_all
from feedrouter.catalog.repository import FeedRecord, PlanBuildResult, SubscriptionRecord
from feedrouter.catalog.validation import (
    Location,
    conflicting_targets,
    invalid_targets,
    owned_locations,
)
from feedrouter.catalog.version import catalog_version
from feedrouter.errors import StorageError, error
from feedrouter.router import Router
from feedrouter.schema import DtdGraph
from feedrouter.storage import ObjectStore, component, join_key

#: SQLSTATEs a fresh attempt can get past: serialization failure, deadlock, a racing build's row.
RETRYABLE_SQLSTATES = frozenset({"40001", "40P01", "23505"})
MAX_WAITS = 100


@dataclass(frozen=True)
class BuildOptions:
    """How to compile: the router strategy, and whether to store each subscription's explain text."""

    strategy: str = "auto"
    explain: bool = True


class _LockWasBusy(Exception):
    """Another build of the feed held the lock; we waited for it and must take a fresh snapshot."""


def build_plan(
    bind: Engine | Session,
    feed_name: str,
    store: ObjectStore,
    *,
    strategy: str = "auto",
    explain: bool = True,
    attempts: int = 5,
) -> PlanBuildResult:
    """Build (or reuse) the plan of ``feed_name`` at its current catalog version.

    Args:
        bind: the catalog engine, or a Session whose engine is used (the build always runs in its
            own transaction).
        feed_name: the feed to build.
        store: the plans store; the artifact goes to ``{store}/{feed}/{digest}.plan``.
        strategy: the router strategy ("auto", "F", "FW", "FWR").
        explain: store ``router.explain`` of each subscription in ``subscriptions.plan_text``.
        attempts: how many times to retry after a serialization failure or a racing build.

    Raises:
        CatalogError: [FR405] unknown feed; [FR400] the catalog kept changing under every attempt.
        CompileError: [FR303] the feed's DTD is invalid, [FR302] unknown strategy.
        StorageError: the artifact could not be written (TransientStorageError: retry later).
    """
    engine = _engine_of(bind)
    retrying = Retrying(retry=retry_if_exception(_retryable), stop=_Budget(attempts), reraise=True)
    try:
        return retrying(_attempt, engine, feed_name, store, BuildOptions(strategy, explain))
    except _LockWasBusy:
        # another build of the feed held its lock all along: a later retry will find it free
        raise error("FR402", f"plan build of {feed_name!r}: another build held its lock") from None
    except DBAPIError as exc:
        transient = _sqlstate(exc) in RETRYABLE_SQLSTATES or _connection_problem(exc)
        code = "FR402" if transient else "FR400"
        raise error(code, f"plan build of {feed_name!r} failed: {exc.orig}") from exc


@dataclass
class _Budget:
    """tenacity's stop condition of a build: at most ``attempts`` failed transactions and
    :data:`MAX_WAITS` waits for another build's lock, counted apart."""

    attempts: int
    failures: int = 0
    waits: int = 0

    def __call__(self, state: RetryCallState) -> bool:
        failed = state.outcome.exception() if state.outcome is not None else None
        if isinstance(failed, _LockWasBusy):
            self.waits += 1
        else:
            self.failures += 1
        return self.waits > MAX_WAITS or self.failures >= self.attempts


def _retryable(exc: BaseException) -> bool:
    """Waiting for the lock, or a failure a fresh snapshot can get past."""
    return isinstance(exc, _LockWasBusy) or (
        isinstance(exc, DBAPIError) and _sqlstate(exc) in RETRYABLE_SQLSTATES
    )


def load_latest_plan(
    bind: Engine | Session, feed_name: str, store: ObjectStore
) -> tuple[PlanBuildResult, CompiledPlan]:
    """The latest plan build of a feed and its verified plan.

    Raises:
        NoPlanBuildError: [FR601] the feed has no plan build.
    """
    with _engine_of(bind).connect() as conn:
        build = repository.require_plan_build(conn, feed_name)
    plan = load_plan(store, build.artifact_uri, build.digest, feed=feed_name, feed_id=build.feed_id)
    return build, plan


def compile_plan(
    feed: FeedRecord,
    version: int,
    records: Sequence[SubscriptionRecord],
    options: BuildOptions,
    owned: Sequence[Location] = (),
    foreign: Sequence[tuple[str, SubscriptionRecord]] = (),
    feeds: Mapping[str, FeedConfig] | None = None,
) -> tuple[CompiledPlan, dict[str, Outcome]]:
    """Compile the subscriptions with the feed's DTD and settings; bad texts, names and prefixes
    become outcomes, never failures.

    Args:
        feed: the feed, with its DTD and settings.
        version: the catalog version compiled.
        records: the feed's active subscriptions.
        options: strategy and explain.
        owned: locations no subscriber's prefix may overlap (see
            :func:`~feedrouter.catalog.validation.owned_locations`).
        foreign: other feeds' join subscriptions (with their feed): their blocks that read this
            feed are computed by its router.
        feeds: the configs of the feeds with an event time (what joins may read).
    """
    targets = {record.subscription_id: record.target for record in records}
    refused = invalid_targets(targets, feed.config.name, owned)
    accepted = [record for record in records if record.subscription_id not in refused]
    joined = compile_joins(feed.config, accepted, foreign, feeds or {}, options.explain)
    pairs = [(r.subscription_id, r.query) for r in accepted if r.subscription_id not in joined.join_ids]
    ids = [sid for sid, _ in pairs]
    with heap.paused():  # compiling makes millions of long-lived objects, none of them garbage
        router = _compile(pairs, feed, options)
        _add_witnesses(router, joined.joins)
        explained = explain_all(router, ids) if options.explain else None
    outcomes = {**classify(ids, router.errors, router.warnings, explained), **joined.outcomes, **refused}
    ids += sorted(joined.outcomes, key=int)
    deliverable = {sid: targets[sid] for sid in ids if outcomes[sid].status != "invalid"}
    for sid, outcome in conflicting_targets(deliverable).items():
        if sid in joined.joins.plans:
            del joined.joins.plans[sid]
        else:
            router.remove(sid)
        del deliverable[sid]
        outcomes[sid] = outcome
    plan = CompiledPlan(feed.config, version, router, deliverable, datetime.now(timezone.utc))
    plan.joins = joined.joins if joined.joins else None
    return plan, {record.subscription_id: outcomes[record.subscription_id] for record in records}


def _add_witnesses(router: Router, joins: JoinsOfFeed) -> None:
    """The feed's join blocks (their witness plans) and its clock, compiled into its router."""
    for base in joins.witnessing.bases.values():
        router.add_witness(base)
    if joins.clock is not None:
        router.add_witness(joins.clock)
    if joins.blocks:
        router.reindex()  # the blocks' constants change which tests are selective


def _compile(pairs: list[tuple[str, str]], feed: FeedRecord, options: BuildOptions) -> Router:
    """The feed's router: its DTD, the strategy, its result limits and invalid-document policy."""
    return Router.compile(
        pairs,
        dtd=_dtd_graph(feed),
        strategy=options.strategy,
        on_error="collect",
        result_limits=feed.config.result_limits,
        invalid_documents=feed.config.invalid_documents,
    )


def _attempt(engine: Engine, feed_name: str, store: ObjectStore, options: BuildOptions) -> PlanBuildResult:
    # The whole build with the cyclic collector paused: once the router exists, every full
    # collection walks its millions of objects (writing 100,000 statuses took 11 s instead of 3).
    with heap.paused(), _build_transaction(engine, feed_name) as conn:
        return _build(conn, feed_name, store, options)


@contextmanager
def _build_transaction(engine: Engine, feed_name: str) -> Iterator[Connection]:
    with engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn, conn.begin():
        if not locks.try_build_lock(conn, feed_name):
            locks.wait_for_build_lock(conn, feed_name)  # wait for the other build to end
            raise _LockWasBusy
        yield conn


def _build(conn: Connection, feed_name: str, store: ObjectStore, options: BuildOptions) -> PlanBuildResult:
    feed = repository.require_feed(conn, feed_name)
    version = catalog_version(conn, feed_name)
    latest = repository.latest_build(conn, feed_name)
    if latest is not None and _is_current(latest, version) and _artifact_present(store, latest.artifact_uri):
        return latest
    # Built before but its artifact is gone (or the row is not the latest): build again and
    # overwrite that row.
    existing = repository.find_build(conn, feed.id, version, FORMAT_VERSION, feedrouter.__version__)
    started = time.perf_counter()
    records = repository.active_subscriptions(conn, feed.id)
    owned = owned_locations(repository.feed_locations(conn), store.uri)
    foreign: list[tuple[str, SubscriptionRecord]] = []
    feeds: dict[str, FeedConfig] = {}
    if feed.config.event_time is not None:  # only a feed with an event time takes part in joins
        foreign = repository.join_subscriptions(conn)
        feeds = repository.event_time_feeds(conn)
    plan, outcomes = compile_plan(feed, version, records, options, owned, foreign, feeds)
    artifact = encode(plan)
    uri = store.put(join_key(component(feed_name), artifact.digest + SUFFIX), artifact.data)
    repository.write_outcomes(conn, records, outcomes)
    values: dict[str, Any] = {
        "feed_id": feed.id,
        "catalog_version": version,
        "format_version": FORMAT_VERSION,
        "feedrouter_version": feedrouter.__version__,
        "strategy": plan.router.strategy.value,
        "artifact_uri": uri,
        "digest": artifact.digest,
        "artifact_bytes": len(artifact.data),
        **_counts(outcomes),
        "duration_seconds": round(time.perf_counter() - started, 6),
    }
    row = repository.save_build(conn, values, existing.id if existing is not None else None)
    return repository.build_result(SimpleNamespace(**row), feed_name, reused=False)


def _is_current(build: PlanBuildResult, version: int) -> bool:
    """True when ``build`` is of this catalog version, artifact format and feedrouter release."""
    return build.catalog_version == version and build.release == (FORMAT_VERSION, feedrouter.__version__)


def _counts(outcomes: dict[str, Outcome]) -> dict[str, int]:
    statuses = [outcome.status for outcome in outcomes.values()]
    return {
        "subscriptions": len(statuses),
        "valid_count": statuses.count("valid"),
        "invalid_count": statuses.count("invalid"),
        "never_matches_count": statuses.count("never-matches"),
    }


def _dtd_graph(feed: FeedRecord) -> DtdGraph | None:
    if feed.dtd_text is None:
        return None
    return DtdGraph.from_text(feed.dtd_text, root=feed.dtd_root, source=f"DTD {feed.config.dtd_name}")


def _artifact_present(store: ObjectStore, uri: str) -> bool:
    """True when the recorded artifact is under this store and still there (else: rebuild it)."""
    try:
        return store.exists(store.key_of(uri))
    except StorageError:
        return False


def _engine_of(bind: Engine | Session) -> Engine:
    if isinstance(bind, Session):
        return bind.get_bind().engine
    return bind


def _sqlstate(exc: DBAPIError) -> str | None:
    return getattr(exc.orig, "sqlstate", None)


def _connection_problem(exc: DBAPIError) -> bool:
    """The server could not be reached or went away (psycopg leaves sqlstate empty for those)."""
    state = getattr(exc.orig, "sqlstate", "not psycopg")
    return exc.connection_invalidated or state is None or str(state).startswith(("08", "57P"))
