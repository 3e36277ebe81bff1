#!/usr/bin/env python3
"""Turns one benchmark run (Influx CSV) into Habitat's comparison table.

Each row pairs a Habitat benchmark with the peer or floor it is measured against in the same
run. Values are medians (p50) per operation: per-iteration numbers divided by the benchmark's
inner loop count. ratio = habitat / peer; target = the largest ratio the targets allow.
"""
import argparse
import csv
import html
import math
import statistics
import sys

# Inner operations per measured iteration (the benchmarks' scaling factors).
SCALE = {
    "read/habitat": 1_000_000, "read/floor": 1_000_000,
    "two-threads/habitat": 1_000_000, "two-threads/habitat-one-thread": 1_000_000,
    "depth/habitat": 1, "save/habitat": 1, "save/floor": 1, "restore/habitat": 1, "restore/floor": 1,
}
DEFAULT_SCALE = 1_000

# (row, habitat benchmark, peer label, peer benchmark, target ratio or None)
ROWS = [
    ("read one field, no scope", "read/habitat", "plain global struct (floor)", "read/floor", 5),
    ("read one field, no scope", "read/habitat", "swift-dependencies @Dependency", "read/swift-dependencies", 0.01),
    ("read one field, no scope", "read/habitat", "Swinject singleton resolve", "read/swinject", 0.01),
    ("read one field in a scope", "scoped-read/habitat", "swift-dependencies in withDependencies", "scoped-read/swift-dependencies", 1 / 15),
    ("scope enter+leave", "scope/habitat", "withDependencies enter+leave", "scope/swift-dependencies", 0.5),
    ("scope enter+leave", "scope/habitat", "Swinject child container + override", "scope/swinject", None),
    ("push modified copy + pop", "push-pop/habitat", "unsynchronised array (floor)", "push-pop/floor", 1.2),
    ("push modified copy + pop", "push-pop/habitat", "the same array behind a mutex", "push-pop/locked-floor", None),
    ("login + logout", "login-logout/habitat", "two replacements by hand (floor)", "login-logout/floor", None),
    ("two threads reading, per read", "two-threads/habitat", "Habitat, one thread", "two-threads/habitat-one-thread", 2),
    ("two threads reading, per read", "two-threads/habitat", "swift-dependencies, two threads", "two-threads/swift-dependencies", None),
    ("save snapshot", "save/habitat", "JSONEncoder + Data.write (floor)", "save/floor", None),
    ("restore snapshot", "restore/habitat", "Data read + JSONDecoder (floor)", "restore/floor", 1.5),
]


def load(paths):
    """{benchmark: {metric: p50 per iteration}}, the median over the runs (one file per run)."""
    samples = {}
    for path in paths:
        with open(path, newline="") as handle:
            lines = [line for line in handle if not line.startswith("#")]
        for row in csv.DictReader(lines):
            if row.get("percentile") != "50.0":
                continue
            samples.setdefault(row["test"], {}).setdefault(row["metric"], []).append(float(row["value"]))
    return {
        test: {metric: statistics.median(values) for metric, values in metrics.items()}
        for test, metrics in samples.items()
    }


def per_op(results, name, metric="Time(wallclock)"):
    value = results.get(name, {}).get(metric)
    if value is None:
        return None
    return value / SCALE.get(name, DEFAULT_SCALE)


