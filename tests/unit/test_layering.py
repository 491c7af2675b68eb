"""Dependencies point one way, toward the core: core <- adapters <- airflow.

Every ``feedrouter`` import in the package (module level or inside a function) is read from the
source, and an import from a package of a higher layer than the importing one fails this test. Within
the core the stages keep their compiler order (lang -> schema -> engine -> plan -> output -> join -> router).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "plugins" / "feedrouter"

#: The layer of each top-level module or package of feedrouter; an import may only point to the same
#: package or to a lower layer.
LAYERS: dict[str, int] = {
    "errors": 0,
    "limits": 0,
    "paths": 0,
    "heap": 0,
    "kernel": 0,
    "hours": 1,
    "console": 1,
    "settings": 1,
    "progress": 1,
    "logs": 1,
    "lang": 1,
    "schema": 2,
    "engine": 3,
    "output": 4,
    "plan": 5,
    "join": 6,
    "router": 7,
    "__init__": 8,
    "workload": 8,
    "storage": 9,
    "delivery": 10,
    "catalog": 10,
    "spark": 11,
    "cli": 12,
    "airflow": 12,
}


def _package_of(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0].removesuffix(".py")


def _imported_packages(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module == "feedrouter" and node.level == 0:
            # ``from feedrouter import lang`` names a package; ``from feedrouter import Router`` the facade
            names = [f"feedrouter.{a.name}" if a.name in LAYERS else "feedrouter" for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "feedrouter":
                found.append((node.lineno, parts[1] if len(parts) > 1 else "__init__"))
    return found


def test_every_module_belongs_to_a_layer() -> None:
    unknown = {_package_of(path) for path in PACKAGE.rglob("*.py")} - set(LAYERS)
    assert not unknown, f"give these modules a layer in LAYERS: {sorted(unknown)}"


def test_no_import_points_to_a_higher_layer() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = _package_of(path)
        for line, target in _imported_packages(path):
            if target != here and LAYERS[target] >= LAYERS[here]:
                upward.append(f"{path.relative_to(ROOT)}:{line}: {here} imports {target}")
    assert not upward, "imports against the layering:\n" + "\n".join(upward)
