"""The report's environment section: what each server reported of its configuration, the
machine's fingerprint, stage timings, server starts and where the time went."""

from __future__ import annotations

from typing import Any

from qgate.report.derive import time_breakdown
from qgate.report.model import Report
from qgate.report.render.parts import Section, Table, fmt

__all__ = ["environment_section"]


def environment_section(report: Report) -> Section:
    """Each server's effective configuration, the machine's fingerprint, stage timings,
    server starts, where the time went and how many artifacts the report lists."""
    sec = Section("Environment")
    rows = []
    for cfg in report.effective_configs:
        rows.append(
            [
                cfg.role,
                cfg.kind,
                fmt(cfg.engine_version),
                fmt(cfg.dtype),
                fmt(cfg.quantization),
                fmt(cfg.kv_cache_dtype),
                fmt(cfg.attention_backend)
                + (f" (FA{cfg.flash_attn_version})" if cfg.flash_attn_version else ""),
                "; ".join(f"{k} ({m})" for m, k in cfg.linear_kernels.items()) or "–",
                ", ".join(cfg.uncalibrated_scales) or "–",
                "; ".join(f"EMULATED {e}" for e in cfg.emulated) or "–",
            ]
        )
    header = [
        "Role",
        "Kind",
        "Engine",
        "dtype",
        "Quant",
        "KV cache",
        "Attention",
        "Linear kernel",
        "Scales at 1.0",
        "Emulated",
    ]
    sec.tables.append(Table(header, rows))
    fp = (
        report.fingerprint.model_dump(mode="json", exclude={"checkpoint", "engine_envs"})
        if report.fingerprint
        else {}
    )
    cpu = fp.get("cpu", {})
    for key in ("arch", "forced_flags"):  # recorded since 2026-12; not shown when absent
        if cpu.get(key) is None:
            cpu.pop(key, None)
    fp_rows = [[k, v] for k, v in _flatten(fp)]
    if report.fingerprint is not None:
        fp_rows.append(["checkpoint files", str(len(report.fingerprint.checkpoint))])
        for env in report.fingerprint.engine_envs:  # a side's pinned release (engine.package)
            shown = ", ".join(f"{k} {env.packages[k]}" for k in ("torch",) if k in env.packages)
            fp_rows.append(
                [
                    f"engine environment {env.request}",
                    f"{len(env.packages)} packages{', ' + shown if shown else ''} "
                    f"(key {env.key[:12]})",
                ]
            )
    if fp_rows:
        sec.tables.append(Table(["Fingerprint", "Value"], fp_rows))
    timing_rows = [[k, fmt(v)] for k, v in report.stage_timings.items()]
    if timing_rows:
        sec.tables.append(Table(["Stage", "Seconds"], timing_rows))
    start_rows = [
        [
            s.side,
            s.purpose,
            s.kind,
            fmt(s.ready_s),
            ", ".join(f"{k} {fmt(v)}" for k, v in s.startup.items()) or "-",
            s.compile_cache or "-",
        ]
        for s in report.starts
    ]
    if start_rows:
        sec.tables.append(
            Table(
                ["Server start", "For", "Engine", "Ready (s)", "Engine phases", "Compile cache"],
                start_rows,
            )
        )
    went = [[what, fmt(seconds)] for what, seconds in time_breakdown(report)]
    if went:
        sec.tables.append(Table(["Where the time went", "Seconds"], went))
    sec.lines.append(f"{len(report.artifacts)} artifacts listed with sha256.")
    return sec


def _flatten(node: Any, prefix: str = "", limit: int = 60) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _flatten(v, f"{prefix}.{k}" if prefix else str(k), limit)
    elif isinstance(node, list) and node and all(isinstance(v, dict) for v in node):
        for i, v in enumerate(node):
            out += _flatten(v, f"{prefix}[{i}]", limit)
    else:
        text = ", ".join(map(fmt, node)) if isinstance(node, list) else fmt(node)
        out.append((prefix, text if len(text) <= 120 else text[:117] + "..."))
    return out[:limit]
