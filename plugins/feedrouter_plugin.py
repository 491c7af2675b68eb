"""The one file Airflow's plugin loader imports from ``plugins/`` (``.airflowignore`` hides the
``feedrouter`` package itself, whose modules would otherwise load as top-level modules).

When the installed feedrouter distribution already registers the plugin through its
``airflow.plugins`` entry point, this file exposes nothing: Airflow loads both sources, and a
second plugin of the same name is reported as an import error.
"""

from __future__ import annotations

from importlib.metadata import entry_points


def _registered_by_entry_point() -> bool:
    return any(ep.value.startswith("feedrouter.") for ep in entry_points(group="airflow.plugins"))


if not _registered_by_entry_point():
    from feedrouter.airflow.plugin import FeedrouterPlugin

    __all__ = ["FeedrouterPlugin"]
