"""What Megatron and Megatron-Bridge share, both megatron-core's training loop: its CPU stand-ins, its parallel
degrees, and the TensorBoard writer both write their scalars through. The one part of Megatron's code Bridge
imports (tests/test_layering.py); not a backend of its own."""
