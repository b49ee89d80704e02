"""The Megatron-Bridge backend: Bridge's ``pretrain()`` (a user's own script, under ``primus-run``) tracked through
the hub, and trained on a host without an accelerator. Bridge runs on megatron-core, so megatron-core's CPU
patches and Megatron's SummaryWriter stand-in serve it as they are (``primus/backends/megatron_core``)."""
