"""``feedrouter route`` never ends in a traceback: bad inputs are reported and the run goes on, output
names never collide and stay bounded, names are printed escaped (issue 18, item 13)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from feedrouter.cli import MAX_NAME, main, output_component, subscription_folder


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    # click's own exits are SystemExit; anything else escaped the command as a traceback would
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result


def route(
    tmp_path: Path, subscriptions: dict[str, str], *inputs: Path, options: tuple[str, ...] = ()
) -> Result:
    subs = tmp_path / "subs.json"
    subs.write_text(json.dumps(subscriptions), encoding="utf-8")
    args = ["route", "--subscriptions", str(subs), "--output", str(tmp_path / "out"), *options]
    for item in inputs:
        args += ["--input", str(item)]
    return invoke(*args)


def report(tmp_path: Path, name: str) -> dict:  # type: ignore[type-arg]
    return json.loads((tmp_path / "out" / "_rejected" / f"{name}.error.json").read_text())


def docs_folder(tmp_path: Path, files: dict[str, bytes]) -> Path:
    folder = tmp_path / "docs"
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def test_truncated_and_corrupt_gzip_are_rejected_with_fr206_and_the_run_goes_on(tmp_path: Path) -> None:
    whole = gzip.compress(b"<a><b>t</b></a>" * 50)
    docs = docs_folder(
        tmp_path,
        {
            "a-truncated.xml.gz": whole[:-12],
            "b-corrupt.xml.gz": b"\x1f\x8b" + b"not deflate data" * 4,
            "c-bad-deflate.xml.gz": whole[:10] + b"\xff" * 30 + whole[40:],
            "d-good.xml": b"<a><b>ok</b></a>",
        },
    )
    result = route(tmp_path, {"q": "//b"}, docs)
    assert result.exit_code == 0
    assert "4 documents through 1 subscriptions" in result.output.replace("routed ", "")
    for name in ("a-truncated", "b-corrupt", "c-bad-deflate"):
        assert report(tmp_path, name)["code"] == "FR206"
    assert (tmp_path / "out" / "q" / "d-good.xml").read_bytes() == b"<b>ok</b>"


def test_a_gzip_bomb_is_refused_at_the_document_limit(tmp_path: Path) -> None:
    bomb = gzip.compress(b"<a>" + b" " * (16 << 20) + b"<b>x</b></a>")  # 16 MiB from ~16 KB
    docs = docs_folder(tmp_path, {"bomb.xml.gz": bomb, "ok.xml": b"<a><b>y</b></a>"})
    result = route(tmp_path, {"q": "//b"}, docs, options=("--max-document-bytes", str(1 << 20)))
    assert result.exit_code == 0
    assert report(tmp_path, "bomb")["code"] == "FR206"
    assert "more than the message limit of 1048576 bytes" in report(tmp_path, "bomb")["error"]
    assert (tmp_path / "out" / "q" / "ok.xml").exists()


def test_inputs_with_the_same_file_name_in_different_folders_do_not_overwrite_each_other(
    tmp_path: Path,
) -> None:
    docs = docs_folder(tmp_path, {"x/msg.xml": b"<a><b>x</b></a>", "y/msg.xml": b"<a><b>y</b></a>"})
    assert route(tmp_path, {"q": "//b"}, docs).exit_code == 0
    assert (tmp_path / "out" / "q" / "x" / "msg.xml").read_bytes() == b"<b>x</b>"
    assert (tmp_path / "out" / "q" / "y" / "msg.xml").read_bytes() == b"<b>y</b>"


def test_files_named_alike_under_two_inputs_get_distinct_deterministic_names(tmp_path: Path) -> None:
    docs = docs_folder(tmp_path, {"x/msg.xml": b"<a><b>x</b></a>", "y/msg.xml": b"<a><b>y</b></a>"})
    names = []
    for _run in range(2):
        assert route(tmp_path, {"q": "//b"}, docs / "x" / "msg.xml", docs / "y" / "msg.xml").exit_code == 0
        names.append(sorted(p.name for p in (tmp_path / "out" / "q").iterdir()))
    assert names[0] == names[1] and len(names[0]) == 2 and "msg.xml" in names[0]
    contents = {(tmp_path / "out" / "q" / n).read_bytes() for n in names[0]}
    assert contents == {b"<b>x</b>", b"<b>y</b>"}


def test_the_same_file_named_twice_is_routed_once(tmp_path: Path) -> None:
    docs = docs_folder(tmp_path, {"m.xml": b"<a><b>x</b></a>", "x/m.xml": b"<a><b>y</b></a>"})
    result = route(tmp_path, {"q": "//b"}, docs, docs / "m.xml")
    assert "routed 2 documents" in result.output
    result = route(tmp_path, {"q": "//b"}, docs / "m.xml", docs / "x" / "m.xml", docs / "x" / "m.xml")
    assert "routed 2 documents" in result.output


def test_names_differing_only_in_case_do_not_collide(tmp_path: Path) -> None:
    docs = docs_folder(tmp_path, {"a/M.xml": b"<a><b>1</b></a>"})
    other = docs_folder(tmp_path / "second", {"m.xml": b"<a><b>2</b></a>"})
    assert route(tmp_path, {"q": "//b"}, docs / "a" / "M.xml", other / "m.xml").exit_code == 0
    assert len(list((tmp_path / "out" / "q").iterdir())) == 2


@pytest.mark.parametrize("stem", ["L" * 250, "é" * 120, "%" * 200])
def test_long_file_names_are_routed_under_a_bounded_name(tmp_path: Path, stem: str) -> None:
    docs = docs_folder(tmp_path, {f"{stem}.xml": b"<a><b>1</b></a>", "ok.xml": b"<a><b>2</b></a>"})
    result = route(tmp_path, {"q": "//b"}, docs)
    assert result.exit_code == 0 and "0 documents rejected" in result.output
    written = [p.name for p in (tmp_path / "out" / "q").iterdir()]
    assert len(written) == 2 and all(len(name) <= MAX_NAME + len(".xml") for name in written)


def test_long_subscription_ids_get_bounded_folders() -> None:
    long_a, long_b = "s" * 300, "s" * 299 + "t"
    assert len(output_component(long_a)) == MAX_NAME
    assert output_component(long_a) != output_component(long_b)
    assert output_component("plain-id_1.x") == "plain-id_1.x"
    assert "~" not in output_component("a~b")  # '~' only ever comes from the bounding suffix


def test_a_subscription_called_like_the_reports_folder_gets_another_folder(tmp_path: Path) -> None:
    docs = docs_folder(tmp_path, {"bad.xml": b"<a>", "good.xml": b"<a><b>1</b></a>"})
    assert route(tmp_path, {"_rejected": "//b"}, docs).exit_code == 0
    assert subscription_folder("_rejected") == "%5Frejected"
    assert (tmp_path / "out" / "%5Frejected" / "good.xml").exists()
    assert sorted(p.name for p in (tmp_path / "out" / "_rejected").iterdir()) == ["bad.error.json"]


@pytest.mark.parametrize(
    ("content", "suffix", "line"),
    [
        ('{\n "a": "//a",\n "": "//b"\n}', ".json", 3),
        ('{"id": "a", "text": "//a"}\n{"id": "", "text": "//b"}\n', ".jsonl", 2),
        ('{"id": "a", "text": "//a"}\n{"id": "  ", "text": "//b"}\n', ".jsonl", 2),
    ],
)
def test_an_empty_subscription_id_is_an_error_naming_the_line(
    tmp_path: Path, content: str, suffix: str, line: int
) -> None:
    subs = tmp_path / f"subs{suffix}"
    subs.write_text(content)
    (tmp_path / "d.xml").write_bytes(b"<a/>")
    result = invoke(
        "route", "--subscriptions", str(subs), "--input", str(tmp_path / "d.xml"), "--output", "o"
    )
    assert result.exit_code != 0
    assert f"line {line}: a subscription has an empty id" in result.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "a", "text": "//a"}\n{"id": "a", "text": "//b"}\n', "line 2: the id 'a' is repeated"),
        ('{"id": "a", "text": "//a"}\n{"text": "//b"}\n', 'line 2: expected {"id": …, "text": …}'),
        ('{"id": "a", "text": "//a"}\n{"id": \n', "line 2: not JSON"),
    ],
)
def test_malformed_subscription_files_are_errors_naming_the_line(
    tmp_path: Path, content: str, message: str
) -> None:
    subs = tmp_path / "subs.jsonl"
    subs.write_text(content)
    (tmp_path / "d.xml").write_bytes(b"<a/>")
    result = invoke(
        "route", "--subscriptions", str(subs), "--input", str(tmp_path / "d.xml"), "--output", "o"
    )
    assert result.exit_code != 0 and message in result.output


def test_repeated_keys_of_a_json_object_are_refused(tmp_path: Path) -> None:
    subs = tmp_path / "subs.json"
    subs.write_text('{"a": "//a",\n"a": "//b"}')
    (tmp_path / "d.xml").write_bytes(b"<a/>")
    result = invoke(
        "route", "--subscriptions", str(subs), "--input", str(tmp_path / "d.xml"), "--output", "o"
    )
    assert result.exit_code != 0 and "the id 'a' is repeated" in result.output


def test_names_with_terminal_control_characters_are_printed_escaped(tmp_path: Path) -> None:
    evil_file = "m\x1b]0;owned\x07.xml"
    docs = docs_folder(tmp_path, {evil_file: b"<a>", "ok.xml": b"<a/>"})
    result = route(tmp_path, {"s\x1b[2J\u202e": "//b[position()]", "q": "//b"}, docs)
    assert result.exit_code == 0
    assert "\x1b" not in result.output and "\x07" not in result.output and "\u202e" not in result.output
    assert "skipped subscription s\\x1b[2J\\u202e" in result.output
    assert "rejected " in result.output and "m\\x1b]0;owned\\x07.xml" in result.output


def test_containers_are_cut_into_records_named_by_index(tmp_path: Path) -> None:
    container = b"<c><rec><b>1</b></rec><rec><b>2</b></rec><rec><b>3</b></recc></c>"
    docs = docs_folder(tmp_path, {"batch.xml": container})
    result = route(tmp_path, {"q": "//b"}, docs, options=("--record-element", "rec"))
    assert result.exit_code == 0
    assert (tmp_path / "out" / "q" / "batch~r0.xml").read_bytes() == b"<b>1</b>"
    assert (tmp_path / "out" / "q" / "batch~r1.xml").read_bytes() == b"<b>2</b>"
    assert report(tmp_path, "batch~r2")["code"] == "FR200"


def test_an_unwritable_output_folder_is_one_clean_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "d.xml").write_bytes(b"<a/>")
    subs = tmp_path / "s.json"
    subs.write_text('{"q": "//a"}')
    out = tmp_path / "file" / "out"
    result = invoke(
        "route", "--subscriptions", str(subs), "--input", str(tmp_path / "d.xml"), "--output", str(out)
    )
    assert result.exit_code == 1 and "Error: " in result.output and str(out) in result.output


def test_explain_of_an_unknown_or_invalid_subscription_is_one_clean_error(tmp_path: Path) -> None:
    subs = tmp_path / "s.json"
    subs.write_text('{"q": "//a", "bad": "//a[position()]"}')
    for sid, code in (("nope", "FR301"), ("bad", "FR107")):
        result = invoke("explain", "--subscriptions", str(subs), "--id", sid)
        assert result.exit_code == 1 and f"[{code}]" in result.output


def test_subscription_and_dtd_files_that_are_not_utf8_are_clean_errors(tmp_path: Path) -> None:
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "q.xq").write_bytes(b"//a[. = '\xff']")
    (tmp_path / "d.xml").write_bytes(b"<a/>")
    (tmp_path / "feed.dtd").write_bytes(b"<!ELEMENT a (#PCDATA)> \xfe")
    args = ["route", "--input", str(tmp_path / "d.xml"), "--output", str(tmp_path / "o")]
    result = invoke(*args, "--subscriptions", str(tmp_path / "subs"))
    assert result.exit_code == 1 and "q.xq: not UTF-8 text" in result.output
    (tmp_path / "subs" / "q.xq").write_text("//a")
    result = invoke(*args, "--subscriptions", str(tmp_path / "subs"), "--dtd", str(tmp_path / "feed.dtd"))
    assert result.exit_code == 1 and "feed.dtd: not UTF-8 text" in result.output


@pytest.mark.parametrize("content", ['[["a", "//a"]]', "[1]", '"just a string"', '[{"id": "a"}]'])
def test_json_of_the_wrong_shape_is_a_clean_error(tmp_path: Path, content: str) -> None:
    subs = tmp_path / "subs.json"
    subs.write_text(content)
    (tmp_path / "d.xml").write_bytes(b"<a/>")
    result = invoke(
        "route", "--subscriptions", str(subs), "--input", str(tmp_path / "d.xml"), "--output", "o"
    )
    assert result.exit_code == 1 and "subs.json" in result.output


def test_a_repeated_non_ascii_key_is_reported_with_its_line(tmp_path: Path) -> None:
    subs = tmp_path / "subs.json"
    subs.write_text('{"é": "//a",\n"é": "//b"}', encoding="utf-8")
    (tmp_path / "d.xml").write_bytes(b"<a/>")
    result = invoke(
        "route", "--subscriptions", str(subs), "--input", str(tmp_path / "d.xml"), "--output", "o"
    )
    assert result.exit_code == 1 and "line 2: the id 'é' is repeated" in result.output


def test_an_output_that_cannot_be_written_ends_the_run_with_one_clean_error(tmp_path: Path) -> None:
    docs = docs_folder(tmp_path, {"m.xml": b"<a><b>x</b></a>"})
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "q").write_text("a file where the subscription's folder should be")
    result = route(tmp_path, {"q": "//b"}, docs)
    assert result.exit_code == 1 and "Error: " in result.output and "rejected" not in result.output


def test_an_internal_error_on_one_document_is_reported_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from feedrouter import Router
    from feedrouter.router import RouteOutcome

    real_route = Router.route_outcome

    def flaky(self: Router, document: bytes, source: str | None = None) -> RouteOutcome:
        if b"boom" in document:
            raise RuntimeError("a bug")
        return real_route(self, document, source)

    monkeypatch.setattr(Router, "route_outcome", flaky)
    docs = docs_folder(tmp_path, {"a.xml": b"<a><b>boom</b></a>", "b.xml": b"<a><b>ok</b></a>"})
    result = route(tmp_path, {"q": "//b"}, docs)
    assert result.exit_code == 0 and "1 documents rejected" in result.output
    assert report(tmp_path, "a")["error"] == "internal error: RuntimeError('a bug')"
    assert (tmp_path / "out" / "q" / "b.xml").read_bytes() == b"<b>ok</b>"


def test_a_long_subscription_id_is_routed_into_a_bounded_folder(tmp_path: Path) -> None:
    docs = docs_folder(tmp_path, {"m.xml": b"<a><b>x</b></a>"})
    result = route(tmp_path, {"é" * 150: "//b", "q" * 400: "//b"}, docs)
    assert result.exit_code == 0 and "2 results" in result.output
    folders = [p.name for p in (tmp_path / "out").iterdir()]
    assert len(folders) == 2 and all(len(name) == MAX_NAME for name in folders)


def test_a_result_refused_to_one_subscription_is_reported_in_its_place(tmp_path: Path) -> None:
    """The routing loop's per-subscription failures reach the command line (issue 13, step 7): a
    result past --max-result-bytes (FR310) or past --max-document-result-bytes for the document
    (FR311) is a report where the result would be; the other subscriptions get theirs."""
    container = b"<c><rec><a>1</a><b>22222222</b></rec><rec><a>3</a></rec></c>"
    docs = docs_folder(tmp_path, {"batch.xml": container})
    options = ("--record-element", "rec", "--max-result-bytes", "10")
    result = route(tmp_path, {"a": "//a", "b": "//b"}, docs, options=options)
    assert result.exit_code == 0 and ", 1 results refused" in result.output
    assert "refused b a result of" in result.output
    refused = json.loads((tmp_path / "out" / "b" / "batch~r0.error.json").read_text())
    assert (refused["code"], refused["subscription"]) == ("FR310", "b")
    assert (
        refused["source"].endswith("batch.xml#0") and not (tmp_path / "out" / "b" / "batch~r0.xml").exists()
    )
    assert [p.name for p in sorted((tmp_path / "out" / "a").iterdir())] == ["batch~r0.xml", "batch~r1.xml"]

    options = ("--max-document-result-bytes", "10")
    result = route(
        tmp_path, {"a": "//a", "b": "//b"}, docs_folder(tmp_path, {"one.xml": container}), options=options
    )
    codes = {json.loads(p.read_text())["code"] for p in (tmp_path / "out").rglob("one.error.json")}
    assert result.exit_code == 0 and codes == {"FR311"}