def fmt(value):
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("csv", nargs="+")
    parser.add_argument("--tsv")
    parser.add_argument("--svg")
    parser.add_argument("--markdown")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    results = load(args.csv)

    table = []
    for row, habitat, peer, peer_name, target in ROWS:
        h, p = per_op(results, habitat), per_op(results, peer_name)
        ratio = h / p if h is not None and p else None
        table.append((row, h, peer, p, ratio, target))

    # Extra facts that are not ratios.
    mallocs = None
    if "read/habitat" in results and "read/floor" in results:
        extra = results["read/habitat"].get("Malloc(total)", 0) - results["read/floor"].get("Malloc(total)", 0)
        mallocs = extra / SCALE["read/habitat"]
    depth_metrics = results.get("depth/habitat", {})
    depth_bytes = next((v for k, v in depth_metrics.items() if "bytes" in k.lower()), None)
    depth = depth_bytes / 10_000 if depth_bytes is not None else None

    width = max(len(r[0]) for r in table)
    peer_width = max(len(r[2]) for r in table)
    header = f"{'operation':<{width}}  {'Habitat ns':>10}  {'compared with':<{peer_width}}  {'their ns':>10}  {'ratio':>8}  {'target':>8}  met"
    print(header)
    print("-" * len(header))
    failures = 0
    for row, h, peer, p, ratio, target in table:
        met = "" if target is None or ratio is None else ("yes" if ratio <= target else "NO")
        if met == "NO":
            failures += 1
        target_text = "-" if target is None else f"<= {target:.3g}"
        print(f"{row:<{width}}  {fmt(h):>10}  {peer:<{peer_width}}  {fmt(p):>10}  {fmt(ratio) if ratio is not None else '-':>8}  {target_text:>8}  {met}")
    print()
    if mallocs is not None:
        print(f"mallocs per field read, beyond the floor's: {mallocs:.6f} (target: 0)")
    if depth is not None:
        print(f"memory per frame at depth 10,000: {depth:.0f} bytes (the changed field: 8 bytes, an Int)")

    if args.smoke:
        missing = [name for _, name, _, peer, _ in ROWS for name in (name, peer) if name not in results]
        if missing:
            print(f"smoke pass: missing benchmarks {sorted(set(missing))}", file=sys.stderr)
            sys.exit(1)
        print("smoke pass: every benchmark ran (targets are not checked on a smoke pass)")
        return

    if args.tsv:
        with open(args.tsv, "w") as handle:
            handle.write("name\thabitat_ns\tpeer\tpeer_ns\tratio\ttarget\n")
            for row, h, peer, p, ratio, target in table:
                handle.write("\t".join([
                    row, f"{h:.3f}" if h is not None else "", peer, f"{p:.3f}" if p is not None else "",
                    f"{ratio:.4f}" if ratio is not None else "", f"{target:.4g}" if target is not None else "",
                ]) + "\n")
    if args.svg:
        write_svg(args.svg, table)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write("| operation | Habitat ns/op | compared with | their ns/op | ratio | target | met |\n")
            handle.write("| --- | ---: | --- | ---: | ---: | ---: | :---: |\n")
            for row, h, peer, p, ratio, target in table:
                met = "" if target is None or ratio is None else ("yes" if ratio <= target else "**no**")
                target_text = "-" if target is None else f"<= {target:.3g}"
                ratio_text = "-" if ratio is None else (f"{ratio:.4f}" if ratio < 0.1 else f"{ratio:.2f}")
                handle.write(f"| {row} | {fmt(h)} | {peer} | {fmt(p)} | {ratio_text} | {target_text} | {met} |\n")
            if mallocs is not None:
                handle.write(f"\nMallocs per field read beyond the floor's: {mallocs:.6f} (target 0).  \n")
            if depth is not None:
                handle.write(f"Memory per frame at depth 10,000: {depth:.0f} bytes (the changed field is an 8-byte Int).\n")
    print(f"{failures} target(s) missed")


def write_svg(path, table):
    """A log-scale bar chart: Habitat against each peer, per row."""
    rows = [r for r in table if r[1] and r[3]]
    left, bar, gap, width = 330, 14, 14, 520
    height = 40 + len(rows) * (2 * bar + gap) + 40
    values = [v for r in rows for v in (r[1], r[3])]
    low, high = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))

    def x(value):
        return left + (math.log10(value) - low) / (high - low) * width

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 120}" height="{height}" font-family="sans-serif" font-size="11">',
             '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="10" y="20" font-size="14" font-weight="bold">Habitat vs peers: ns per operation (log scale, shorter is faster)</text>']
    for exponent in range(low, high + 1):
        gx = x(10 ** exponent)
        parts.append(f'<line x1="{gx:.1f}" y1="30" x2="{gx:.1f}" y2="{height - 30}" stroke="#ddd"/>')
        parts.append(f'<text x="{gx:.1f}" y="{height - 15}" text-anchor="middle" fill="#666">1e{exponent}</text>')
    y = 40
    for row, h, peer, p, ratio, target in rows:
        parts.append(f'<text x="{left - 8}" y="{y + bar - 3}" text-anchor="end">{html.escape(row)}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{max(1, x(h) - left):.1f}" height="{bar - 2}" fill="#2a7ab8"/>')
        parts.append(f'<text x="{x(h) + 4:.1f}" y="{y + bar - 3}">Habitat {fmt(h)}</text>')
        y += bar
        parts.append(f'<text x="{left - 8}" y="{y + bar - 3}" text-anchor="end" fill="#666">{html.escape(peer)}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{max(1, x(p) - left):.1f}" height="{bar - 2}" fill="#bbb"/>')
        parts.append(f'<text x="{x(p) + 4:.1f}" y="{y + bar - 3}" fill="#666">{fmt(p)}</text>')
        y += bar + gap
    parts.append("</svg>")
    with open(path, "w") as handle:
        handle.write("\n".join(parts))


if __name__ == "__main__":
    main()
