"""What Megatron (megatron-core's ``megatron.training``) and Megatron-Bridge share, both being megatron-core's
training loop: its CPU stand-ins, its parallel degrees by megatron-core's names, and the TensorBoard writer both loops
write their scalars through. The one part of Megatron's code Bridge imports (tests/test_layering.py); no backend
of its own."""
