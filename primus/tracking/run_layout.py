"""Every file and folder of a run directory, by name, and the one module that writes each.

* ``run.json``: tracker run ids, the run's status, what each sink finished (``state.RunState``).
* ``meta.json``: the redacted params, tags and tracker settings (``meta.RunMeta``).
* ``journal/``: the records, in segments (``journal_writer``; gzipped and deleted by ``journal_keeper``);
  ``journal.jsonl``, the single-file journal of run directories written before segments.
* ``cursors/<sink>.json``: how far each sink delivered (``state.CursorStore``).
* ``.lock``: one live process per run directory (``state.RunDirLock``); ``.delivery.lock``: held by the process
  that feeds the trackers (``state.delivery_lock``), waited for by ``primus tracking sync``.
* ``logs/``, ``traces/``, ``reports/``: the run's own files, uploaded to MLflow when asked (``sinks.mlflow``).
"""

STATE_FILE = "run.json"
META_FILE = "meta.json"
JOURNAL_DIR = "journal"
LEGACY_JOURNAL = "journal.jsonl"
CURSORS_DIR = "cursors"
LOCK_FILE = ".lock"
DELIVERY_LOCK = ".delivery.lock"
LOGS_DIR = "logs"
TRACES_DIR = "traces"
REPORTS_DIR = "reports"
