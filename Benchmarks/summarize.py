#!/usr/bin/env python3
"""Turns benchmark runs into Habitat's comparison and growth tables.

Inputs: the harness's Influx CSV files (one per pass), the growth runner's TSV files (one per
pass), and optionally instructions.tsv from instructions.sh. Each comparison row pairs a Habitat
benchmark with the peer or floor measured in the same run; values are medians per operation
across the passes. ratio = habitat / peer; target = the largest ratio the target allows.
"""
import argparse
import csv
import html
import math
import statistics
import sys
from collections import defaultdict

# Inner operations per measured iteration (the benchmarks' scaling factors).
MEGA = {"read/habitat", "read/floor", "two-threads/habitat", "two-threads/habitat-one-thread"}


def scale(name):
    if name in MEGA:
        return 1_000_000
    if name.startswith(("save", "restore-", "depth/")):
        return 1
    return 1_000


# (row, habitat benchmark, peer label, peer benchmark, target ratio or None)
ROWS = [
    ("read one field, no scope", "read/habitat", "plain global struct (floor)", "read/floor", 5),
    ("read one field, no scope", "read/habitat", "swift-dependencies @Dependency", "read/swift-dependencies", 0.01),
    ("read one field, no scope", "read/habitat", "Swinject singleton resolve", "read/swinject", 0.01),
    ("read one field in a scope", "scoped-read/habitat", "the same read in withDependencies", "scoped-read/swift-dependencies", 1 / 15),
    ("scope enter+leave, 1 field set, 1 read", "scope/habitat", "withDependencies, plain set", "scope/swift-dependencies", 0.5),
    ("scope enter+leave, 1 field set, 1 read", "scope/habitat", "TaskLocal.withValue, prebuilt class box (floor)", "scope/tasklocal-box", None),
    ("scope enter+leave, 1 field set, 1 read", "scope/habitat", "TaskLocal: copy, set, box, withValue (same work)", "scope/tasklocal-copy-box", None),
    ("scope enter+leave, 1 field set, 1 read", "scope/habitat", "extra: withDependencies get+set (more work)", "scope/swift-dependencies-get-set", None),
    ("scope enter+leave, 1 field set, 1 read", "scope/habitat", "Swinject child container + resolve", "scope/swinject", None),
    ("3 nested scopes, 1 read", "nested-scopes/habitat", "withDependencies x3, plain set", "nested-scopes/swift-dependencies", None),
    ("3 nested scopes, 1 read", "nested-scopes/habitat", "TaskLocal copy+box x3 (same work)", "nested-scopes/tasklocal-copy-box", None),
    ("async scope, Task.yield inside, 1 read", "async-scope/habitat", "async withDependencies, plain set", "async-scope/swift-dependencies", None),
    ("async scope, Task.yield inside, 1 read", "async-scope/habitat", "TaskLocal copy+box (same work)", "async-scope/tasklocal-copy-box", None),
    ("push modified copy + pop", "push-pop/habitat", "unsynchronised array (floor)", "push-pop/floor", 1.5),
    ("push modified copy + pop", "push-pop/habitat", "the same array behind a mutex", "push-pop/locked-floor", None),
    ("login + logout", "login-logout/habitat", "same two changes in place, array + mutex (floor)", "login-logout/floor", None),
    ("login + logout, autosave on (JSON files)", "login-logout/habitat-autosave", "Habitat, autosave off", "login-logout/habitat", 2),
    ("two threads reading, per read", "two-threads/habitat", "Habitat, one thread", "two-threads/habitat-one-thread", 2),
    ("two threads reading, per read", "two-threads/habitat", "swift-dependencies, two threads", "two-threads/swift-dependencies", None),
    ("save snapshot (50 keys), same token", "save/habitat", "token read + compared, durable snapshot write (floor)", "save/floor-durable", None),
    ("save snapshot (50 keys), same token", "save/habitat", "extra: JSONEncoder + Data.write, not durable", "save/floor-plain", None),
    ("save snapshot (50 keys), new token", "save-new-token/habitat", "durable writes of token and snapshot (floor)", "save-new-token/floor", None),
    ("per request: bind user+token+clock, 3 reads, unbind", "request/habitat", "values as a parameter (floor)", "request/floor", None),
    ("per request: bind user+token+clock, 3 reads, unbind", "request/habitat", "one bare @TaskLocal struct", "request/tasklocal", None),
    ("per request: bind user+token+clock, 3 reads, unbind", "request/habitat", "withDependencies + @Dependency", "request/swift-dependencies", None),
    ("restore snapshot, 10 keys", "restore-10/habitat", "decode + token read (floor)", "restore-10/floor", 1.5),
    ("restore snapshot, 50 keys", "restore-50/habitat", "decode + token read (floor)", "restore-50/floor", 1.5),
    ("restore snapshot, 1,000 keys", "restore-1000/habitat", "decode + token read (floor)", "restore-1000/floor", 1.5),
]

