"""Runtimes: vLLM servers qgate starts, endpoints it is given, and the machine fingerprint."""
