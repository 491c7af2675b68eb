"""The single-process loop, and the delivery package's purity."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from feedrouter.delivery import PartHeader, Splitter, read_part, route_locally
from feedrouter.router import Router
from tests.conftest import ROOT


def test_the_loop_routes_every_message_in_input_order_and_keeps_failures() -> None:
    router = Router.compile([("t", "//title"), ("none", "//nothing")])
    objects = [
        ("a.xml", io.BytesIO(b"<c><m><title>1</title></m><m><title>2</title></m></c>")),
        ("b.xml", io.BytesIO(b"<c><m><title>3</title></m><m><oops></c>")),
    ]
    run = route_locally(router, Splitter("m"), objects)
    assert [(r.source, r.index, r.body) for r in run.results["t"]] == [
        ("a.xml", 0, b"<title>1</title>"),
        ("a.xml", 1, b"<title>2</title>"),
        ("b.xml", 0, b"<title>3</title>"),
    ]
    assert (run.documents, run.matches, len(run.rejected)) == (4, 3, 1)
    assert run.rejected[0].message.whole_object and run.bytes > 80
    parts = run.parts(lambda sid: PartHeader("f", sid, "2026-11-22T16"))
    assert list(parts) == ["t"] and read_part(parts["t"][0].data) == run.results["t"]


def test_the_delivery_package_loads_no_adapter_dependency() -> None:
    code = (
        "import sys, io; sys.path.insert(0, 'plugins');"
        "from feedrouter.delivery import route_locally, Splitter, write_parts;"
        "from feedrouter import Router;"
        "route_locally(Router.compile([('a', '//x')]), Splitter(), [('k.xml', io.BytesIO(b'<x/>'))]);"
        "bad = [m for m in ('pyspark', 'sqlalchemy', 'boto3', 'botocore', 'airflow') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_delivered_files_in_a_file_store_are_readable_as_the_umask_says(
    tmp_path: Path, umask: int, mode: int
) -> None:
    """Parts and manifests land in a ``file://`` store through FileStore.put: a subscriber's group
    reads them when the umask allows it (a temporary file from mkstemp alone would stay 0600)."""
    from feedrouter.storage.local import FileStore

    store = FileStore(tmp_path)
    previous = os.umask(umask)
    try:
        store.put("acme/dt=2026-11-22/hour=16/part-00000.xml", b"<b/>")
        store.put("acme/dt=2026-11-22/hour=16/_manifest.json", b"{}")
    finally:
        os.umask(previous)
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert len(written) == 2 and {stat.S_IMODE(path.stat().st_mode) for path in written} == {mode}
