"""Shared pieces of the spark-submit tests: the packed executor environment, built once and kept.

Building it (a wheel, a fresh virtualenv with feedrouter's runtime dependencies and Arrow,
venv-pack) takes a minute or more; it is kept in pytest's cache under a key of everything that goes
into it (feedrouter's sources, pyproject.toml, the pinned extras), so it is rebuilt only when one of
them changed.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import tempfile
from pathlib import Path

import pytest

from feedrouter.spark.package import (
    APPLICATION_NAME,
    ARCHIVE_NAME,
    Package,
    build_package,
    pinned_extras,
    project_root,
)


def package_key() -> str:
    """A digest of what the packed environment is built from."""
    root = project_root()
    digest = hashlib.sha256("\n".join(pinned_extras()).encode())
    package = root / "plugins" / "feedrouter"
    sources = [root / "pyproject.toml", root / "setup.py", *package.rglob("*.py"), *package.rglob("*.pyx")]
    for path in sorted(sources):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def packed_environment(config: pytest.Config) -> Package:
    """The package of the current sources, from pytest's cache or built into it (by one test
    process at a time: test workers that need it together would build into one folder, each
    removing the other's wheel)."""
    cache = getattr(config, "cache", None)  # None with -p no:cacheprovider: build afresh
    base = Path(cache.mkdir("feedrouter-spark-package")) if cache else Path(tempfile.mkdtemp())
    with (base / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        return _cached_or_built(base)


def _cached_or_built(base: Path) -> Package:
    folder = base / package_key()
    wheels = sorted(folder.glob("feedrouter-*.whl"))
    archive, application = folder / ARCHIVE_NAME, folder / APPLICATION_NAME
    if wheels and archive.is_file() and application.is_file():
        return Package(wheels[0], archive, application)
    for stale in base.iterdir():  # packages of older sources: 170 MB each
        if stale != folder and stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
    return build_package(folder, compress_level=1)