# Benchmark name -> instruction-probe operation (instructions.sh).
PROBES = {
    "read/habitat": "read", "read/floor": "read-floor", "read/swift-dependencies": "read-swift-dependencies",
    "scoped-read/habitat": "scoped-read", "scope/habitat": "scope",
    "scope/swift-dependencies": "scope-swift-dependencies", "scope/tasklocal-box": "scope-tasklocal-box",
    "scope/tasklocal-copy-box": "scope-tasklocal-copy-box", "push-pop/habitat": "push-pop",
    "push-pop/floor": "push-pop-floor", "push-pop/locked-floor": "push-pop-locked-floor",
    "login-logout/habitat": "login-logout", "login-logout/floor": "login-logout-floor",
    "request/habitat": "request", "request/floor": "request-floor", "request/tasklocal": "request-tasklocal",
    "request/swift-dependencies": "request-swift-dependencies",
}

# Growth groups: (group, metric, title, x label, unit, peers in order)
GROWTH = [
    ("concurrent-scopes", "total_ns", "tasks each in its own open scope (100 reads + push/pop each): total time", "tasks", "ns",
     ["swift-dependencies", "tasklocal"]),
    ("concurrent-scopes", "heap_bytes_per_scope", "heap per open scope", "tasks", "bytes", ["swift-dependencies", "tasklocal"]),
    ("subscribers", "ns_per_login_logout", "login + logout with N change subscribers", "subscribers", "ns", ["floor", "streams"]),
    ("subscribers", "worst_1000_reads_ns", "slowest 1,000-read block on another thread meanwhile", "subscribers", "ns", ["floor", "streams"]),
    ("idle-subscribers", "ns_per_login_logout", "login + logout with N idle subscribers (newest change kept, never read)", "subscribers", "ns", ["floor", "streams"]),
    ("idle-subscribers", "worst_1000_reads_ns", "slowest 1,000-read block meanwhile, idle subscribers", "subscribers", "ns", ["floor", "streams"]),
    ("store-read", "ns", "JSONFileStore: read one key", "keys in the document", "ns", ["floor"]),
    ("store-write", "ns", "JSONFileStore: write one key", "keys in the document", "ns", ["floor"]),
    ("restore", "ns", "session restore", "config keys", "ns", ["floor"]),
    ("churn", "ns_per_read", "read while N threads push and pop", "writer threads", "ns", ["floor"]),
]
PEER_LABELS = {
    ("concurrent-scopes", "swift-dependencies"): "withDependencies + nested override",
    ("concurrent-scopes", "tasklocal"): "TaskLocal copy+box + nested binding",
    ("subscribers", "floor"): "array + mutex, yields under the lock",
    ("idle-subscribers", "floor"): "array + mutex, yields under the lock",
    ("subscribers", "streams"): "no stack, no lock: plain streams (control)",
    ("idle-subscribers", "streams"): "no stack, no lock: plain streams (control)",
    ("store-read", "floor"): "Data read + JSONDecoder of the dictionary",
    ("store-write", "floor"): "decode, set, encode, durable write",
    ("restore", "floor"): "decode snapshot + read token",
    ("churn", "floor"): "array behind a mutex",
}


def load_harness(paths):
    """{benchmark: {metric: p50 per iteration}}, the median over the passes."""
    samples = defaultdict(lambda: defaultdict(list))
    for path in paths:
        with open(path, newline="") as handle:
            lines = [line for line in handle if not line.startswith("#")]
        for row in csv.DictReader(lines):
            if row.get("percentile") == "50.0":
                samples[row["test"]][row["metric"]].append(float(row["value"]))
    return {test: {m: statistics.median(v) for m, v in metrics.items()} for test, metrics in samples.items()}


