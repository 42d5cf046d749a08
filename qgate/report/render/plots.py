"""Plots for the HTML view, drawn with matplotlib's Agg backend and returned as PNG bytes.

matplotlib is imported inside `load_pyplot` (qgate/report/render/figure.py) so that
importing qgate.report stays cheap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qgate.report.derive import accuracy, kld_values, suite_pairs
from qgate.report.model import Report
from qgate.report.render.figure import load_pyplot, png_bytes
from qgate.report.render.localise_plot import localise_plot
from qgate.report.render.series import series_of
from qgate.report.render.view import wilson

_REF, _CAND = "#4c72b0", "#dd8452"


def accuracy_plot(report: Report) -> bytes | None:
    """Reference vs candidate accuracy per suite with 95% Wilson intervals."""
    pairs = suite_pairs(report.quality.runs)
    if not pairs:
        return None
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(pairs) + 2), 3.2))
    for offset, color, label, idx in ((-0.2, _REF, "reference", 1), (0.2, _CAND, "candidate", 2)):
        xs, ys, lo, hi = [], [], [], []
        for i, pair in enumerate(pairs):
            c, n = accuracy(pair[idx])  # type: ignore[arg-type]
            if n == 0:
                continue
            p = c / n
            a, b = wilson(c, n)
            xs.append(i + offset)
            ys.append(p)
            # clamp float noise: at 0% or 100% the bound and the point can differ by 1e-17
            lo.append(max(0.0, p - a))
            hi.append(max(0.0, b - p))
        ax.bar(xs, ys, width=0.38, color=color, label=label)
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="none", ecolor="black", capsize=3, lw=1)
    ax.set_xticks(range(len(pairs)), [p[0] for p in pairs], rotation=20)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy")
    ax.set_title("Accuracy per suite (95% Wilson intervals)")
    ax.legend(fontsize=8)
    return png_bytes(fig)


def kld_plot(report: Report) -> bytes | None:
    """Histogram of per-position KL(reference || candidate), log-spaced bins."""
    vals = kld_values(report)
    if not vals:
        return None
    plt = load_pyplot()
    arr = np.asarray(vals, dtype=float)
    floor = 1e-6
    bins = np.logspace(np.log10(floor), np.log10(max(arr.max(), floor * 10)), 40)
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    ax.hist(np.clip(arr, floor, None), bins=bins, color=_CAND)
    ax.set_xscale("log")
    ax.set_xlabel(f"KL per position (values below {floor:g} shown at {floor:g})")
    ax.set_ylabel("positions")
    ax.set_title("KL divergence distribution")
    return png_bytes(fig)


def _latencies(report: Report, scenario: str) -> dict[str, tuple[list[float], list[float]]]:
    out: dict[str, tuple[list[float], list[float]]] = {}
    for run in report.perf.runs:
        if run.scenario != scenario:
            continue
        ttft = [
            (r.first_token_ns - r.sent_ns) / 1e6
            for r in run.requests
            if r.first_token_ns is not None and r.error is None
        ]
        itl = [
            (b - a) / 1e6
            for r in run.requests
            if r.error is None
            for a, b in zip(r.token_times_ns, r.token_times_ns[1:], strict=False)
        ]
        out[run.role] = (sorted(ttft), sorted(itl))
    return out


def cdf_plot(report: Report, scenario: str, which: int) -> bytes | None:
    """CDF of TTFT (which=0) or ITL (which=1) for both runtimes of one scenario."""
    data = _latencies(report, scenario)
    if not any(v[which] for v in data.values()):
        return None
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 3.0))
    for role, color in (("reference", _REF), ("candidate", _CAND)):
        values = data.get(role, ([], []))[which]
        if values:
            ys = [(i + 1) / len(values) for i in range(len(values))]
            ax.step(values, ys, where="post", color=color, label=role)
    name = "TTFT" if which == 0 else "ITL"
    ax.set_xlabel(f"{name} (ms)")
    ax.set_ylabel("fraction of requests" if which == 0 else "fraction of gaps")
    ax.set_title(f"{name} CDF: {scenario}")
    ax.legend(fontsize=8)
    return png_bytes(fig)


def _throughput(run_metrics: dict[str, Any] | None, key: str) -> float:
    if not run_metrics:
        return 0.0
    value = run_metrics.get(key)
    if isinstance(value, dict):
        value = value.get("median", value.get("p50", value.get("mean")))
    return float(value) if isinstance(value, int | float) else 0.0


def throughput_plot(report: Report) -> bytes | None:
    """Output tokens/s and median E2E latency per scenario, both runtimes."""
    results = report.perf.results
    if not results:
        return None
    plt = load_pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.2))
    names = [r.scenario for r in results]
    xs = list(range(len(names)))
    for ax, key, label in (
        (axes[0], "output_throughput", "output tokens/s"),
        (axes[1], "e2e_ms", "median E2E latency (ms)"),
    ):
        for offset, color, role in ((-0.2, _REF, "reference"), (0.2, _CAND, "candidate")):
            vals = [_throughput(getattr(r, role), key) for r in results]
            ax.bar([x + offset for x in xs], vals, width=0.38, color=color, label=role)
        ax.set_xticks(xs, names, rotation=20)
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
    fig.suptitle("Throughput and latency per scenario")
    return png_bytes(fig)


def series_plot(report: Report, scenario: str) -> bytes | None:
    """Output tok/s and TTFT p90 per time bucket, reference vs candidate, for one scenario."""
    result = next((r for r in report.perf.results if r.scenario == scenario), None)
    if result is None:
        return None
    sides = [(role, series_of(result, role)) for role in ("reference", "candidate")]
    if not any(series for _, series in sides):
        return None
    width = next(s["bucket_s"] for _, s in sides if s)
    unit, scale = ("minutes", 60.0) if width % 60 == 0 else ("seconds", 1.0)
    plt = load_pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.2))
    for role, series in sides:
        if not series:
            continue
        buckets = series["buckets"]
        # each bucket at its middle, from the scenario's start
        xs = [(b["start_s"] + b["seconds"] / 2) / scale for b in buckets]
        tput = [b["output_throughput"] for b in buckets]
        p90 = [float("nan") if b["ttft_p90_ms"] is None else b["ttft_p90_ms"] for b in buckets]
        color = _REF if role == "reference" else _CAND
        axes[0].plot(xs, tput, marker=".", color=color, label=role)
        axes[1].plot(xs, p90, marker=".", color=color, label=role)
    for ax, label in ((axes[0], "output tokens/s"), (axes[1], "TTFT p90 (ms)")):
        ax.set_xlabel(f"{unit} since the scenario started")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    fig.suptitle(f"Per {width:g} s bucket: {scenario}")
    return png_bytes(fig)


def all_plots(report: Report) -> list[tuple[str, bytes]]:
    """(caption, PNG bytes) for every plot that the report has data for."""
    plots: list[tuple[str, bytes | None]] = [
        ("Accuracy per suite", accuracy_plot(report)),
        ("KL divergence distribution", kld_plot(report)),
        ("Where the damage sits", localise_plot(report)),
    ]
    for scenario in dict.fromkeys(r.scenario for r in report.perf.runs):
        plots.append((f"TTFT CDF: {scenario}", cdf_plot(report, scenario, 0)))
        plots.append((f"ITL CDF: {scenario}", cdf_plot(report, scenario, 1)))
        plots.append((f"Time series: {scenario}", series_plot(report, scenario)))
    plots.append(("Throughput and latency", throughput_plot(report)))
    return [(caption, png) for caption, png in plots if png is not None]
