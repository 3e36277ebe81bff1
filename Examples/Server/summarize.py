#!/usr/bin/env python3
"""Medians of load.sh's passes: a table with ratios to the floor on standard output, and, when
given paths, results.tsv and an SVG of throughput and p99 latency against connections.

    python3 summarize.py RAW.tsv [results.tsv results.svg COMMIT]

Exits 1 when any response answered another member than its token named, or any request failed.
"""
import csv
import platform
import statistics
import sys
from collections import defaultdict

VARIANTS = ["floor", "tasklocal", "swift-dependencies", "habitat", "habitat-bound", "habitat-postgres", "habitat-cached"]
DATABASE_VARIANTS = {"habitat-postgres", "habitat-cached"}
COLORS = {"floor": "#555555", "tasklocal": "#1f77b4", "swift-dependencies": "#d62728", "habitat": "#2ca02c", "habitat-bound": "#9467bd",
          "habitat-postgres": "#ff7f0e", "habitat-cached": "#8c564b"}


def main():
    rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
    groups = defaultdict(list)
    for row in rows:
        groups[(row["variant"], int(row["connections"]))].append(row)
    connections = sorted({c for _, c in groups})
    results = []
    for variant in VARIANTS:
        for c in connections:
            runs = groups.get((variant, c), [])
            if not runs:
                continue
            median = lambda key: statistics.median(float(r[key]) for r in runs)
            results.append({
                "variant": variant, "connections": c,
                "requests_per_s": round(median("requests_per_s")), "p50_ms": round(median("p50_ms"), 3),
                "p99_ms": round(median("p99_ms"), 3), "peak_rss_mb": round(median("peak_rss_mb"), 1),
                "requests": sum(int(r["requests"]) for r in runs), "mismatches": sum(int(r["mismatches"]) for r in runs),
                "cpu_us_per_request": round(median("cpu_us_per_request"), 2) if "cpu_us_per_request" in runs[0] else 0,
                "db_cpu_us_per_request": round(median("db_cpu_us_per_request"), 2) if "db_cpu_us_per_request" in runs[0] else 0,
                "queries_per_request": round(median("queries_per_request"), 2) if "queries_per_request" in runs[0] else 0,
            })
    floor = {r["connections"]: r for r in results if r["variant"] == "floor"}
    tasklocal = {r["connections"]: r for r in results if r["variant"] == "tasklocal"}
    print("| variant | connections | CPU us/request | x floor | x task-local | requests/s | x floor | p50 ms | p99 ms | x floor | peak RSS MB | x floor | requests | mismatches | database CPU us/request | queries/request |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        f = floor.get(r["connections"])
        ratio = lambda key: f"{r[key] / f[key]:.2f}" if f and f[key] else ""
        t = tasklocal.get(r["connections"])
        cpu_vs_tasklocal = f"{r['cpu_us_per_request'] / t['cpu_us_per_request']:.2f}" if t and t["cpu_us_per_request"] else ""
        print(f"| {r['variant']} | {r['connections']} | {r['cpu_us_per_request']} | {ratio('cpu_us_per_request')} | {cpu_vs_tasklocal} | "
              f"{r['requests_per_s']:,} | {ratio('requests_per_s')} | {r['p50_ms']} | "
              f"{r['p99_ms']} | {ratio('p99_ms')} | {r['peak_rss_mb']} | {ratio('peak_rss_mb')} | {r['requests']:,} | {r['mismatches']} | "
              f"{database(r, 'db_cpu_us_per_request')} | {database(r, 'queries_per_request')} |")
    total = sum(r["requests"] for r in results if r["variant"] == "habitat")
    bad = sum(r["mismatches"] for r in results)
    print(f"\nHabitat answered {total:,} requests; mismatched or failed responses, all variants: {bad}")
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as out:
            keys = ["variant", "connections", "cpu_us_per_request", "requests_per_s", "p50_ms", "p99_ms", "peak_rss_mb", "requests", "mismatches",
                    "db_cpu_us_per_request", "queries_per_request"]
            out.write("\t".join(keys) + "\n")
            for r in results:
                out.write("\t".join(str(r[k]) for k in keys) + "\n")
        with open(sys.argv[3], "w") as out:
            out.write(svg(results, connections, sys.argv[4] if len(sys.argv) > 4 else "?"))
    sys.exit(1 if bad else 0)


def database(result, key):
    """A database figure, for the variants that use one (0 there is a result, not a blank)."""
    return result[key] if result["variant"] in DATABASE_VARIANTS else ""


def svg(results, connections, commit):
    width, height, pad = 900, 380, 60
    panel = (width - 3 * pad) / 2
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{pad}" y="20" font-size="14">habitat-server load test, medians of passes: {platform.machine()} '
             f'{platform.system()}, commit {commit}</text>']
    for index, (key, title) in enumerate([("requests_per_s", "throughput (requests/s)"), ("p99_ms", "p99 latency (ms)")]):
        x0 = pad + index * (panel + pad)
        top, bottom = 50, height - 70
        values = [r[key] for r in results] or [1]
        high = max(values) * 1.1
        parts.append(f'<text x="{x0}" y="42">{title}</text>')
        parts.append(f'<line x1="{x0}" y1="{bottom}" x2="{x0 + panel}" y2="{bottom}" stroke="black"/>')
        parts.append(f'<line x1="{x0}" y1="{top}" x2="{x0}" y2="{bottom}" stroke="black"/>')
        for tick in range(5):
            value = high * tick / 4
            y = bottom - (bottom - top) * tick / 4
            parts.append(f'<text x="{x0 - 5}" y="{y + 4}" text-anchor="end">{value:,.0f}</text>' if key == "requests_per_s"
                         else f'<text x="{x0 - 5}" y="{y + 4}" text-anchor="end">{value:.1f}</text>')
        xs = {c: x0 + panel * (i + 0.5) / len(connections) for i, c in enumerate(connections)}
        for c, x in xs.items():
            parts.append(f'<text x="{x}" y="{bottom + 16}" text-anchor="middle">{c} conn.</text>')
        for variant in VARIANTS:
            points = [(xs[r["connections"]], bottom - (bottom - top) * r[key] / high) for r in results if r["variant"] == variant]
            if not points:
                continue
            parts.append(f'<polyline fill="none" stroke="{COLORS[variant]}" stroke-width="2" points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in points)}"/>')
            for x, y in points:
                parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{COLORS[variant]}"/>')
    for i, variant in enumerate(VARIANTS):
        x = pad + i * (width - pad) / len(VARIANTS)
        parts.append(f'<rect x="{x}" y="{height - 30}" width="12" height="12" fill="{COLORS[variant]}"/>')
        parts.append(f'<text x="{x + 18}" y="{height - 20}">{variant}</text>')
    parts.append("</svg>\n")
    return "\n".join(parts)


if __name__ == "__main__":
    main()
