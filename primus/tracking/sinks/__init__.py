"""What a sink is (``sink.Sink``, the one interface every tracker implements) and the sinks other distributions add
(``plugins``); the built-in trackers are in ``trackers/``."""
