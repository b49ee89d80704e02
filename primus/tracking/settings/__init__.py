"""What a run is configured with (``config.TrackingConfig``) and the checks run before training: the trackers'
environment variables and credentials."""
