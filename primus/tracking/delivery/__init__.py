"""Getting the journal to the trackers: a worker per sink, the delivery process (one per run, or one per node) that
runs them off the training process, and ``primus tracking sync``'s replay (``replay``)."""
