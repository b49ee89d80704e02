"""Megatron's tracking session and writers: the writer proxy upstream's training_log writes to, the console line
it prints, and the per-run state the patches share."""
