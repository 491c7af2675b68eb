"""Airflow adapter: the plugin, hooks, operators, sensor, trigger and UI page that run feedrouter.

Only this package imports Airflow. DAG files in ``dags/`` wire its operators; Airflow loads the
plugin through ``plugins/feedrouter_plugin.py`` or the ``airflow.plugins`` entry point. Nothing is
imported here, so importing a submodule stays cheap (the trigger runs in the triggerer, the UI in
the API server, neither needs Spark).
"""
