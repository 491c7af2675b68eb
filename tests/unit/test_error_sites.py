"""Every place that names an error code names one of the table, and the class it raises is the one the
table gives that code: read from the source, so a new raise site is checked the day it is written."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import feedrouter.errors as errors_module
from feedrouter.errors import TABLE
from tests.conftest import ROOT

PACKAGE = ROOT / "plugins" / "feedrouter"


@dataclass(frozen=True)
class Site:
    where: str
    code: str
    raised: str | None  # the class a call names, or None where the table picks it (error())


def _literal_code(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("FR"):
        return node.value
    return None


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _sites_in(path: Path) -> list[Site]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    sites = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        where = f"{path.relative_to(ROOT)}:{node.lineno}"
        name = _called_name(node)
        if name == "error" and node.args and (code := _literal_code(node.args[0])):
            sites.append(Site(where, code, None))
        for keyword in node.keywords:
            if keyword.arg == "code" and (code := _literal_code(keyword.value)):
                sites.append(Site(where, code, name))
    return sites


def all_sites() -> list[Site]:
    return [site for path in sorted(PACKAGE.rglob("*.py")) for site in _sites_in(path)]


def test_the_scan_finds_the_raise_sites() -> None:
    sites = all_sites()
    assert len(sites) >= 20
    assert any(site.raised is None for site in sites), "no error(...) call found: the scan is broken"


def test_every_code_named_at_a_raise_site_is_in_the_table() -> None:
    unknown = [f"{site.where}: {site.code}" for site in all_sites() if site.code not in TABLE]
    assert not unknown, "codes missing from feedrouter.errors.TABLE:\n" + "\n".join(unknown)


def test_a_class_raised_with_a_code_is_the_class_the_table_gives_it() -> None:
    wrong = []
    for site in all_sites():
        if site.raised is None or site.code not in TABLE:
            continue
        raised = getattr(errors_module, site.raised, None)
        if not isinstance(raised, type):
            continue  # a call that is not an error class (a helper taking code=...): error() decides
        expected = TABLE[site.code][0]
        if raised is not expected:
            wrong.append(f"{site.where}: {site.raised}(code={site.code!r}), the table: {expected.__name__}")
    assert not wrong, "use error(code, ...) or the table's class:\n" + "\n".join(wrong)
