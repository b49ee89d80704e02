"""What a cluster's own monitoring needs to watch runs that push to a Prometheus Pushgateway
(``tracking/trackers/prometheus.py``): alerting rules (``rules.py``) and a Grafana dashboard (``dashboard.py``),
printed by ``primus monitoring``."""
