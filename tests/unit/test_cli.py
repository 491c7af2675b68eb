"""The local CLI: generate sample data, route it, reject bad documents, skip bad subscriptions."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from feedrouter.cli import main
from feedrouter.paths import safe_component


def run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_generate_then_route_writes_one_file_per_match(tmp_path: Path) -> None:
    run(
        "generate",
        "--output",
        str(tmp_path / "in"),
        "--dtd",
        "news",
        "--documents",
        "12",
        "--subscriptions",
        "40",
    )
    out = run(
        "route",
        "--subscriptions",
        str(tmp_path / "in" / "subscriptions.json"),
        "--input",
        str(tmp_path / "in" / "documents"),
        "--dtd",
        str(tmp_path / "in" / "news.dtd"),
        "--output",
        str(tmp_path / "out"),
    )
    assert "routed 12 documents through 40 subscriptions" in out
    files = list((tmp_path / "out").glob("*/*.xml"))
    assert files and all(f.read_bytes().startswith(b"<") for f in files)


def test_bad_documents_are_rejected_with_a_report_and_the_batch_goes_on(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.xml").write_bytes(b"<a><b>1</b></a>")
    (docs / "bad.xml").write_bytes(b"<a><b>1</a>")
    subs = tmp_path / "subs.json"
    subs.write_text(json.dumps({"b": "//b", "broken": "//b[position()]"}))
    result = CliRunner().invoke(
        main, ["route", "--subscriptions", str(subs), "--input", str(docs), "--output", str(tmp_path / "out")]
    )
    assert result.exit_code == 0
    assert "skipped subscription broken" in result.output and "FR107" in result.output
    assert (tmp_path / "out" / "b" / "good.xml").read_bytes() == b"<b>1</b>"
    report = json.loads((tmp_path / "out" / "_rejected" / "bad.error.json").read_text())
    assert report["line"] == 1 and report["code"] == "FR200"


def test_subscription_ids_cannot_escape_the_output_folder(tmp_path: Path) -> None:
    subs = tmp_path / "subs.json"
    subs.write_text(json.dumps({"../../escape": "//a", ".hidden": "//a"}))
    (tmp_path / "d.xml").write_bytes(b"<a/>")
    run(
        "route",
        "--subscriptions",
        str(subs),
        "--input",
        str(tmp_path / "d.xml"),
        "--output",
        str(tmp_path / "out"),
    )
    assert not (tmp_path / "escape").exists()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        [safe_component("../../escape"), safe_component(".hidden")]
    )
    assert all("/" not in p.name and not p.name.startswith(".") for p in (tmp_path / "out").iterdir())


def test_explain_prints_the_plan(tmp_path: Path) -> None:
    subs = tmp_path / "subs.json"
    subs.write_text(json.dumps({"q": "for $s in //section where $s/title = 'x' return $s"}))
    assert "SharedJoin" in run("explain", "--subscriptions", str(subs), "--id", "q")


def test_gzipped_documents_and_jsonl_subscriptions_are_read(tmp_path: Path) -> None:
    import gzip

    (tmp_path / "m.xml.gz").write_bytes(gzip.compress(b"<a><b>z</b></a>"))
    subs = tmp_path / "subs.jsonl"
    subs.write_text('{"id": "q", "text": "//b"}\n')
    run(
        "route",
        "--subscriptions",
        str(subs),
        "--input",
        str(tmp_path / "m.xml.gz"),
        "--output",
        str(tmp_path / "o"),
    )
    assert (tmp_path / "o" / "q" / "m.xml").read_bytes() == b"<b>z</b>"
