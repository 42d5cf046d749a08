"""Cost and rounding error of emulated weight formats on a real checkpoint.

Builds the emulated copy for each format into a temporary cache, then calls
again to time the cache hit, and prints the per-tensor relative L2 error
from the manifest. Usage:
    python perf/bench_emulate.py [--checkpoint DIR] [--formats fp8_e4m3,int4]
The default checkpoint is the embedded SmolLM2 (`qgate models prepare smollm2`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from qgate.checkpoint.emulate import emulate_checkpoint, read_manifest
from qgate.profile import WeightEmulation

DEFAULT = "fp8_e4m3:per_channel,fp8_e5m2:per_channel,int8:per_channel,int4:group"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--checkpoint", type=Path, default=None)
    parser.add_argument("--formats", default=DEFAULT, help="format:granularity,...")
    args = parser.parse_args()
    if args.checkpoint is None:
        from qgate.checkpoint.embedded import require_checkpoint

        args.checkpoint = require_checkpoint("smollm2")
    print(
        f"{'format':<10} {'granularity':<12} {'tensors':>7} {'build s':>8} {'hit ms':>7}"
        f" {'mean rel L2':>12} {'max rel L2':>11}"
    )
    with tempfile.TemporaryDirectory() as cache:
        for item in args.formats.split(","):
            fmt, _, grain = item.partition(":")
            spec = WeightEmulation.model_validate(
                {"format": fmt, "granularity": grain or "per_channel"}
            )
            start = time.perf_counter()
            out = emulate_checkpoint(args.checkpoint, spec, Path(cache))
            build = time.perf_counter() - start
            start = time.perf_counter()
            emulate_checkpoint(args.checkpoint, spec, Path(cache))
            hit = time.perf_counter() - start
            errors = [t.rel_l2_error for t in read_manifest(out).quantized]
            print(
                f"{fmt:<10} {spec.granularity:<12} {len(errors):>7} {build:8.1f} {hit * 1000:7.1f}"
                f" {statistics.mean(errors):12.4f} {max(errors):11.4f}"
            )


if __name__ == "__main__":
    main()
