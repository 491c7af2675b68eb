"""feedrouter.console: names escaped for the terminal, errors turned into one clean message."""

from __future__ import annotations

import click
import pytest
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from feedrouter.console import escape_name, escape_text, reported
from feedrouter.errors import error


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("plain/id é", "plain/id é"),
        ("a\x1b[2Jb", "a\\x1b[2Jb"),
        ("bell\x07", "bell\\x07"),
        ("line\nfeed\ttab\rcr", "line\\x0afeed\\x09tab\\x0dcr"),
        ("del\x7f c1\x9b", "del\\x7f c1\\x9b"),
        ("rtl\u202eevil\u2066", "rtl\\u202eevil\\u2066"),
        ("not-utf8-\udcff", "not-utf8-\\udcff"),
    ],
)
def test_escape_name_escapes_every_control_character(name: str, shown: str) -> None:
    assert escape_name(name) == shown


def test_escape_text_keeps_line_feeds_and_tabs() -> None:
    assert escape_text("line 1\n\tcaret ^\x1b[0m") == "line 1\n\tcaret ^\\x1b[0m"


def message_of(exc: BaseException, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("FEEDROUTER_DATABASE_URL", "postgresql://u:hunter2@db.example:6543/cat")
    with pytest.raises(click.ClickException) as info, reported():
        raise exc
    return info.value.message


def test_feedrouter_errors_keep_their_code_and_are_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    shown = message_of(error("FR405", "no feed named 'x\x1b[1m'"), monkeypatch)
    assert shown == "[FR405] no feed named 'x\\x1b[1m'"


def test_os_errors_name_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    shown = message_of(FileNotFoundError(2, "No such file or directory", "/in/m\x1b.xml"), monkeypatch)
    assert shown == "/in/m\\x1b.xml: No such file or directory"


def test_a_refused_connection_is_fr402_with_the_host_and_no_password(monkeypatch: pytest.MonkeyPatch) -> None:
    cause = Exception("connection to db.example refused (password hunter2 rejected)\nmore lines")
    shown = message_of(OperationalError("SELECT 1", {}, cause), monkeypatch)
    assert shown.startswith("[FR402] the catalog postgresql://u:***@db.example:6543/cat cannot be reached")
    assert "is the database at db.example:6543 running? check FEEDROUTER_DATABASE_URL" in shown
    assert "hunter2" not in shown and "more lines" not in shown


def test_a_catalog_error_caused_by_a_lost_connection_is_shown_as_fr402(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wrapped = error("FR400", "plan build of 'news' failed: refused")
    wrapped.__cause__ = OperationalError("SELECT 1", {}, Exception("refused"))
    assert message_of(wrapped, monkeypatch).startswith("[FR402]")


def test_missing_tables_say_to_upgrade(monkeypatch: pytest.MonkeyPatch) -> None:
    shown = message_of(
        ProgrammingError("SELECT", {}, Exception('relation "feeds" does not exist')), monkeypatch
    )
    assert shown.startswith("[FR400]") and "feedrouter db upgrade" in shown


def test_other_database_errors_are_fr400(monkeypatch: pytest.MonkeyPatch) -> None:
    shown = message_of(IntegrityError("INSERT", {}, Exception("duplicate key")), monkeypatch)
    assert shown == "[FR400] the catalog refused the request (duplicate key)"


def test_other_exceptions_pass_through() -> None:
    with pytest.raises(ZeroDivisionError), reported():
        raise ZeroDivisionError
