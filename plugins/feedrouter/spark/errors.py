"""The batch errors (codes FR6xx), defined with the rest in :mod:`feedrouter.errors`."""

from __future__ import annotations

from feedrouter.errors import (
    BatchBusyError,
    BatchError,
    DeliveryConflictError,
    InjectedFailure,
    LockLostError,
    NoPlanBuildError,
    SparkVersionError,
    SubscriberDeliveryError,
)

__all__ = [
    "BatchBusyError",
    "BatchError",
    "DeliveryConflictError",
    "InjectedFailure",
    "LockLostError",
    "NoPlanBuildError",
    "SparkVersionError",
    "SubscriberDeliveryError",
]
