"""Launching an experiment: the upstream command for the module's framework, patches active."""
