"""Run health: detectors fed the journal's records, the watch that runs them and tells a person (console, webhook),
and the ranks' stacks at a stall."""
