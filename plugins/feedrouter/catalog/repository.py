"""Reading and writing the catalog rows a plan build and its users need (Core queries).

Every statement is built with SQLAlchemy expressions or bound parameters; no value is ever spliced
into SQL text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Select, func, insert, select, text, true, update

from feedrouter.catalog.compiled import FeedConfig, Target
from feedrouter.catalog.models import Dtd, Feed, PlanBuild, Subscriber, Subscription
from feedrouter.catalog.outcomes import Outcome
from feedrouter.errors import NoPlanBuildError, error
from feedrouter.lang.ast import STREAM_MODULE

if TYPE_CHECKING:
    from typing import Unpack

_OUTCOME_COLUMNS = ("status", "error_code", "error_message", "error_line", "error_column", "plan_text")
#: What a join subscription's text contains: the URI of the module it imports (no LIKE wildcards).
_JOIN_PATTERN = f"%{STREAM_MODULE}%"


@dataclass(frozen=True)
class FeedRecord:
    """A feed as a build needs it: its id, settings and DTD."""

    id: int
    config: FeedConfig
    dtd_text: str | None
    dtd_root: str | None


@dataclass(frozen=True)
class SubscriptionRecord:
    """An active subscription of an active subscriber, with its stored outcome."""

    target: Target
    query: str
    outcome: Outcome

    @property
    def subscription_id(self) -> str:
        """The router's key of the subscription (its catalog id as text)."""
        return str(self.target.catalog_id)


@dataclass(frozen=True)
class PlanBuildResult:
    """A plan build: the new one, or the existing one when the catalog had not changed (``reused``)."""

    id: int
    feed: str
    catalog_version: int
    artifact_uri: str
    digest: str
    artifact_bytes: int
    subscriptions: int
    valid: int
    invalid: int
    never_matches: int
    duration_seconds: float
    built_at: datetime
    strategy: str
    reused: bool = False
    feed_id: int | None = None
    format_version: int | None = None
    feedrouter_version: str | None = None

    @property
    def release(self) -> tuple[int | None, str | None]:
        """(artifact format, feedrouter version) of the build: a release loads only its own."""
        return (self.format_version, self.feedrouter_version)


def require_feed(conn: Connection, name: str) -> FeedRecord:
    """The feed called ``name``, with its settings and DTD.

    Raises:
        CatalogError: [FR405] no feed of that name (terminal).
    """
    row = conn.execute(_feeds().where(Feed.name == name)).first()
    if row is None:
        raise error("FR405", f"no feed named {name!r} in the catalog")
    config = _feed_config(row)
    return FeedRecord(row.id, config, row.dtd_text, row.root_element)


def event_time_feeds(conn: Connection) -> dict[str, FeedConfig]:
    """The settings of every active feed with an event time (the feeds a join may read), by name."""
    rows = conn.execute(_feeds().where(Feed.active, Feed.event_time_path.is_not(None)).order_by(Feed.name))
    return {row.name: _feed_config(row) for row in rows}


def feed_spark_conf(conn: Connection, feed: str) -> dict[str, str]:
    """The Spark conf the catalog holds for ``feed``'s batches (``feeds.spark_conf``; ``{}`` if none).

    The column's check guarantees ``spark.`` keys and string values, so this only copies them.

    Raises:
        CatalogError: [FR405] no feed of that name (terminal).
    """
    conf = conn.scalar(select(Feed.spark_conf).where(Feed.name == feed))
    if conf is None:
        raise error("FR405", f"no feed named {feed!r} in the catalog")
    return {str(key): str(value) for key, value in conf.items()}


def feed_locations(conn: Connection) -> list[FeedConfig]:
    """Every feed's name, input and quarantine prefixes (the locations subscribers must stay out of)."""
    rows = conn.execute(select(Feed.name, Feed.input_prefix, Feed.layout, Feed.quarantine_prefix))
    return [FeedConfig(r.name, r.input_prefix, r.layout, quarantine_prefix=r.quarantine_prefix) for r in rows]


def active_subscriptions(conn: Connection, feed_id: int) -> list[SubscriptionRecord]:
    """The active subscriptions of active subscribers on a feed, in id order."""
    rows = conn.execute(_subscriptions().where(Subscription.feed_id == feed_id))
    return [_subscription(row) for row in rows]


def join_subscriptions(conn: Connection) -> list[tuple[str, SubscriptionRecord]]:
    """Every active join subscription of an active subscriber on an active feed, with its feed's
    name, in id order: the subscriptions whose blocks a build of any feed they read compiles.

    A join subscription is one whose text names the stream module; a text that only mentions it
    (in a comment, say) is found too, and the build's parser tells them apart.
    """
    rows = conn.execute(
        _subscriptions(Feed.name.label("feed_name"))
        .join(Feed, Feed.id == Subscription.feed_id)
        .where(Feed.active, Subscription.query.like(_JOIN_PATTERN))
    )
    return [(row.feed_name, _subscription(row)) for row in rows]


