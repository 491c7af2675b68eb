"""Containers and compressed objects are cut with bounded memory, whatever they hold.

Each case cuts one input file in a child process and reports the growth of its peak resident size
(``ru_maxrss`` after the cut minus before it; the file is streamed from disk, never loaded). The
bounds are generous (tens of MB) against what the old splitter took on the same inputs (hundreds of
MB to GB): a tree kept outside records, wrappers piling up, a record serialized whole before its
size check, a giant attribute value buffered whole.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import BinaryIO

import pytest

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"
MIB = 1 << 20

CHILD = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from feedrouter.delivery.messages import Splitter

path, record, limit = sys.argv[2], sys.argv[3] or None, int(sys.argv[4])
splitter = Splitter(record, max_message_bytes=limit)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
outcomes, ok, sizes = [], 0, 0
with open(path, "rb") as stream:
    for message in splitter.messages(path.rsplit("/", 1)[1], stream):
        if message.error is None:
            ok += 1
            sizes += len(message.data)
            if ok > 3:
                continue  # counted, not listed: a million records are not kept
        outcomes.append("ok" if message.error is None else message.error.code + "*" * message.whole_object)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"outcomes": outcomes, "ok": ok, "bytes": sizes, "growth_mb": (after - before) / 1024}))
"""


def cut_in_child(path: Path, record: str | None, limit: int = 64 * MIB) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(PLUGINS), str(path), record or "", str(limit)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def write(path: Path, head: bytes, filler: bytes, count: int, tail: bytes) -> Path:
    """``head + filler * count + tail`` written a block at a time (gzip'd for a ``.gz`` name)."""
    with _opened(path) as out:
        out.write(head)
        per_block = max(1, MIB // len(filler))
        while count > 0:
            out.write(filler * min(per_block, count))
            count -= per_block
        out.write(tail)
    return path


def _opened(path: Path) -> BinaryIO:
    if path.name.endswith(".gz"):
        return gzip.GzipFile(path, "wb", compresslevel=1)  # type: ignore[return-value]
    return path.open("wb")


def test_three_million_elements_outside_records_cost_no_memory(tmp_path: Path) -> None:
    # issue 18, item 4: a 0.2 MB .gz of 3M non-record elements peaked at 1.2 GB
    path = write(tmp_path / "flat.xml.gz", b"<c>", b"<x/>", 3_000_000, b"<rec>1</rec></c>")
    assert path.stat().st_size < 300_000
    got = cut_in_child(path, "rec")
    assert got["outcomes"] == ["ok"] and got["growth_mb"] < 60


def test_records_wrapped_in_other_elements_do_not_pile_up(tmp_path: Path) -> None:
    # half a million wrapped records: the old splitter kept every wrapper (130 MB here, 865 MB reported)
    wrapped = b"".join(b"<w><rec><v>%d</v></rec></w>" % i for i in range(1000))
    path = write(tmp_path / "wrapped.xml", b"<c>", wrapped, 500, b"</c>")
    got = cut_in_child(path, "rec")
    assert got["ok"] == 500_000 and got["outcomes"] == ["ok"] * 3
    assert got["growth_mb"] < 60


def test_an_oversized_record_is_dropped_while_it_is_read(tmp_path: Path) -> None:
    # one 24 MB record was serialized whole (832 MB) before its size was checked
    filler = b"<v>" + b"x" * 100 + b"</v>"
    path = write(
        tmp_path / "big.xml", b"<c><rec>", filler, 24 * MIB // len(filler), b"</rec><rec>2</rec></c>"
    )
    got = cut_in_child(path, "rec", limit=MIB)
    assert got["outcomes"] == ["FR201", "ok"] and got["growth_mb"] < 60


def test_a_compressed_text_bomb_inside_a_record_is_dropped_and_the_next_record_kept(tmp_path: Path) -> None:
    path = write(tmp_path / "text.xml.gz", b"<c><rec>", b"a", 300_000_000, b"</rec><rec>2</rec></c>")
    got = cut_in_child(path, "rec", limit=MIB)
    assert got["outcomes"] == ["FR201", "ok"] and got["growth_mb"] < 60


@pytest.mark.parametrize(
    ("head", "tail"),
    [(b'<c><rec x="', b'"/><rec>2</rec></c>'), (b"<c><!--", b"--><rec>2</rec></c>")],
    ids=["attribute value", "comment"],
)
def test_one_giant_piece_of_markup_ends_the_object_without_being_buffered(
    tmp_path: Path, head: bytes, tail: bytes
) -> None:
    # libxml2 holds a tag or a comment whole before reporting it: it stops past the message limit
    path = write(tmp_path / "markup.xml.gz", head, b"a", 300_000_000, tail)
    got = cut_in_child(path, "rec", limit=MIB)
    assert got["outcomes"] == ["FR201*"] and got["growth_mb"] < 60


def test_a_gzip_bomb_plain_object_is_decompressed_only_up_to_the_limit(tmp_path: Path) -> None:
    # issue 18, item 13: a 1 MB gzip bomb reached 2 GB before the size check
    path = write(tmp_path / "bomb.xml.gz", b"<a>", b"a", 512_000_000, b"</a>")
    assert path.stat().st_size < 3 * MIB
    got = cut_in_child(path, None)
    # the default limit (64 MiB) is read once into one buffer: not twice, not the whole expansion
    assert got["outcomes"] == ["FR206"] and got["growth_mb"] < 100