def load_growth(paths):
    """{(group, size, side, metric): median over the passes}."""
    samples = defaultdict(list)
    for path in paths:
        with open(path) as handle:
            for line in handle:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 5:
                    group, size, side, metric, value = parts
                    samples[(group, int(size), side, metric)].append(float(value))
    return {key: statistics.median(values) for key, values in samples.items()}


def load_instructions(path):
    result = {}
    if path:
        with open(path) as handle:
            for line in handle:
                parts = line.split()
                if len(parts) == 2 and parts[1].isdigit():
                    result[parts[0]] = int(parts[1])
    return result


def per_op(results, name):
    value = results.get(name, {}).get("Time(wallclock)")
    return None if value is None else value / scale(name)


def fmt(value):
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def ratio_text(ratio):
    return "-" if ratio is None else (f"{ratio:.4f}" if ratio < 0.1 else f"{ratio:.2f}")


def growth_rows(growth):
    """(title, metric, unit, size, habitat value, peer label, peer value) for every growth point."""
    rows = []
    for group, metric, title, _, unit, peers in GROWTH:
        sizes = sorted({k[1] for k in growth if k[0] == group and k[3] == metric})
        for size in sizes:
            h = growth.get((group, size, "habitat", metric))
            for peer in peers:
                rows.append((group, title, metric, unit, size, h, PEER_LABELS[(group, peer)], growth.get((group, size, peer, metric))))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--csv", nargs="*", default=[])
    parser.add_argument("--growth", nargs="*", default=[])
    parser.add_argument("--instructions")
    parser.add_argument("--tsv")
    parser.add_argument("--growth-tsv")
    parser.add_argument("--svg")
    parser.add_argument("--growth-svg")
    parser.add_argument("--markdown")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    results = load_harness(args.csv)
    growth = load_growth(args.growth)
    instructions = load_instructions(args.instructions)

    table = []
    for row, habitat, peer, peer_name, target in ROWS:
        h, p = per_op(results, habitat), per_op(results, peer_name)
        ratio = h / p if h is not None and p else None
        hi, pi = instructions.get(PROBES.get(habitat, "")), instructions.get(PROBES.get(peer_name, ""))
        table.append((row, h, peer, p, ratio, target, hi, pi))

    mallocs = None
    if "read/habitat" in results and "read/floor" in results:
        extra = results["read/habitat"].get("Malloc(total)", 0) - results["read/floor"].get("Malloc(total)", 0)
        mallocs = extra / scale("read/habitat")
    depth_metrics = results.get("depth/habitat", {})
    depth_bytes = next((v for k, v in depth_metrics.items() if "bytes" in k.lower()), None)
    depth = depth_bytes / 10_000 if depth_bytes is not None else None

    width = max(len(r[0]) for r in table)
    peer_width = max(len(r[2]) for r in table)
    header = f"{'operation':<{width}}  {'Habitat ns':>10}  {'compared with':<{peer_width}}  {'their ns':>10}  {'ratio':>8}  {'target':>8}  met"
    print(header)
    print("-" * len(header))
    failures = []
    for row, h, peer, p, ratio, target, _, _ in table:
        met = "" if target is None or ratio is None else ("yes" if ratio <= target else "NO")
        if met == "NO":
            failures.append(f"{row} vs {peer}")
        target_text = "-" if target is None else f"<= {target:.3g}"
        print(f"{row:<{width}}  {fmt(h):>10}  {peer:<{peer_width}}  {fmt(p):>10}  {ratio_text(ratio):>8}  {target_text:>8}  {met}")
    print()
    for group, title, metric, unit, size, h, peer, p in growth_rows(growth):
        ratio = h / p if h is not None and p else None
        print(f"{group:<18} {size:>6}  {metric:<22} Habitat {fmt(h):>12} {unit:<5}  {peer:<40} {fmt(p):>12}  {ratio_text(ratio):>8}")
    print()
    if mallocs is not None:
        print(f"mallocs per field read, beyond the floor's: {mallocs:.6f} (target: 0)")
    for side in ("floor", "tasklocal", "swift-dependencies", "habitat"):
        name = f"request/{side}"
        if name in results and "Malloc(total)" in results[name]:
            print(f"mallocs per request, {side}: {results[name]['Malloc(total)'] / scale(name):.2f}")
    if depth is not None:
        print(f"memory per frame at depth 10,000: {depth:.0f} bytes (the changed field: 8 bytes, an Int)")

    if args.smoke:
        names = {n for _, h, _, p, _ in ROWS for n in (h, p)}
        missing = sorted(n for n in names if n not in results)
        groups = {g for g, *_ in GROWTH}
        missing += sorted(g for g in groups if not any(k[0] == g for k in growth))
        if missing:
            print(f"smoke pass: missing benchmarks {missing}", file=sys.stderr)
            sys.exit(1)
        print("smoke pass: every benchmark ran (targets are not checked on a smoke pass)")
        return

    if args.tsv:
        with open(args.tsv, "w") as handle:
            handle.write("name\thabitat_ns\tpeer\tpeer_ns\tratio\ttarget\tkind\n")
            for row, h, peer, p, ratio, target, _, _ in table:
                handle.write("\t".join([
                    row, f"{h:.3f}" if h is not None else "", peer, f"{p:.3f}" if p is not None else "",
                    f"{ratio:.4f}" if ratio is not None else "", f"{target:.4g}" if target is not None else "", "compare",
                ]) + "\n")
            for group, title, metric, unit, size, h, peer, p in growth_rows(growth):
                if unit != "ns":
                    continue
                ratio = h / p if h is not None and p else None
                handle.write("\t".join([
                    f"{title} @ {size:,}", f"{h:.3f}" if h is not None else "", peer, f"{p:.3f}" if p is not None else "",
                    f"{ratio:.4f}" if ratio is not None else "", "", "growth",
                ]) + "\n")
    if args.growth_tsv:
        with open(args.growth_tsv, "w") as handle:
            handle.write("group\tsize\tside\tmetric\tvalue\n")
            for (group, size, side, metric), value in sorted(growth.items()):
                handle.write(f"{group}\t{size}\t{side}\t{metric}\t{value:.3f}\n")
    if args.svg:
        write_svg(args.svg, table)
    if args.growth_svg:
        write_growth_svg(args.growth_svg, growth)
    if args.markdown:
        write_markdown(args.markdown, table, growth, mallocs, depth, bool(instructions))
    print(f"{len(failures)} target(s) missed" + (": " + "; ".join(failures) if failures else ""))


