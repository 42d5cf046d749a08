"""Perf rounds on a cluster: which node each round's lives go to, and the design that ran.

The pure functions live in qgate/core/speed_design.py, where `qgate verify` re-derives the
design from the recorded lives; the executor (qgate/cluster/lives.py) imports them here.
"""

from __future__ import annotations

from qgate.core.speed_design import round_node, speed_design

__all__ = ["round_node", "speed_design"]
