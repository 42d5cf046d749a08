"""The bottom layer: shared types and helpers every package may import, importing none of them.

Records and roles, verdicts, engine features, the serving protocol, files and digests,
HTTP probes and error mapping, YAML with line numbers, JSONL shape checks, env names,
output paths, redaction, progress lines, lazy package faces.
"""
