"""The catalog: feeds, DTDs, subscribers and subscriptions in PostgreSQL (a server of yours or the
embedded one, :mod:`.embedded`), their change tracking, and plan builds.

Users manage the catalog with plain SQL (see the README's catalog section); this package reads it, builds
plans (:func:`build_plan`) and loads them back (:func:`load_plan`, :func:`load_latest_plan`).
SQLAlchemy is imported here, never by the core.

Every statement on the catalog's tables lives in this package: :mod:`.repository` (feeds,
subscriptions, plan builds; ``require_feed``, ``latest_build``, ``require_plan_build``),
:mod:`.status` (the read-only questions of the DAGs and the UI), :mod:`.ledger` (batches and
deliveries), :mod:`.lease` (the hour lease) and :mod:`.locks` (advisory-lock keys).
"""

from feedrouter.catalog.artifact import FORMAT_VERSION, load_plan
from feedrouter.catalog.builder import build_plan, load_latest_plan
from feedrouter.catalog.compiled import CompiledPlan, EventTime, FeedConfig, PlanSummary, Target
from feedrouter.catalog.database import (
    create_catalog_engine,
    open_catalog,
)
from feedrouter.catalog.models import (
    Base,
    Batch,
    CatalogVersion,
    Delivery,
    Dtd,
    Feed,
    PlanBuild,
    Subscriber,
    Subscription,
)
from feedrouter.catalog.repository import (
    PlanBuildResult,
    latest_build,
    latest_builds,
    require_feed,
    require_plan_build,
    subscription_problems,
)
from feedrouter.catalog.validation import has_event_time
from feedrouter.catalog.version import catalog_version, catalog_versions
from feedrouter.errors import TransientCatalogError

__all__ = [
    "FORMAT_VERSION",
    "Base",
    "Batch",
    "CatalogVersion",
    "CompiledPlan",
    "Delivery",
    "Dtd",
    "EventTime",
    "Feed",
    "FeedConfig",
    "PlanBuild",
    "PlanBuildResult",
    "PlanSummary",
    "Subscriber",
    "Subscription",
    "Target",
    "TransientCatalogError",
    "build_plan",
    "catalog_version",
    "catalog_versions",
    "create_catalog_engine",
    "has_event_time",
    "latest_build",
    "latest_builds",
    "load_latest_plan",
    "load_plan",
    "open_catalog",
    "require_feed",
    "require_plan_build",
    "subscription_problems",
]
