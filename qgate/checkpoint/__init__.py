"""Checkpoints: the embedded demo model, emulated weight precisions, file digests."""
