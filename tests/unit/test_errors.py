"""One exception hierarchy with one code registry: every error class's code is listed."""

from __future__ import annotations

import importlib

from feedrouter.errors import CODES, FeedrouterError

# Modules whose error classes are defined outside feedrouter.errors; both are pure Python
# (they import neither Airflow nor Spark), so loading them here is cheap.
for _module in ("feedrouter.airflow.hours", "feedrouter.spark.errors"):
    importlib.import_module(_module)


def subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *subclasses(sub)]
    return found


def test_every_error_class_code_is_in_the_registry() -> None:
    classes = subclasses(FeedrouterError)
    assert len(classes) >= 10
    missing = {cls.__name__: cls.default_code for cls in classes if cls.default_code not in CODES}
    assert not missing, f"add these codes to feedrouter.errors.CODES: {missing}"
