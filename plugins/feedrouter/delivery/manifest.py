"""The ``_manifest.json`` of a delivery folder: which plan build made it, what it holds, digests.

The manifest is written after the parts and before ``_SUCCESS``. Its bytes depend only on the feed,
the hour, the subscription, the plan build and the results (no timestamps, sorted keys), so a re-run
of the same hour with the same plan build writes it again byte for byte.
"""

from __future__ import annotations

import builtins
import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

from feedrouter.delivery.parts import Part

FORMAT = 1


@dataclass(frozen=True)
class PlanRef:
    """The plan build a batch routes with (``plan_builds`` row: id, digest, catalog version)."""

    id: int
    digest: str
    catalog_version: int


@dataclass(frozen=True)
class PartInfo:
    """One part as the manifest and the ledger list it."""

    name: str
    results: int
    bytes: int
    sha256: str

    @classmethod
    def of(cls, part: Part) -> PartInfo:
        return cls(part.name, part.results, len(part.data), part.sha256)


@dataclass(frozen=True)
class Manifest:
    """What one subscription received for one hour of one feed.

    ``subscription`` is the subscription's name, ``catalog_id`` its catalog id (written as
    ``subscription_id`` in the JSON, the published format).
    """

    feed: str
    hour: str
    subscriber: str
    subscription: str
    catalog_id: int
    plan: PlanRef
    parts: tuple[PartInfo, ...]

    @property
    def results(self) -> int:
        return sum(part.results for part in self.parts)

    @property
    def bytes(self) -> int:
        return sum(part.bytes for part in self.parts)

    @property
    def digest(self) -> str:
        """One digest for the delivered content: SHA-256 over the parts' digests, in order."""
        return hashlib.sha256("\n".join(part.sha256 for part in self.parts).encode("ascii")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "feed": self.feed,
            "hour": self.hour,
            "subscriber": self.subscriber,
            "subscription": self.subscription,
            "subscription_id": self.catalog_id,
            "plan_build": asdict(self.plan),
            "results": self.results,
            "bytes": self.bytes,
            "digest": self.digest,
            "parts": [asdict(part) for part in self.parts],
        }

    def to_bytes(self) -> builtins.bytes:  # the class's own 'bytes' is the size property
        return (json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n").encode("utf-8")