def write_outcomes(
    conn: Connection, records: Sequence[SubscriptionRecord], outcomes: dict[str, Outcome]
) -> int:
    """Store each subscription's new outcome where it differs from the stored one; returns how many."""
    changed = [
        {"id": r.target.catalog_id, **outcomes[r.subscription_id].__dict__}
        for r in records
        if outcomes[r.subscription_id] != r.outcome
    ]
    if not changed:
        return 0
    _update_by_arrays(conn, changed)
    return len(changed)


def find_build(conn: Connection, feed_id: int, version: int, format_version: int, fr_version: str) -> Any:
    """The ``plan_builds`` row of one feed at one catalog version and format, or None."""
    return conn.execute(
        select(PlanBuild.__table__).where(
            PlanBuild.feed_id == feed_id,
            PlanBuild.catalog_version == version,
            PlanBuild.format_version == format_version,
            PlanBuild.feedrouter_version == fr_version,
        )
    ).first()


def latest_builds(conn: Connection, feed_name: str | None = None) -> dict[str, PlanBuildResult]:
    """The latest plan build (the one routing uses) of every feed that has one, by feed name; with
    ``feed_name``, of that feed only. "Latest" is the newest ``built_at``, then the highest id."""
    ranked = (
        select(
            PlanBuild.__table__,
            Feed.name.label("feed_name"),
            func.row_number()
            .over(partition_by=PlanBuild.feed_id, order_by=(PlanBuild.built_at.desc(), PlanBuild.id.desc()))
            .label("rank"),
        )
        .join(Feed, Feed.id == PlanBuild.feed_id)
        .where(true() if feed_name is None else Feed.name == feed_name)
        .subquery()
    )
    rows = conn.execute(select(ranked).where(ranked.c.rank == 1))
    return {row.feed_name: build_result(row, row.feed_name, reused=True) for row in rows}


def latest_build(conn: Connection, feed_name: str) -> PlanBuildResult | None:
    """The latest plan build of a feed (the one routing uses), or None when it has none."""
    return latest_builds(conn, feed_name).get(feed_name)


def require_plan_build(conn: Connection, feed_name: str) -> PlanBuildResult:
    """The latest plan build of a feed.

    Raises:
        NoPlanBuildError: [FR601] the feed has none (terminal until a build runs).
    """
    build = latest_build(conn, feed_name)
    if build is None:
        raise NoPlanBuildError(
            f"feed {feed_name!r} has no plan build: run `feedrouter build-plan --feed {feed_name}` "
            "(or the feedrouter_plans DAG) first"
        )
    return build


def build_artifact(conn: Connection, build_id: int) -> tuple[str, str]:
    """(artifact URI, digest) of plan build ``build_id``; NoResultFound when it was deleted."""
    row = conn.execute(select(PlanBuild.artifact_uri, PlanBuild.digest).where(PlanBuild.id == build_id)).one()
    return row.artifact_uri, row.digest


def save_build(conn: Connection, values: dict[str, Any], replace_id: int | None = None) -> dict[str, Any]:
    """Insert a ``plan_builds`` row, or overwrite row ``replace_id``; returns the row's values.

    ``built_at`` is set here, from this process's clock with microseconds: it orders the builds
    ("latest"); the server default would be the transaction's start, the same for a whole retry.
    """
    values = {**values, "built_at": datetime.now(timezone.utc)}
    if replace_id is None:
        values["id"] = conn.execute(insert(PlanBuild).values(**values).returning(PlanBuild.id)).scalar_one()
    else:
        conn.execute(update(PlanBuild).where(PlanBuild.id == replace_id).values(**values))
        values["id"] = replace_id
    return values


def build_result(row: Any, feed_name: str, *, reused: bool) -> PlanBuildResult:
    """A :class:`PlanBuildResult` from a ``plan_builds`` row."""
    return PlanBuildResult(
        id=row.id,
        feed=feed_name,
        catalog_version=int(row.catalog_version),
        artifact_uri=row.artifact_uri,
        digest=row.digest,
        artifact_bytes=int(row.artifact_bytes),
        subscriptions=row.subscriptions,
        valid=row.valid_count,
        invalid=row.invalid_count,
        never_matches=row.never_matches_count,
        duration_seconds=float(row.duration_seconds),
        built_at=row.built_at,
        strategy=row.strategy,
        reused=reused,
        feed_id=row.feed_id,
        format_version=row.format_version,
        feedrouter_version=row.feedrouter_version,
    )


