"""The catalog tables (schema ``feedrouter``) as SQLAlchemy 2 models.

The models are the reference the migrations mirror (``tests/integration`` compares them with
Alembic's autogenerate). Constraints that plain SQL can check live here too, so they hold for rows
inserted by hand: unique names, prefix shapes, status values, non-negative counts. The catalog is
PostgreSQL everywhere (a server of yours or the embedded one), so checks may use its regular
expressions and JSON paths.

Change tracking (triggers bumping ``catalog_versions`` and NOTIFY) is raw SQL in ``sql/`` run by the
migrations; it is not part of the models.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    Interval,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from feedrouter.hours import DEFAULT_LAYOUT
from feedrouter.join.clock import FORMATS as EVENT_TIME_FORMATS
from feedrouter.limits import (
    DEFAULT_ALLOWED_LATENESS,
    DEFAULT_MAX_DOCUMENT_RESULT_BYTES,
    DEFAULT_MAX_JOIN_PAIRS,
    DEFAULT_MAX_JOIN_RESULT_BYTES,
    DEFAULT_MAX_JOIN_WINDOW,
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_SUBSCRIPTION_CHARS,
    MAX_EVENT_TIME_PATH_CHARS,
    MAX_JOIN_HORIZON,
    MAX_JOIN_PAIRS,
    MAX_JOIN_RESULT_BYTES,
)
from feedrouter.paths import MAX_COMPONENT
from feedrouter.storage.uris import DOT_SEGMENT, FILE_URI, MAX_PREFIX_BYTES, S3_URI

SCHEMA = "feedrouter"

#: Deterministic constraint names, so migrations, models and error messages agree.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

SUBSCRIPTION_STATUSES = ("pending", "valid", "invalid", "never-matches")
#: What a feed does with a document its DTD does not validate: route it with the DTD-free plan, or
#: quarantine it (see ``Feed.invalid_documents``).
INVALID_DOCUMENT_POLICIES = ("fallback", "quarantine")
BATCH_STATUSES = ("pending", "running", "succeeded", "empty", "failed")
#: "withheld": a join subscription's pairs passed its cap for the hour (FR313), nothing delivered
DELIVERY_STATUSES = ("delivered", "failed", "withheld")

Id = BigInteger()
Json = JSONB()

# Postgres regular expressions (ARE) for the shapes LIKE cannot express.
NAME_RE = "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
# A canonical store URI (feedrouter.storage.uris): one spelling per folder, no escape from the root.
URI_RE = f"^({S3_URI}|{FILE_URI})$"
#: The characters a name keeps in a key segment (feedrouter.paths.safe_component); the others
#: become %XX per UTF-8 byte, so the encoded length is computable in SQL.
SAFE_NAME_CHARS = "[A-Za-z0-9._=-]"
XML_NAME_RE = "^[A-Za-z_][A-Za-z0-9._:-]*$"
#: ``feeds.spark_conf``: a JSON object whose keys start with ``spark.`` and whose values are strings
#: (a JSON path, since Postgres allows no subquery such as ``jsonb_each`` in a check).
SPARK_CONF_CHECK = (
    "jsonb_typeof(spark_conf) = 'object' AND NOT jsonb_path_exists(spark_conf, "
    "'$.keyvalue() ? (!(@.key starts with \"spark.\") || @.value.type() != \"string\")')"
)
#: ``feeds.event_time_path``: the shape SQL can see (absolute, bounded, no control characters); a
#: plan build also compiles it (feedrouter.catalog.validation.event_time_path_problem).
EVENT_TIME_PATH_CHECK = (
    f"event_time_path IS NULL OR (length(event_time_path) BETWEEN 1 AND {MAX_EVENT_TIME_PATH_CHARS}"
    " AND event_time_path ~ '^/' AND event_time_path !~ '[[:cntrl:]]')"
)


def interval_sql(delta: timedelta) -> str:
    """``delta`` as a Postgres interval literal in whole hours (``interval '24 hours'``)."""
    hours, rest = divmod(delta, timedelta(hours=1))
    if rest:
        raise ValueError(f"{delta} is not a whole number of hours")
    return f"interval '{hours} hours'"


#: ``feeds.max_join_window`` and ``feeds.allowed_lateness``: within the horizon a join stage reads back.
JOIN_WINDOW_CHECK = (
    f"max_join_window > interval '0 hours' AND max_join_window <= {interval_sql(MAX_JOIN_HORIZON)}"
)
LATENESS_CHECK = (
    f"allowed_lateness >= interval '0 hours' AND allowed_lateness <= {interval_sql(MAX_JOIN_HORIZON)}"
)
#: ``feeds.max_join_pairs`` and ``feeds.max_join_result_bytes``: positive and bounded.
JOIN_PAIRS_CHECK = f"max_join_pairs BETWEEN 1 AND {MAX_JOIN_PAIRS}"
JOIN_RESULT_BYTES_CHECK = f"max_join_result_bytes BETWEEN 1 AND {MAX_JOIN_RESULT_BYTES}"


def _pg_check(sql: str, name: str) -> CheckConstraint:
    return CheckConstraint(sql, name=name)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def prefix_scheme_sql(column: str) -> str:
    """The LIKE part of a canonical prefix: scheme, no dot or empty segment, no query or
    fragment, bounded length. The build checks the rest again in Python."""
    return (
        f"({column} LIKE 's3://%' OR {column} LIKE 'file:///%') AND {column} NOT LIKE '%..%'"
        f" AND {column} NOT LIKE '%/./%' AND {column} NOT LIKE '%/.' AND {column} NOT LIKE '%?%'"
        f" AND {column} NOT LIKE '%#%' AND replace({column}, '://', '') NOT LIKE '%//%'"
        f" AND length({column}) <= {MAX_PREFIX_BYTES}"
    )


def prefix_shape_sql(column: str) -> str:
    """The whole canonical form (Postgres regular expressions): see feedrouter.storage.uris."""
    return f"{column} ~ '{URI_RE}' AND {column} !~ '{DOT_SEGMENT}' AND {column} !~ '[[:cntrl:]]'"


def encoded_name_length_sql(column: str = "name") -> str:
    """The length of ``safe_component(name)`` in Postgres: safe characters count 1, every other
    UTF-8 byte 3 (%XX), a leading '.' 2 more."""
    unsafe = f"regexp_replace({column}, '{SAFE_NAME_CHARS}', '', 'g')"
    return (
        f"length({column}) - length({unsafe}) + 3 * octet_length({unsafe})"
        f" + CASE WHEN {column} LIKE '.%' THEN 2 ELSE 0 END <= {MAX_COMPONENT}"
    )


def _prefix_checks(column: str, nullable: bool = False) -> list[CheckConstraint]:
    """A canonical ``s3://`` or absolute ``file://`` URI (feedrouter.storage.uris)."""
    null = f"{column} IS NULL OR " if nullable else ""
    return [
        CheckConstraint(f"{null}({prefix_scheme_sql(column)})", name=f"{column}_scheme"),
        _pg_check(f"{null}({prefix_shape_sql(column)})", f"{column}_shape"),
    ]


