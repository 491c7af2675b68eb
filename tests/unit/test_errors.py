"""One error table: every code names its class, every class's code is in the table, the code picks
the class, and an unknown code is refused."""

from __future__ import annotations

import importlib

import pytest

from feedrouter.errors import CODES, TABLE, DocumentError, FeedrouterError, error

# Modules that re-export or define error classes; both are pure Python (no Airflow, no Spark).
for _module in ("feedrouter.airflow.hours", "feedrouter.spark.errors"):
    importlib.import_module(_module)


def subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *subclasses(sub)]
    return found


def test_every_error_class_code_is_in_the_table() -> None:
    classes = subclasses(FeedrouterError)
    assert len(classes) >= 10
    missing = {cls.__name__: cls.default_code for cls in classes if cls.default_code not in CODES}
    assert not missing, f"add these codes to feedrouter.errors.TABLE: {missing}"


def test_a_class_default_code_is_carried_by_that_class() -> None:
    wrong = {
        cls.__name__: TABLE[cls.default_code][0].__name__
        for cls in subclasses(FeedrouterError)
        if cls.default_code in TABLE and not issubclass(TABLE[cls.default_code][0], cls)
    }
    assert not wrong, f"the table gives these classes' default codes to another class: {wrong}"


def test_the_code_picks_the_class() -> None:
    raised = error("FR201", "too large", source="a.xml")
    assert type(raised) is DocumentError
    assert raised.code == "FR201"
    assert str(raised) == "a.xml, [FR201] too large"


def test_an_unknown_code_is_refused() -> None:
    with pytest.raises(ValueError, match="FR999"):
        error("FR999", "no such code")


def test_codes_are_grouped_by_hundreds() -> None:
    for code, (cls, title) in TABLE.items():
        assert code[:2] == "FR" and code[2:].isdigit() and len(code) == 5, code
        assert title and title == CODES[code]
        assert issubclass(cls, FeedrouterError)
