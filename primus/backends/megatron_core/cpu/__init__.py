"""The Megatron CPU platform's patches, by what they patch; registered by ``patches/cpu_patches.py``."""
