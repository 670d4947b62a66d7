"""The printed summary of bench/core.py: a line per target, issue 2's and then issue 16's."""

from __future__ import annotations

from typing import Any

__all__ = ["summary"]


def summary(backend: str, parts: dict[str, Any], targets_16: dict[Any, float]) -> list[str]:
    """The summary lines: issue 2's targets per part, then issue 16's on CPU-time ratios."""
    lines = [f"{'part':<6}{'metric':<30}{'ours':>12}{'raw':>12}{'ratio':>9}{'target':>10}  met"]

    def line(
        part: str, metric: str, ours: str, raw: str, ratio: float, target: str, met: bool
    ) -> None:
        verdict = "yes" if met else "NO"
        lines.append(
            f"{part:<6}{metric:<30}{ours:>12}{raw:>12}{ratio:>9.2f}{target:>10}  {verdict}"
        )

    if "a" in parts:
        a = parts["a"]
        line(
            "a",
            f"{a['n']} x 1 KiB put_many, s",
            f"{a['ours_median_s']:.3f}",
            f"{a['raw_median_s']:.3f}",
            a["ratio"],
            f">= {a['target']}",
            a["ratio"] >= a["target"],
        )
    if "b" in parts:
        b = parts["b"]
        mib = b["blob_bytes"] >> 20
        line(
            "b",
            f"{mib} MiB put(file), s",
            f"{b['ours_median_s']:.3f}",
            f"{b['raw_median_s']:.3f}",
            b["ratio"],
            f">= {b['target']}",
            b["ratio"] >= b["target"],
        )
        line(
            "b",
            "peak RSS / blob size",
            f"{b['ours_peak_over_blob']:.2f}",
            f"{b['raw_peak_over_blob']:.2f}",
            b["ours_peak_over_blob"],
            f"<= {b['target_memory_over_blob']}",
            b["ours_peak_over_blob"] <= b["target_memory_over_blob"],
        )
    if "c" in parts:
        c = parts["c"]
        line(
            "c",
            f"{c['n']} x ~5 KB ingest, s",
            f"{c['ours_median_s']:.3f}",
            f"{c['raw_median_s']:.3f}",
            c["ratio"],
            f">= {c['target']}",
            c["ratio"] >= c["target"],
        )
    if "d" in parts:
        d = parts["d"]
        line(
            "d",
            "get 1 KiB p50, us (ours/raw)",
            f"{d['ours_p50_us']:.1f}",
            f"{d['raw_p50_us']:.1f}",
            d["slowdown_p50"],
            f"<= {d['target']}",
            d["slowdown_p50"] <= d["target"],
        )
        line(
            "d",
            "get 1 KiB p99, us (ours/raw)",
            f"{d['ours_p99_us']:.1f}",
            f"{d['raw_p99_us']:.1f}",
            d["slowdown_p99"],
            f"<= {d['target']}",
            d["slowdown_p99"] <= d["target"],
        )
    lines += _summary_16(backend, parts, targets_16)
    return lines


def _summary_16(backend: str, parts: dict[str, Any], targets_16: dict[Any, float]) -> list[str]:
    """Issue 16's targets on the CPU-time ratios."""
    out = []
    rows = []
    if "a" in parts:
        rows.append(("a", "wall vs raw with hashing", parts["a"]["ratio_vs_raw_with_hashing"]))
        rows.append(("a", "CPU vs raw with hashing", parts["a"]["cpu_ratio_vs_raw_with_hashing"]))
    if "c" in parts:
        rows.append(("c", "wall raw/ours", parts["c"]["ratio"]))
        rows.append(("c", "CPU raw/ours", parts["c"]["cpu_ratio"]))
    for key, name, ratio in rows:
        t = targets_16[(key, backend)]
        out.append(f"{key:<6}{name:<30}{ratio:>33.2f}{'>= ' + str(t):>10}  {ratio >= t}")
    if "d" in parts:
        d = parts["d"]
        for q in ("p50", "p99"):
            slow = d[f"ours_cpu_{q}_us"] / d[f"raw_cpu_{q}_us"]
            t = targets_16[(f"d-{q}", None)]
            name = f"CPU {q} ours/raw"
            out.append(f"{'d':<6}{name:<30}{slow:>33.2f}{'<= ' + str(t):>10}  {slow <= t}")
    return ["", "issue 16 targets (CPU time):", *out] if out else []
