"""qgate's perf figures beside `vllm bench serve`'s, from the H200 evidence in examples/h200/.

Usage: python perf/gpu/summarize_bench.py [examples/h200]
Prints, per config and concurrency: output tok/s, TTFT p50, TPOT p50 and mean, ITL p50, for
  same-server  vllm bench and qgate perf alternating on one server (bench_compare.sh, both modes;
               r2 repeats r1's prompts, so its TTFT is a prefix-cache hit for both tools)
  preview      `qgate run` on the preview profile (its own servers; the signed report)
  after        vllm bench on fresh servers of the same configs, in the calls after the preview
and the difference of qgate from vllm bench in percent (qgate / vllm - 1).
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

DEFAULT = Path(__file__).resolve().parents[2] / "examples" / "h200"
ROOT = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT


def vb(path: Path) -> dict[str, float]:
    d = json.loads(path.read_text())
    return {
        "out": d["output_throughput"],
        "ttft": d["median_ttft_ms"],
        "tpot": d["median_tpot_ms"],
        "tpot_mean": d["mean_tpot_ms"],
        "itl": d["median_itl_ms"],
    }


def qg(m: dict[str, Any]) -> dict[str, float]:
    return {
        "out": m["output_throughput"],
        "ttft": m["ttft_ms"]["p50"],
        "tpot": m["tpot_ms"]["p50"],
        "tpot_mean": m["tpot_ms"]["mean"],
        "itl": m["itl_ms"]["p50"],
        "hit": m.get("prefix_cache_hit_rate"),
    }


def row(label: str, v: dict[str, float], base: dict[str, float] | None = None) -> str:
    cells = [
        f"{v['out']:8.1f}",
        f"{v['ttft']:7.2f}",
        f"{v['tpot']:6.3f}",
        f"{v['tpot_mean']:6.3f}",
        f"{v['itl']:6.3f}",
    ]
    if base is not None:
        keys = ("out", "ttft", "tpot", "tpot_mean")
        diff = [f"{(v[k] / base[k] - 1) * 100:+5.1f}%" for k in keys]
        cells.append(
            "vs vllm: out "
            + diff[0]
            + " TTFT "
            + diff[1]
            + " TPOT "
            + diff[2]
            + " TPOTmean "
            + diff[3]
        )
    hit = v.get("hit")
    if hit is not None:
        cells.append(f"prefix hits {hit:.0%}")
    return f"  {label:<28}" + "  ".join(cells)


def main() -> None:
    print(f"  {'':<28}{'out tok/s':>8}  {'TTFT50':>7}  {'TPOT50':>6}  {'TPOTmn':>6}  {'ITL50':>6}")
    same = ROOT / "bench" / "same-server"
    after = ROOT / "bench" / "after-preview"
    line = (ROOT / "llama3-8b-shape-h200-preview" / "report.intoto.jsonl").read_text()
    rep = json.loads(base64.b64decode(json.loads(line)["payload"]))["predicate"]
    preview = {
        (r["scenario"], role): r[role]
        for r in rep["perf"]["results"]
        for role in ("reference", "candidate")
    }
    for cfg, role in (("bf16", "reference"), ("fp8", "candidate")):
        for c in (1, 16):
            print(f"{cfg} c={c}")
            for tag in ("r1", "r2"):
                f = same / f"vb_{cfg}_c{c}_{tag}.json"
                if not f.exists():
                    continue
                base = vb(f)
                print(row(f"same-server {tag} vllm bench", base))
                qp = same / f"qp_{cfg}_c{c}_{tag}.metrics.json"
                m = json.loads(qp.read_text())["metrics"][0]
                print(row(f"same-server {tag} qgate perf", qg(m), base))
            a = vb(after / f"vb_{cfg}_c{c}_r1.json")
            print(row("after       vllm bench", a))
            print(row("preview     qgate run", qg(preview[(f"c{c}", role)]), a))


if __name__ == "__main__":
    main()
