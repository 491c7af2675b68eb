"""Which package modules pytest imports for their docstring examples (``--doctest-modules``).

The Airflow and Spark adapters stay out: Airflow modules import Airflow at module level, and
importing them during collection, before the Airflow tests configure it, breaks those tests
(tests/unit/airflow/test_doctests.py runs the Airflow modules' examples instead). ``plugins/
feedrouter_plugin.py`` is Airflow's plugin entry file, not part of the package.
"""

collect_ignore = [
    "plugins/feedrouter/airflow",
    "plugins/feedrouter/spark",
    "plugins/feedrouter_plugin.py",
]
