"""Shared test helpers: a real MLflow server on 127.0.0.1 (``mlflow_server.py``) and read-back of
what the real trackers wrote (``readers.py``). Fixtures wrapping them are in ``tests/conftest.py``."""
