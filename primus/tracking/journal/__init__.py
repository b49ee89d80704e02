"""The journal, the bottom of the tracking core: its record vocabulary (``records``), the files a run directory holds
(``files``), their writer, reader and keeper, and what the directory remembers between processes (``run_state``)."""