def write_markdown(path, table, growth, mallocs, depth, with_instructions):
    with open(path, "w") as handle:
        extra_head = " Habitat instr | their instr |" if with_instructions else ""
        extra_rule = " ---: | ---: |" if with_instructions else ""
        handle.write(f"| operation | Habitat ns/op | compared with | their ns/op | ratio |{extra_head} target | met |\n")
        handle.write(f"| --- | ---: | --- | ---: | ---: |{extra_rule} ---: | :---: |\n")
        for row, h, peer, p, ratio, target, hi, pi in table:
            met = "" if target is None or ratio is None else ("yes" if ratio <= target else "**no**")
            target_text = "-" if target is None else f"<= {target:.3g}"
            extra = f" {hi:,} | {pi:,} |" if with_instructions and hi and pi else (" | |" if with_instructions else "")
            handle.write(f"| {row} | {fmt(h)} | {peer} | {fmt(p)} | {ratio_text(ratio)} |{extra} {target_text} | {met} |\n")
        if mallocs is not None:
            handle.write(f"\nMallocs per field read beyond the floor's: {mallocs:.6f} (target 0).  \n")
        if depth is not None:
            handle.write(f"Memory per frame at depth 10,000: {depth:.0f} bytes (the changed field is an 8-byte Int).\n")
        handle.write("\n### Growth\n")
        last = None
        for group, title, metric, unit, size, h, peer, p in growth_rows(growth):
            if (group, metric) != last:
                handle.write(f"\n**{title}** ({unit})\n\n| {GROWTH_X[(group, metric)]} | Habitat | compared with | theirs | ratio |\n| ---: | ---: | --- | ---: | ---: |\n")
                last = (group, metric)
            ratio = h / p if h is not None and p else None
            handle.write(f"| {size:,} | {fmt(h)} | {peer} | {fmt(p)} | {ratio_text(ratio)} |\n")


GROWTH_X = {(g, m): x for g, m, _, x, _, _ in GROWTH}