def subscription_problems(conn: Connection, feed_name: str | None = None) -> list[dict[str, Any]]:
    """Invalid and never-matching subscriptions with their errors (both backends; the Postgres
    view ``feedrouter.subscription_problems`` says the same)."""
    query = (
        select(
            Subscriber.name.label("subscriber"),
            Feed.name.label("feed"),
            Subscription.name.label("subscription"),
            Subscription.status,
            Subscription.error_code,
            Subscription.error_message,
            Subscription.error_line,
            Subscription.error_column,
        )
        .join(Subscriber, Subscriber.id == Subscription.subscriber_id)
        .join(Feed, Feed.id == Subscription.feed_id)
        .where(Subscription.status.in_(("invalid", "never-matches")))
        .order_by(Feed.name, Subscriber.name, Subscription.name)
    )
    if feed_name is not None:
        query = query.where(Feed.name == feed_name)
    return [dict(row._mapping) for row in conn.execute(query)]


def _feeds() -> Select[Unpack[tuple[Any, ...]]]:
    """The columns of a feed's :class:`FeedConfig` and its DTD, one row per feed."""
    return select(
        Feed.id,
        Feed.name,
        Feed.input_prefix,
        Feed.layout,
        Feed.record_element,
        Feed.quarantine_prefix,
        Feed.max_result_bytes,
        Feed.max_document_result_bytes,
        Feed.invalid_documents,
        Feed.event_time_path,
        Feed.event_time_format,
        Feed.max_join_window,
        Feed.allowed_lateness,
        Feed.max_join_pairs,
        Feed.max_join_result_bytes,
        Dtd.name.label("dtd_name"),
        Dtd.text.label("dtd_text"),
        Dtd.root_element,
    ).outerjoin(Dtd, Dtd.id == Feed.dtd_id)


def _feed_config(row: Any) -> FeedConfig:
    return FeedConfig(
        row.name,
        row.input_prefix,
        row.layout,
        row.record_element,
        row.quarantine_prefix,
        row.dtd_name,
        max_result_bytes=int(row.max_result_bytes),
        max_document_result_bytes=int(row.max_document_result_bytes),
        invalid_documents=row.invalid_documents,
        id=row.id,
        event_time_path=row.event_time_path,
        event_time_format=row.event_time_format,
        max_join_window=row.max_join_window,
        allowed_lateness=row.allowed_lateness,
        max_join_pairs=int(row.max_join_pairs),
        max_join_result_bytes=int(row.max_join_result_bytes),
    )


def _subscriptions(*extra: Any) -> Select[Unpack[tuple[Any, ...]]]:
    """The columns of :func:`_subscription` (and ``extra``): active subscriptions of active
    subscribers, in id order."""
    return (
        select(
            Subscription.id,
            Subscription.name,
            Subscription.query,
            Subscriber.name.label("subscriber"),
            Subscriber.output_prefix,
            *(getattr(Subscription, column) for column in _OUTCOME_COLUMNS),
            *extra,
        )
        .join(Subscriber, Subscriber.id == Subscription.subscriber_id)
        .where(Subscription.active, Subscriber.active)
        .order_by(Subscription.id)
    )


def _subscription(row: Any) -> SubscriptionRecord:
    target = Target(row.id, row.name, row.subscriber, row.output_prefix)
    outcome = Outcome(*(getattr(row, column) for column in _OUTCOME_COLUMNS))
    return SubscriptionRecord(target, row.query, outcome)


def _update_by_arrays(conn: Connection, changed: list[dict[str, Any]]) -> None:
    # One UPDATE for all rows: per-row statements would each fire the statement-level
    # change-tracking trigger, which dominates a 100,000-subscription build.
    columns = {name: [row[name] for row in changed] for name in ("id", *_OUTCOME_COLUMNS)}
    conn.execute(
        text(
            "UPDATE feedrouter.subscriptions AS s SET status = v.status, error_code = v.error_code,"
            " error_message = v.error_message, error_line = v.error_line,"
            " error_column = v.error_column, plan_text = v.plan_text"
            " FROM unnest(CAST(:id AS bigint[]), CAST(:status AS text[]), CAST(:error_code AS text[]),"
            " CAST(:error_message AS text[]), CAST(:error_line AS integer[]),"
            " CAST(:error_column AS integer[]), CAST(:plan_text AS text[]))"
            " AS v(id, status, error_code, error_message, error_line, error_column, plan_text)"
            " WHERE s.id = v.id"
        ),
        columns,
    )
