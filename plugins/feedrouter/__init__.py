"""feedrouter: route XML messages to thousands of customized XQuery subscriptions in one shared pass.

The core (``lang`` → ``schema`` → ``engine`` → ``plan`` → ``output``) imports only the standard
library and lxml; the adapters (catalog, storage, spark, airflow) live beside it and are imported
only by those who need them.
"""

from feedrouter.engine.document import DocumentLimits
from feedrouter.errors import (
    CatalogError,
    CompileError,
    CompileWarning,
    DocumentError,
    FeedrouterError,
    RoutingError,
    StorageError,
    SubscriptionError,
)
from feedrouter.limits import ResultLimits
from feedrouter.plan.planner import Strategy
from feedrouter.router import RouteOutcome, Router

__all__ = [
    "CatalogError",
    "CompileError",
    "CompileWarning",
    "DocumentError",
    "DocumentLimits",
    "FeedrouterError",
    "ResultLimits",
    "RouteOutcome",
    "Router",
    "RoutingError",
    "StorageError",
    "Strategy",
    "SubscriptionError",
]
__version__ = "0.1.0"
