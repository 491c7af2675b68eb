"""A batch of the news hour that SIGKILLs its own process after writing ``parts`` part files: what
an OOM kill or a lost machine does to a run half-way through its deliveries.

Usage: ``python -m tests.integration.faults.killed_run CATALOG_URL PLANS_DIR PARTS`` (the S3
settings and credentials come from the environment). Runs the tasks' code in this process
(``inline``) with a 2 s lease, so the next run does not wait long for the dead run's lease.
"""

from __future__ import annotations

import os
import signal
import sys

from feedrouter.catalog.database import create_catalog_engine
from feedrouter.spark import BatchOptions, StoreOpener, route_batch
from feedrouter.storage import FileStore
from feedrouter.storage.s3 import S3Store
from tests.integration.spark_support import HOUR, PART_BYTES


def die_after(parts: int) -> None:
    """Make the process kill itself when it is about to write part number ``parts + 1``."""
    written = 0
    put = S3Store._put

    def counting_put(self: S3Store, key: str, data: bytes) -> None:
        nonlocal written
        if "/part-" in key:
            written += 1
            if written > parts:
                os.kill(os.getpid(), signal.SIGKILL)
        put(self, key, data)

    S3Store._put = counting_put  # type: ignore[method-assign]


def main(url: str, plans: str, parts: str) -> None:
    die_after(int(parts))
    options = BatchOptions(inline=True, max_part_bytes=PART_BYTES, lease_seconds=2)
    route_batch(
        create_catalog_engine(url),
        "news",
        HOUR,
        plans_store=FileStore(plans),
        options=options,
        stores=StoreOpener.from_env(),
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
    sys.exit("the run was not killed: it delivered fewer parts than asked")
