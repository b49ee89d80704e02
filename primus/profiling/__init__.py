"""Analysis of this run's profiler traces (the report ``mlflow_upload_tracelens_report`` uploads)."""
