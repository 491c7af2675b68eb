"""Part files, manifests and the layout of a delivery."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from lxml import etree

from feedrouter.delivery import (
    Manifest,
    PartHeader,
    PartInfo,
    PlanRef,
    Result,
    delivery_dir,
    is_input_key,
    is_part_key,
    quarantine_key,
    read_part,
    write_parts,
)
from feedrouter.errors import StorageError

HEADER = PartHeader("news", "titles", "2026-11-22T16")
HOUR = datetime(2026, 11, 22, 16, tzinfo=timezone.utc)


def results(count: int, body: bytes = b"<title>x</title>") -> list[Result]:
    return [Result(f"k{i // 2}.xml", i % 2, f"{i:064x}", body) for i in range(count)]


def test_a_part_lists_results_with_provenance_and_reads_back_byte_for_byte() -> None:
    bodies = [b"<t>a &amp; b</t>", b"text &lt; only", b'<x:y xmlns:x="urn:x"/>']
    given = [Result(f'odd "name" <{i}>.xml', i, "a" * 64, body) for i, body in enumerate(bodies)]
    [part] = write_parts(HEADER, given)
    assert part.name == "part-00000.xml" and part.results == 3
    assert read_part(part.data) == given
    root = etree.fromstring(part.data)
    assert root.get("subscription") == "titles" and root[0].get("source") == 'odd "name" <0>.xml'
    assert root[2][0].tag == "{urn:x}y" and root[0][0].tag == "t"  # results keep their own namespaces


def test_parts_are_cut_by_size_and_a_large_result_gets_its_own() -> None:
    parts = list(write_parts(HEADER, results(10), max_bytes=700))
    assert [p.number for p in parts] == list(range(len(parts))) and len(parts) > 1
    assert all(len(p.data) <= 700 for p in parts)
    assert [r for p in parts for r in read_part(p.data)] == results(10)
    big = Result("big.xml", 0, "b" * 64, b"<big>" + b"x" * 2000 + b"</big>")
    sizes = [p.results for p in write_parts(HEADER, [*results(1), big, *results(1)], max_bytes=700)]
    assert sizes == [1, 1, 1]


def test_parts_and_manifests_are_deterministic() -> None:
    first = [p.data for p in write_parts(HEADER, results(7), 500)]
    assert first == [p.data for p in write_parts(HEADER, results(7), 500)]
    parts = tuple(PartInfo.of(p) for p in write_parts(HEADER, results(7), 500))
    manifest = Manifest("news", "2026-11-22T16", "alice", "titles", 3, PlanRef(1, "d" * 64, 9), parts)
    again = Manifest("news", "2026-11-22T16", "alice", "titles", 3, PlanRef(1, "d" * 64, 9), parts)
    assert manifest.to_bytes() == again.to_bytes()
    data = json.loads(manifest.to_bytes())
    assert data["results"] == 7 and data["plan_build"] == {"id": 1, "digest": "d" * 64, "catalog_version": 9}
    assert [p["name"] for p in data["parts"]] == [f"part-{i:05d}.xml" for i in range(len(parts))]
    assert len(manifest.digest) == 64


def test_delivery_and_quarantine_keys_cannot_escape() -> None:
    assert delivery_dir("../x", "news", HOUR + timedelta(minutes=0)) == "%2E.%2Fx/news/dt=2026-11-22/hour=16"
    long_source = "a/" * 300 + "b.xml"
    key = quarantine_key("news", HOUR, long_source, 7, ".xml")
    assert key.startswith("news/dt=2026-11-22/hour=16/sha256-") and key.endswith("/000007.xml")
    with pytest.raises(StorageError):
        delivery_dir("", "news", HOUR)


def test_which_keys_are_inputs_and_parts() -> None:
    assert is_input_key("a.xml") and is_input_key("sub/b.xml.gz")
    assert not any(map(is_input_key, ["_SUCCESS", "_tmp/a.xml", ".hidden.xml", "a.json", "dir/.x/a.xml"]))
    assert is_part_key("x/part-00012.xml") and not is_part_key("x/_manifest.json")


def test_join_pairs_carry_both_provenances_and_read_back_with_format_1_results() -> None:
    from feedrouter.delivery.parts import Provenance

    left = Provenance("books", "2026-05-01T08", 'a&"b.xml', 0, "a" * 64)
    right = Provenance("blogs", "2026-05-01T07", "c.xml", 3, "b" * 64)
    header = PartHeader("books", "promo", "2026-05-01T08", format=2)
    results = [Result.of_pair(left, right, b"<promo>x</promo>"), Result("d.xml", 1, "c" * 64, b"<y/>")]
    (part,) = write_parts(header, results)
    assert b' format="2">' in part.data.split(b"\n")[1]
    assert read_part(part.data) == results
    assert read_part(part.data)[0].pair == (left, right)
