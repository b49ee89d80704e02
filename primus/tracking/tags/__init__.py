"""What a run is tagged and labelled with (host, launcher, accelerators, parallel layout, user labels), its params,
and ``meta.json``, which keeps them for the delivery process and ``primus tracking sync``."""
