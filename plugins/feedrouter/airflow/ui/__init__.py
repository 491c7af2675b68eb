"""The feedrouter page in the Airflow UI: a FastAPI app the API server mounts under ``/feedrouter``.

``GET /feedrouter/`` is the page (plain HTML and JavaScript, embedded by the UI as an external view);
``GET /feedrouter/api/feeds`` its data. Both require Airflow's authentication and the ``GET``
permission on the custom view ``Feedrouter``, and only read the catalog.
"""