def _name_checks(limit: int = 200) -> list[CheckConstraint]:
    return [CheckConstraint(f"length(name) BETWEEN 1 AND {limit} AND name = trim(name)", name="name_length")]


def _created() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), nullable=False, server_default=func.now())


def _updated() -> Mapped[datetime]:
    # onupdate covers the ORM; a BEFORE UPDATE trigger (sql/) covers plain SQL on Postgres.
    return mapped_column(
        DateTime(timezone=True), nullable=False, server_default=func.now(), onupdate=func.now()
    )


class Base(DeclarativeBase):
    metadata = MetaData(schema=SCHEMA, naming_convention=NAMING)


class Dtd(Base):
    """A DTD a feed's documents follow; its entity declarations apply when routing."""

    __tablename__ = "dtds"
    __table_args__ = (*_name_checks(),)

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    name: Mapped[str] = mapped_column(Text, nullable=False, unique=True)
    root_element: Mapped[str] = mapped_column(Text, nullable=False)
    text: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class Feed(Base):
    """A stream of XML messages arriving in hourly batches under ``input_prefix``.

    ``layout`` places one hour's batch below the prefix: ``{prefix}``, ``{date}`` (YYYY-MM-DD) and
    ``{hour}`` (HH) are substituted (:func:`feedrouter.hours.batch_prefix`). ``record_element``
    names the element that splits container files into messages (None: one message per object).

    ``max_result_bytes`` caps what one subscription receives for one document (FR310 past it),
    ``max_document_result_bytes`` what one document delivers to all subscriptions together (FR311);
    ``invalid_documents`` says what happens to a document the feed's DTD does not validate:
    "fallback" routes it with the DTD-free plan, "quarantine" sets it aside with its reason.
    ``spark_conf`` holds Spark settings for the feed's batches (keys ``spark.…``, string values).

    Join subscriptions correlate messages by their event time: ``event_time_path`` is an absolute
    XPath to each message's event-time value (None: the feed has no event time and takes no join
    subscriptions), ``event_time_format`` how that value is written (feedrouter.join.clock.FORMATS);
    ``max_join_window`` bounds the window a join subscription on the feed may use, and
    ``allowed_lateness`` how long after its event time a message may arrive and still join (both at
    most 7 days). A join subscription's hour is withheld (FR313) past ``max_join_pairs`` qualifying
    pairs or ``max_join_result_bytes`` of results; one pair's result is held to ``max_result_bytes``
    (FR310: that pair left out). docs/configuration.md says what they mean for joins.
    """

    __tablename__ = "feeds"
    __table_args__ = (
        *_name_checks(128),
        _pg_check(f"name ~ '{NAME_RE}'", "name_shape"),
        *_prefix_checks("input_prefix"),
        *_prefix_checks("quarantine_prefix", nullable=True),
        CheckConstraint(
            "layout LIKE '{prefix}%' AND layout LIKE '%{hour}%' AND layout NOT LIKE '%..%'",
            name="layout_shape",
        ),
        _pg_check(f"record_element IS NULL OR record_element ~ '{XML_NAME_RE}'", "record_element_shape"),
        CheckConstraint("max_result_bytes > 0 AND max_document_result_bytes > 0", name="result_limits"),
        CheckConstraint(_in("invalid_documents", INVALID_DOCUMENT_POLICIES), name="invalid_documents"),
        _pg_check(SPARK_CONF_CHECK, "spark_conf"),
        _pg_check(EVENT_TIME_PATH_CHECK, "event_time_path"),
        CheckConstraint(_in("event_time_format", EVENT_TIME_FORMATS), name="event_time_format"),
        CheckConstraint(JOIN_WINDOW_CHECK, name="max_join_window"),
        CheckConstraint(LATENESS_CHECK, name="allowed_lateness"),
        CheckConstraint(JOIN_PAIRS_CHECK, name="max_join_pairs"),
        CheckConstraint(JOIN_RESULT_BYTES_CHECK, name="max_join_result_bytes"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    name: Mapped[str] = mapped_column(Text, nullable=False, unique=True)
    input_prefix: Mapped[str] = mapped_column(Text, nullable=False)
    layout: Mapped[str] = mapped_column(Text, nullable=False, server_default=DEFAULT_LAYOUT)
    record_element: Mapped[str | None] = mapped_column(Text)
    quarantine_prefix: Mapped[str | None] = mapped_column(Text)
    dtd_id: Mapped[int | None] = mapped_column(ForeignKey("dtds.id", ondelete="RESTRICT"), index=True)
    active: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=text("true"))
    max_result_bytes: Mapped[int] = mapped_column(
        BigInteger, nullable=False, server_default=str(DEFAULT_MAX_RESULT_BYTES)
    )
    max_document_result_bytes: Mapped[int] = mapped_column(
        BigInteger, nullable=False, server_default=str(DEFAULT_MAX_DOCUMENT_RESULT_BYTES)
    )
    invalid_documents: Mapped[str] = mapped_column(String(16), nullable=False, server_default="fallback")
    # Spark conf of the feed's routing batches, layered between the connection's and the operator's.
    spark_conf: Mapped[dict[str, str]] = mapped_column(
        JSONB, nullable=False, server_default=text("'{}'::jsonb")
    )
    event_time_path: Mapped[str | None] = mapped_column(Text)
    event_time_format: Mapped[str] = mapped_column(Text, nullable=False, server_default="iso8601")
    max_join_window: Mapped[timedelta] = mapped_column(
        Interval, nullable=False, server_default=text(interval_sql(DEFAULT_MAX_JOIN_WINDOW))
    )
    allowed_lateness: Mapped[timedelta] = mapped_column(
        Interval, nullable=False, server_default=text(interval_sql(DEFAULT_ALLOWED_LATENESS))
    )
    max_join_pairs: Mapped[int] = mapped_column(
        BigInteger, nullable=False, server_default=str(DEFAULT_MAX_JOIN_PAIRS)
    )
    max_join_result_bytes: Mapped[int] = mapped_column(
        BigInteger, nullable=False, server_default=str(DEFAULT_MAX_JOIN_RESULT_BYTES)
    )
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()

    dtd: Mapped[Dtd | None] = relationship()


class Subscriber(Base):
    """Someone who receives results: each subscription's results go under ``output_prefix``."""

    __tablename__ = "subscribers"
    __table_args__ = (
        *_name_checks(128),
        _pg_check(f"name ~ '{NAME_RE}'", "name_shape"),
        *_prefix_checks("output_prefix"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    name: Mapped[str] = mapped_column(Text, nullable=False, unique=True)
    output_prefix: Mapped[str] = mapped_column(Text, nullable=False)
    active: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=text("true"))
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class Subscription(Base):
    """One query of a subscriber on a feed, with what the last plan build found out about it.

    ``status`` is "pending" until a build looked at the current text, then "valid", "invalid"
    (``error_*`` say why and where) or "never-matches" (accepted, but the DTD rules out any match).
    """

    __tablename__ = "subscriptions"
    __table_args__ = (
        UniqueConstraint("subscriber_id", "name"),
        *_name_checks(),
        # A name must fit one key segment once encoded (40 x 'é' is 240 characters there).
        _pg_check(encoded_name_length_sql(), "name_encoded_length"),
        CheckConstraint(f"length(query) <= {DEFAULT_MAX_SUBSCRIPTION_CHARS}", name="query_length"),
        CheckConstraint(_in("status", SUBSCRIPTION_STATUSES), name="status"),
        CheckConstraint("status <> 'invalid' OR error_message IS NOT NULL", name="invalid_has_error"),
        CheckConstraint("error_line IS NULL OR error_line > 0", name="error_line"),
        CheckConstraint("error_column IS NULL OR error_column > 0", name="error_column"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    subscriber_id: Mapped[int] = mapped_column(
        ForeignKey("subscribers.id", ondelete="CASCADE"), nullable=False
    )
    feed_id: Mapped[int] = mapped_column(
        ForeignKey("feeds.id", ondelete="CASCADE"), nullable=False, index=True
    )
    name: Mapped[str] = mapped_column(Text, nullable=False)
    query: Mapped[str] = mapped_column(Text, nullable=False)
    active: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=text("true"))
    status: Mapped[str] = mapped_column(String(16), nullable=False, server_default="pending")
    error_code: Mapped[str | None] = mapped_column(String(8))
    error_message: Mapped[str | None] = mapped_column(Text)
    error_line: Mapped[int | None] = mapped_column(Integer)
    error_column: Mapped[int | None] = mapped_column(Integer)
    plan_text: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()

    subscriber: Mapped[Subscriber] = relationship()
    feed: Mapped[Feed] = relationship()


class CatalogVersion(Base):
    """The per-feed change counter the Postgres triggers bump (keyed by name: it survives a
    feed being deleted and created again, so a version is never reused)."""

    __tablename__ = "catalog_versions"

    feed_name: Mapped[str] = mapped_column(Text, primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    changed_at: Mapped[datetime] = _created()


class PlanBuild(Base):
    """One compiled plan of a feed at one catalog version, stored at ``artifact_uri``."""

    __tablename__ = "plan_builds"
    __table_args__ = (
        # An explicit name: the conventional one would pass Postgres's 63-character limit.
        UniqueConstraint(
            "feed_id",
            "catalog_version",
            "format_version",
            "feedrouter_version",
            name="uq_plan_builds_feed_version",
        ),
        CheckConstraint("length(digest) = 64", name="digest_length"),
        _pg_check("digest ~ '^[0-9a-f]{64}$'", "digest_hex"),
        CheckConstraint(
            "subscriptions >= 0 AND valid_count >= 0 AND invalid_count >= 0 AND never_matches_count >= 0"
            " AND artifact_bytes >= 0 AND duration_seconds >= 0",
            name="counts",
        ),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    feed_id: Mapped[int] = mapped_column(
        ForeignKey("feeds.id", ondelete="CASCADE"), nullable=False, index=True
    )
    catalog_version: Mapped[int] = mapped_column(BigInteger, nullable=False)
    format_version: Mapped[int] = mapped_column(Integer, nullable=False)
    feedrouter_version: Mapped[str] = mapped_column(Text, nullable=False)
    strategy: Mapped[str] = mapped_column(String(8), nullable=False)
    artifact_uri: Mapped[str] = mapped_column(Text, nullable=False)
    digest: Mapped[str] = mapped_column(String(64), nullable=False)
    artifact_bytes: Mapped[int] = mapped_column(BigInteger, nullable=False)
    subscriptions: Mapped[int] = mapped_column(Integer, nullable=False)
    valid_count: Mapped[int] = mapped_column(Integer, nullable=False)
    invalid_count: Mapped[int] = mapped_column(Integer, nullable=False)
    never_matches_count: Mapped[int] = mapped_column(Integer, nullable=False)
    duration_seconds: Mapped[float] = mapped_column(Float, nullable=False)
    built_at: Mapped[datetime] = _created()

    feed: Mapped[Feed] = relationship()


class HourListing(Base):
    """The feeds the route DAG's run of an hour listed to route (all the active ones then): a
    feed not among them is never routed for that hour by that run (added, or made active again,
    later), so a join stage does not wait for its witnesses there. A run listed again (cleared)
    adds the feeds it lists then."""

    __tablename__ = "hour_listings"
    __table_args__ = (
        _pg_check("(hour AT TIME ZONE 'UTC') = date_trunc('hour', hour AT TIME ZONE 'UTC')", "whole_hour"),
    )

    hour: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    feeds: Mapped[list[str]] = mapped_column(ARRAY(Text), nullable=False)
    listed_at: Mapped[datetime] = _created()


class Batch(Base):
    """The run ledger: one hour of one feed routed with one plan build. ``untimed`` counts the
    messages joins left out (no usable event time) when the plan has join blocks."""

    __tablename__ = "batches"
    __table_args__ = (
        UniqueConstraint("feed_id", "hour", "plan_build_id"),
        CheckConstraint(_in("status", BATCH_STATUSES), name="status"),
        CheckConstraint("documents >= 0 AND bytes >= 0 AND quarantined >= 0", name="counts"),
        CheckConstraint("untimed >= 0", name="untimed"),
        CheckConstraint("finished_at IS NULL OR finished_at >= started_at", name="finished_after_start"),
        _pg_check("(hour AT TIME ZONE 'UTC') = date_trunc('hour', hour AT TIME ZONE 'UTC')", "whole_hour"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    feed_id: Mapped[int] = mapped_column(ForeignKey("feeds.id", ondelete="CASCADE"), nullable=False)
    hour: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    # NO ACTION (checked at the end of the statement): deleting a feed removes its builds and
    # batches together, while a build still used by a batch cannot be deleted on its own.
    plan_build_id: Mapped[int | None] = mapped_column(ForeignKey("plan_builds.id"), index=True)
    status: Mapped[str] = mapped_column(String(16), nullable=False, server_default="pending")
    documents: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    bytes: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    quarantined: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    error_message: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime] = _created()
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    untimed: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")

    feed: Mapped[Feed] = relationship()
    plan_build: Mapped[PlanBuild | None] = relationship()


class Delivery(Base):
    """What one batch delivered to one subscription (``status`` "delivered"), or why it could not
    (``status`` "failed" with ``error_code`` and ``error_message``).

    The subscriber and subscription names are copied, so the ledger still says where results went
    after a subscription is deleted (``subscription_id`` then becomes NULL).
    """

    __tablename__ = "deliveries"
    __table_args__ = (
        UniqueConstraint("batch_id", "subscription_id", "delivery_version"),
        CheckConstraint("result_count >= 0 AND bytes >= 0 AND delivery_version >= 1", name="counts"),
        CheckConstraint("digest IS NULL OR length(digest) = 64", name="digest_length"),
        CheckConstraint(_in("status", DELIVERY_STATUSES), name="status"),
        CheckConstraint("status <> 'failed' OR error_code IS NOT NULL", name="failed_has_error"),
        CheckConstraint("status <> 'withheld' OR error_code IS NOT NULL", name="withheld_has_error"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    batch_id: Mapped[int] = mapped_column(ForeignKey("batches.id", ondelete="CASCADE"), nullable=False)
    subscription_id: Mapped[int | None] = mapped_column(
        ForeignKey("subscriptions.id", ondelete="SET NULL"), index=True
    )
    subscriber_name: Mapped[str] = mapped_column(Text, nullable=False)
    subscription_name: Mapped[str] = mapped_column(Text, nullable=False)
    delivery_version: Mapped[int] = mapped_column(Integer, nullable=False, server_default="1")
    object_keys: Mapped[Any] = mapped_column(Json, nullable=False)
    result_count: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    bytes: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    digest: Mapped[str | None] = mapped_column(String(64))
    # "failed": the store refused this subscriber's writes (error_* say why); retried by the
    # next run of the hour, while the batch's other deliveries stand.
    status: Mapped[str] = mapped_column(String(16), nullable=False, server_default="delivered")
    error_code: Mapped[str | None] = mapped_column(String(8))
    error_message: Mapped[str | None] = mapped_column(Text)
    delivered_at: Mapped[datetime] = _created()

    batch: Mapped[Batch] = relationship()


class HourLease(Base):
    """The lease on one hour of one feed: the run holding ``token`` may commit that hour's ledger
    until ``expires_at``, which it keeps pushing forward while it runs.

    A run takes the lease in a short transaction of its own (a new, larger ``token`` each time), and
    the transaction recording its batch checks that the token is still its own and unexpired, so a
    run that lost its lease (a dropped connection, a stall past the expiry) commits nothing.
    """

    __tablename__ = "hour_leases"
    __table_args__ = (
        CheckConstraint("token >= 1", name="token"),
        _pg_check("(hour AT TIME ZONE 'UTC') = date_trunc('hour', hour AT TIME ZONE 'UTC')", "whole_hour"),
    )

    feed_id: Mapped[int] = mapped_column(
        ForeignKey("feeds.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    hour: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    token: Mapped[int] = mapped_column(BigInteger, nullable=False)
    holder: Mapped[str] = mapped_column(Text, nullable=False)
    acquired_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
