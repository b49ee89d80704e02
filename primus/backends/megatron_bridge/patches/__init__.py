"""The Megatron-Bridge backend's declaring modules (entry points of the group ``primus.patches``)."""
