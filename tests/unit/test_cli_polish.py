"""CLI polish (issue 17, item 6): clean errors for an unknown id and a wrongly shaped subscriptions
file, ``explain --dtd`` in the user's words first, delivered files readable as the umask says."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from feedrouter.cli import main
from feedrouter.workload import dtds


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    # click's own exits are SystemExit; anything else escaped the command as a traceback would
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_an_unknown_id_names_the_file_and_the_closest_ids(tmp_path: Path) -> None:
    subs = write(tmp_path / "subs.json", json.dumps({"sports-eu": "//b", "sports-us": "//c", "x": "//d"}))
    result = invoke("explain", "--subscriptions", str(subs), "--id", "sports-uk")
    assert result.exit_code == 1
    assert f"[FR301] {subs} has no subscription 'sports-uk'; did you mean" in result.output
    assert "'sports-us'" in result.output and "'sports-eu'" in result.output and "'x'" not in result.output


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("subs.json", '{"a": "//a",\n "b": 5}', "subs.json, line 2: the text of 'b' is a number"),
        ("subs.json", '{"a": ["//a"]}', "subs.json, line 1: the text of 'a' is an array"),
        ("subs.json", '[{"id": "a", "text": null}]', "subs.json: the text of 'a' is null"),
        (
            "subs.jsonl",
            '{"id": "a", "text": "//a"}\n{"id": "b", "text": {}}\n',
            "line 2: the text of 'b' is an object",
        ),
        ("subs.json", "{}", "subs.json: no subscriptions in it"),
        ("subs.jsonl", "\n\n", "subs.jsonl: no subscriptions in it"),
    ],
)
def test_a_wrongly_shaped_subscriptions_file_is_refused_naming_the_file_and_the_problem(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    subs = write(tmp_path / name, content)
    (tmp_path / "d.xml").write_bytes(b"<a/>")
    routed = invoke(
        "route", "--subscriptions", str(subs), "--input", str(tmp_path / "d.xml"), "--output", "o"
    )
    explained = invoke("explain", "--subscriptions", str(subs), "--id", "a")
    for result in (routed, explained):
        assert result.exit_code == 1 and message in result.output
    assert not (tmp_path / "o").exists()


def test_an_empty_folder_of_subscriptions_is_refused(tmp_path: Path) -> None:
    (tmp_path / "subs").mkdir()
    result = invoke("explain", "--subscriptions", str(tmp_path / "subs"), "--id", "a")
    assert result.exit_code == 1 and "subs: no subscriptions in it" in result.output


@pytest.fixture
def news(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A subscriptions file (two identical texts, one the DTD rewrites) and the news DTD."""
    texts = {
        "dated": 'for $s in //date.issue where $s/@norm = "11" return <hit>{ $s }</hit>',
        "dated-too": 'for $d in //date.issue where $d/@norm = "11" return <hit>{ $d }</hit>',
        "papers": "/nitf[@version = '3.0']//num",
    }
    yield (
        write(tmp_path / "subs.json", json.dumps(texts)),
        write(tmp_path / "news.dtd", dtds.load("news").text),
    )


def test_explain_speaks_the_users_language_first_then_the_papers_terms(news: tuple[Path, Path]) -> None:
    subs, dtd = news
    result = invoke("explain", "--subscriptions", str(subs), "--id", "dated", "--dtd", str(dtd))
    assert result.exit_code == 0, result.output
    plain, _, paper = result.output.partition("in the paper's terms:")
    assert "shared with other subscriptions:" in plain and "why it is fast:" in plain
    assert "1 other subscription(s) ask for exactly the same result" in plain
    assert "documents where /nitf/head/docdata/date.issue has attribute @norm = '11'" in plain
    assert "what the DTD let it skip:" in plain
    assert "//date.issue can only be /nitf/head/docdata/date.issue" in plain and "not searched" in plain
    for term in ("Claim", "NFA", "SemiJoin", "DupElim", "$bound"):
        assert term not in plain, term
    assert "paths in the shared NFA:" in paper and "optimize dtd" in paper


def test_explain_without_a_dtd_says_what_one_would_add(news: tuple[Path, Path]) -> None:
    subs, _dtd = news
    result = invoke("explain", "--subscriptions", str(subs), "--id", "papers")
    assert result.exit_code == 0, result.output
    assert "none given: pass the feed's --dtd" in result.output
    assert "no other subscription asks for exactly the same result" in result.output
    assert "optimize query" in result.output  # compiled without DTD-driven rewrites


def test_a_dtd_that_fixes_no_step_says_so(news: tuple[Path, Path]) -> None:
    subs, dtd = news
    result = invoke("explain", "--subscriptions", str(subs), "--id", "papers", "--dtd", str(dtd))
    assert result.exit_code == 0, result.output
    # num sits at many depths below nitf in the news DTD: the search stays
    skip = result.output.split("what the DTD let it skip:")[1].split("in the paper's terms:")[0]
    assert skip.strip() == "nothing: the DTD fixes none of its '//' or '*' steps"


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_routed_files_are_readable_as_the_umask_says(tmp_path: Path, umask: int, mode: int) -> None:
    subs = write(tmp_path / "subs.json", json.dumps({"q": "//b", "bad": "//b[position()]"}))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "d.xml").write_bytes(b"<a><b/></a>")
    (tmp_path / "in" / "broken.xml").write_bytes(b"<a>")
    previous = os.umask(umask)
    try:
        args = (
            "--subscriptions",
            str(subs),
            "--input",
            str(tmp_path / "in"),
            "--output",
            str(tmp_path / "o"),
        )
        result = invoke("route", *args)
    finally:
        os.umask(previous)
    assert result.exit_code == 0, result.output
    written = [p for p in (tmp_path / "o").rglob("*") if p.is_file()]
    assert {p.name for p in written} == {"d.xml", "broken.error.json"}
    assert {stat.S_IMODE(p.stat().st_mode) for p in written} == {mode}


def test_an_input_folder_without_documents_names_where_it_looked(tmp_path: Path) -> None:
    subs = write(tmp_path / "subs.json", json.dumps({"q": "//b"}))
    (tmp_path / "in" / "dt=2026-11-22").mkdir(parents=True)
    (tmp_path / "in" / "dt=2026-11-22" / "notes.txt").write_text("not a document")
    result = invoke("route", "--subscriptions", str(subs), "--input", str(tmp_path / "in"), "--output", "o")
    assert result.exit_code == 0, result.output
    assert f"no .xml or .xml.gz documents under {tmp_path / 'in'}" in result.stderr
    assert "routed 0 documents" in result.stdout