def write_svg(path, table):
    """A log-scale bar chart: Habitat against each peer, per comparison row."""
    rows = [r for r in table if r[1] and r[3]]
    left, bar, gap, width = 360, 14, 14, 520
    height = 40 + len(rows) * (2 * bar + gap) + 40
    values = [v for r in rows for v in (r[1], r[3])]
    low, high = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))

    def x(value):
        return left + (math.log10(value) - low) / max(1, high - low) * width

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 130}" height="{height}" font-family="sans-serif" font-size="11">',
             '<rect width="100%" height="100%" fill="white"/>',
             '<text x="10" y="20" font-size="14" font-weight="bold">Habitat vs peers and floors: ns per operation (log scale, shorter is faster)</text>']
    for exponent in range(low, high + 1):
        gx = x(10 ** exponent)
        parts.append(f'<line x1="{gx:.1f}" y1="30" x2="{gx:.1f}" y2="{height - 30}" stroke="#ddd"/>')
        parts.append(f'<text x="{gx:.1f}" y="{height - 15}" text-anchor="middle" fill="#666">1e{exponent}</text>')
    y = 40
    for row, h, peer, p, *_ in rows:
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


def write_growth_svg(path, growth):
    """One small panel per growth measurement: x = work size, y = value (log), a line per side."""
    colors = {"habitat": "#2a7ab8", "floor": "#999", "swift-dependencies": "#d0802a", "tasklocal": "#999"}
    panel_w, panel_h, cols = 340, 210, 2
    panels = [g for g in GROWTH if any(k[0] == g[0] and k[3] == g[1] for k in growth)]
    rows = math.ceil(len(panels) / cols)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{cols * panel_w + 20}" height="{rows * panel_h + 50}" font-family="sans-serif" font-size="10">',
             '<rect width="100%" height="100%" fill="white"/>',
             '<text x="10" y="20" font-size="14" font-weight="bold">How costs grow: Habitat (blue) against its floor or peer (log y)</text>']
    for index, (group, metric, title, xlabel, unit, peers) in enumerate(panels):
        ox, oy = 10 + (index % cols) * panel_w, 40 + (index // cols) * panel_h
        sizes = sorted({k[1] for k in growth if k[0] == group and k[3] == metric})
        sides = ["habitat"] + peers
        values = [growth[(group, s, side, metric)] for s in sizes for side in sides if growth.get((group, s, side, metric), 0) > 0]
        if not values:
            continue
        low, high = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
        high = max(high, low + 1)
        left, top, w, h = ox + 50, oy + 28, panel_w - 80, panel_h - 75
        parts.append(f'<text x="{ox}" y="{oy + 12}" font-weight="bold">{html.escape(title[:60])}</text>')
        parts.append(f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#ccc"/>')
        for exponent in range(low, high + 1):
            gy = top + h - (exponent - low) / (high - low) * h
            parts.append(f'<text x="{left - 4}" y="{gy + 3:.1f}" text-anchor="end" fill="#666">1e{exponent}</text>')

        def px(i):
            return left + (i + 0.5) / len(sizes) * w

        def py(value):
            return top + h - (math.log10(value) - low) / (high - low) * h
        for i, size in enumerate(sizes):
            parts.append(f'<text x="{px(i):.1f}" y="{top + h + 12}" text-anchor="middle" fill="#666">{size:,}</text>')
        parts.append(f'<text x="{left + w / 2}" y="{top + h + 25}" text-anchor="middle" fill="#666">{html.escape(xlabel)} ({unit} on y)</text>')
        for n, side in enumerate(sides):
            points = [(px(i), py(growth[(group, s, side, metric)])) for i, s in enumerate(sizes) if growth.get((group, s, side, metric), 0) > 0]
            color = colors.get(side, "#999")
            dash = ' stroke-dasharray="4 3"' if n >= 2 else ""
            if len(points) > 1:
                parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="' + " ".join(f"{a:.1f},{b:.1f}" for a, b in points) + '"/>')
            for a, b in points:
                parts.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="2.5" fill="{color}"/>')
            label = "Habitat" if side == "habitat" else PEER_LABELS[(group, side)]
            parts.append(f'<text x="{left + 4}" y="{top + 10 + 11 * n}" fill="{color}">{html.escape(label)}</text>')
    parts.append("</svg>")
    with open(path, "w") as handle:
        handle.write("\n".join(parts))


if __name__ == "__main__":
    main()
