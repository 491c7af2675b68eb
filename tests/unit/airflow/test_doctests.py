"""The Airflow adapter's docstring examples, run here among the Airflow tests (the root conftest.py
keeps these modules out of pytest's ``--doctest-modules`` collection, which imports them early)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

pytest.importorskip("airflow")

import feedrouter.airflow

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(feedrouter.airflow.__path__, "feedrouter.airflow.")
)


def test_the_package_has_examples_to_run() -> None:
    assert "feedrouter.airflow.triggers" in MODULES and "feedrouter.airflow.hours" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_the_docstring_examples_hold(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"
