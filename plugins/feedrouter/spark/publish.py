"""Write one subscription's delivery folder for one hour (runs in a Spark task).

The protocol, per folder, is what makes re-runs and task retries exactly-once:

1. withdraw ``_SUCCESS``: readers trust a folder only while it exists, so a folder being rewritten
   is never trusted half-way;
2. write the parts (same keys and bytes for the same feed, hour, plan build and input);
3. delete parts that a previous attempt or run left and this one does not produce;
4. write ``_manifest.json``, then ``_SUCCESS``.

Each subscription lives in exactly one task (the shuffle partitions by subscription), and
speculative execution is off, so no two attempts write one folder at the same time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from feedrouter.delivery import (
    MANIFEST,
    SUCCESS,
    Manifest,
    PartHeader,
    PartInfo,
    Result,
    delivery_dir,
    is_part_key,
    write_parts,
)
from feedrouter.spark.spec import JobSpec, maybe_fail
from feedrouter.storage import ObjectStore

if TYPE_CHECKING:
    from feedrouter.catalog import Target


@dataclass(frozen=True)
class Delivered:
    """What a task delivered to one subscription: its manifest and where the objects are."""

    subscription_id: str  # the router's key of the subscription (its catalog id as text)
    manifest: Manifest
    prefix_uri: str  # the subscriber's output prefix (the store's root)
    folder: str  # the folder's key below it
    object_uris: tuple[str, ...]  # parts, manifest, _SUCCESS, in the order written


def publish(
    spec: JobSpec, target: Target, subscription_id: str, results: Iterable[Result], part_format: int = 1
) -> Delivered:
    """Write the folder of ``target`` with ``results`` (in input order); returns what it holds.
    ``part_format`` 2: the results are join pairs (:mod:`feedrouter.delivery.parts`)."""
    store = spec.stores.open(target.output_prefix)
    folder = delivery_dir(target.subscription, spec.feed, spec.hour)
    store.delete(f"{folder}/{SUCCESS}")
    parts = _write_parts(spec, store, folder, target.subscription, results, part_format)
    maybe_fail(spec.fault, "deliver")
    remove_stale_parts(store, folder, {part.name for part in parts})
    manifest = Manifest(
        feed=spec.feed,
        hour=spec.hour_text,
        subscriber=target.subscriber,
        subscription=target.subscription,
        catalog_id=target.catalog_id,
        plan=spec.plan,
        parts=tuple(parts),
    )
    store.put(f"{folder}/{MANIFEST}", manifest.to_bytes())
    store.put(f"{folder}/{SUCCESS}", b"")
    names = [*(part.name for part in parts), MANIFEST, SUCCESS]
    uris = tuple(store.uri_for(f"{folder}/{name}") for name in names)
    return Delivered(subscription_id, manifest, store.uri, folder, uris)


def _write_parts(
    spec: JobSpec,
    store: ObjectStore,
    folder: str,
    subscription: str,
    results: Iterable[Result],
    part_format: int = 1,
) -> list[PartInfo]:
    header = PartHeader(spec.feed, subscription, spec.hour_text, part_format)
    written = []
    for part in write_parts(header, results, spec.max_part_bytes):
        store.put(f"{folder}/{part.name}", part.data)
        written.append(PartInfo.of(part))
    return written


def remove_stale_parts(store: ObjectStore, folder: str, keep: set[str]) -> int:
    """Delete the folder's part files not named in ``keep``; returns how many."""
    stale = [
        key for key in store.list(folder + "/") if is_part_key(key) and key.rsplit("/", 1)[-1] not in keep
    ]
    for key in stale:
        store.delete(key)
    return len(stale)


def withdraw(store: ObjectStore, folder: str) -> int:
    """Take a whole delivery back: ``_SUCCESS`` first, then the manifest and every part."""
    store.delete(f"{folder}/{SUCCESS}")
    store.delete(f"{folder}/{MANIFEST}")
    return remove_stale_parts(store, folder, set())
