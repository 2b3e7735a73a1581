#!/usr/bin/env python3
"""Runs the scaling benchmark (issue 26) and prints its tables, the goals, a JSON file and an SVG chart.

Each row of ScalingBenchmarks measures one contended path of ours at 1, 2, 4, ... threads up to the core count, then
at 2x and 4x the cores, next to its anchors in the same process (contenders in turns, median of several rounds, wall
time per operation). This script prints one Markdown table per row (the median ns/op of every contender, and the
median over the rounds of ours divided by each of the row's main anchors in the same round), then each of issue
26's goals next to the measured ratios. With --check (as `make bench-check` runs it) it measures only the counts a
2-core machine can show, gates each goal at 1 and 2 threads and the oversubscribed wait.set and semaphore rows at 4x
the cores, and exits 1 when one is missed.

    python3 Benchmarks/scale.py                     # build in release here, run, print, write .build/scaling/
    python3 Benchmarks/scale.py --quick --rows lock # a short try of one row (any argument of the binary passes on)
    python3 Benchmarks/scale.py --binary .build-device/ScalingBenchmarks   # a prebuilt binary (make bench-scale-static)
    python3 Benchmarks/scale.py --from-json scaling.json                   # tables and chart from a saved run
    python3 Benchmarks/scale.py --check             # the gated counts only; exit 1 on a missed goal
"""
import argparse
import html
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_OUT = os.path.join(ROOT, ".build", "scaling")

# The anchors each row's ratio columns divide by, in order.
RATIO_ANCHORS = {
    "lock": ["NIOLockedValueBox"],
    "wait-set": ["NIOLockedValueBox", "MCS lock (spin)", "FIFO lock (park)"],
    "async-set": ["DispatchQueue.async"],
    "suspend-set": ["actor"],
    "semaphore-lock": ["DispatchSemaphore", "FIFO lock (park)"],
    "semaphore-limiter": ["DispatchSemaphore(4)"],
    "gcd-sync": ["DispatchQueue.sync"],
    "subject-send": ["subscriber's work (pthread_mutex)"],
    "queuer": ["OperationQueue"],
}

# Issue 26's goals: (row, ours, anchor, limit, which counts, text). Counts: "1" (one thread), "2..cores",
# "1..cores", ">cores" (more threads than cores) or "all".
GOALS = [
    ("wait-set", "QueueSafeValue wait.set", "MCS lock (spin)", 1.5, "2..cores",
     "wait.set, strict order, half highest, 2 ... cores threads: <= 1.5x the MCS reference"),
    ("wait-set", "QueueSafeValue wait.set", "NIOLockedValueBox", 1.0, "1",
     "wait.set, 1 thread: <= 1.0x NIOLockedValueBox"),
    ("wait-set", "QueueSafeValue wait.set", "FIFO lock (park)", 1.5, ">cores",
     "wait.set, more threads than cores: <= 1.5x a strict-FIFO reference that parks each waiter"),
    ("suspend-set", "QueueSafeValue suspend.set", "actor", 2.0, "all",
     "suspend.set from 1 ... 4x cores tasks: <= 2x the actor"),
    ("semaphore-lock", "CountingSemaphore.perform", "DispatchSemaphore", 1.2, "1",
     "CountingSemaphore.perform as a lock, uncontended: <= 1.2x DispatchSemaphore"),
    ("semaphore-lock", "CountingSemaphore.perform", "DispatchSemaphore", 1.5, "1..cores",
     "CountingSemaphore.perform as a lock, 1 ... cores threads: <= 1.5x DispatchSemaphore"),
    ("semaphore-lock", "CountingSemaphore.perform", "FIFO lock (park)", 1.5, ">cores",
     "CountingSemaphore.perform as a lock, more threads than cores: <= 1.5x a strict-FIFO reference that parks "
     "each waiter"),
    ("lock", "AtomicBox.mutate", "NIOLockedValueBox", 1.0, "1..cores",
     "AtomicBox.mutate, 1 ... cores threads: <= 1.0x NIOLockedValueBox"),
    ("lock", "MutexLock.withLock", "NIOLockedValueBox", 1.0, "1..cores",
     "MutexLock.withLock, 1 ... cores threads: <= 1.0x NIOLockedValueBox"),
    ("subject-send", "CallbackSubject.send", "subscriber's work (pthread_mutex)", 2.0, "all",
     "CallbackSubject.send, 1 .untouch subscriber: <= 2x the subscriber's own work"),
    ("queuer", "Queuer", "OperationQueue", 1.0, "all",
     "Queuer, tiny operations, width T: <= 1.0x OperationQueue"),
    ("gcd-sync", "GCDQueue.sync", "DispatchQueue.sync", 1.1, "all",
     "GCDQueue.sync: <= 1.1x DispatchQueue.sync, uncontended and at every count"),
]

# A fixed colour per contender, so that an anchor looks the same in every panel; ours are red and purple.
COLOURS = {
    "pthread_mutex": "#1f77b4",
    "NIOLockedValueBox": "#2ca02c",
    "Synchronization.Mutex": "#8c564b",
    "MCS lock (spin)": "#ff7f0e",
    "ticket lock (spin)": "#bcbd22",
    "FIFO lock (park)": "#17becf",
    "DispatchSemaphore": "#17becf",
    "DispatchSemaphore(4)": "#17becf",
    "DispatchQueue.async": "#2ca02c",
    "DispatchQueue.sync": "#2ca02c",
    "actor": "#2ca02c",
    "OperationQueue": "#2ca02c",
    "subscriber's work (pthread_mutex)": "#1f77b4",
}
OURS_COLOURS = ["#d62728", "#9467bd"]


def run_benchmark(binary, passed):
    """Runs the benchmark binary with `passed` arguments; returns its JSON report."""
    if binary is None:
        build = ["swift", "build", "-c", "release", "--product", "ScalingBenchmarks"]
        print("scale: " + " ".join(build), file=sys.stderr, flush=True)
        subprocess.run(build, cwd=HERE, check=True, stdout=sys.stderr)
        binary = os.path.join(HERE, ".build", "release", "ScalingBenchmarks")
    print(f"scale: {binary} {' '.join(passed)}", file=sys.stderr, flush=True)
    completed = subprocess.run([binary] + passed, check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(completed.stdout)


def format_ns(value):
    if value is None:
        return "—"
    if value < 10:
        return f"{value:.1f} ns"
    if value < 100_000:
        return f"{value:,.0f} ns"
    return f"{value / 1000:,.0f} µs"


def format_ratio(value):
    if value is None:
        return "—"
    return f"{value:.2f}×" if value < 10 else f"{value:,.0f}×"


def median_of(point, name):
    result = point["results"].get(name)
    return None if result is None else result["median"]


def ratio(point, ours, anchor):
    """The median over the rounds of ours / the anchor, each pair measured in the same round, one after the other.

    A slow spell of a shared machine then weighs on both sides of a ratio alike, which it does not on the ratio of
    the two medians."""
    mine, theirs = point["results"].get(ours), point["results"].get(anchor)
    if mine is None or theirs is None:
        return None
    ratios = sorted(a / b for a, b in zip(mine["rounds"], theirs["rounds"]) if b > 0)
    return ratios[(len(ratios) - 1) // 2] if ratios else None


def tables(report):
    """The Markdown tables, one per row, as one string."""
    lines = []
    for row in report["rows"]:
        names = [contender["name"] for contender in row["contenders"]]
        ours = [contender["name"] for contender in row["contenders"] if contender["ours"]]
        anchors = [name for name in RATIO_ANCHORS.get(row["id"], []) if name in names]
        ratio_columns = [(mine, anchor) for mine in ours for anchor in anchors]
        lines.append(f"**{row['title']}** (`{row['id']}`)")
        lines.append("")
        header = [row["axis"]] + names + [f"{mine} ÷ {anchor}" for mine, anchor in ratio_columns]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for point in row["points"]:
            cells = [str(point["threads"])]
            cells += [format_ns(median_of(point, name)) for name in names]
            cells += [format_ratio(ratio(point, mine, anchor)) for mine, anchor in ratio_columns]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def counts_for(which, counts, cores):
    return {
        "1": [count for count in counts if count == 1],
        "2..cores": [count for count in counts if 2 <= count <= cores],
        "1..cores": [count for count in counts if count <= cores],
        ">cores": [count for count in counts if count > cores],
        "all": counts,
    }[which]


def goals(report):
    """Each goal next to the ratios measured at the counts it names, as lines of text."""
    lines = []
    rows = {row["id"]: row for row in report["rows"]}
    for row_id, ours, anchor, limit, which, text in GOALS:
        row = rows.get(row_id)
        if row is None:
            continue
        points = {point["threads"]: point for point in row["points"]}
        counts = counts_for(which, sorted(points), report["cores"])
        measured = [(count, ratio(points[count], ours, anchor)) for count in counts]
        measured = [(count, value) for count, value in measured if value is not None]
        if not measured:
            lines.append(f"- {text}: not measured in this run")
            continue
        verdict = "met" if all(value <= limit for _, value in measured) else "missed"
        shown = ", ".join(f"{count}: {value:.2f}×" for count, value in measured)
        lines.append(f"- {text} — goal ≤{limit}×: **{verdict}** ({row['axis']} {shown})")
    return "\n".join(lines)


# What `--check` (make bench-check) gates, on any machine: every goal at 1 and 2 threads, and the rows that
# collapsed when oversubscribed at 4x the cores (8 threads on 2 cores). A machine with 2 cores can show these; the
# counts between 2 and the cores of a bigger machine are measured by a plain run there.
GATED_COUNTS = (1, 2)
GATED_OVERSUBSCRIBED_ROWS = ("wait-set", "semaphore-lock")


def gated_counts(row_id, cores):
    """The thread counts at which `--check` gates a row's goals."""
    counts = list(GATED_COUNTS)
    if row_id in GATED_OVERSUBSCRIBED_ROWS:
        counts.append(4 * cores)
    return counts


def check_arguments(passed, cores):
    """The benchmark's arguments for `--check`: only the gated counts, unless the caller chose counts."""
    if "--threads" in passed:
        return passed
    return passed + ["--threads", ",".join(str(count) for count in sorted({1, 2, 4 * cores}))]


def gate(report):
    """The goals `--check` gates, each at the gated counts it names; returns the lines and the missed goals."""
    lines, missed = [], []
    rows = {row["id"]: row for row in report["rows"]}
    for row_id, ours, anchor, limit, which, text in GOALS:
        row = rows.get(row_id)
        if row is None:
            missed.append(f"{text}: the row was not run")
            continue
        points = {point["threads"]: point for point in row["points"]}
        named = counts_for(which, sorted(points), report["cores"])
        counts = [count for count in named if count in gated_counts(row_id, report["cores"])]
        if not counts:
            continue
        measured = [(count, ratio(points[count], ours, anchor)) for count in counts]
        failed = [(count, value) for count, value in measured if value is None or value > limit]
        shown = ", ".join(f"{count}: {'—' if value is None else f'{value:.2f}×'}" for count, value in measured)
        verdict = "MISSED" if failed else "met"
        lines.append(f"{verdict:<7} {text} ({row['axis']} {shown})")
        if failed:
            missed.append(text)
    return lines, missed


def svg_chart(report):
    """An SVG line chart: ns/op against the thread count, log scale on y, one panel per row, one line per contender."""
    columns = 2
    panel_width, panel_height = 640, 330
    left, top, plot_width, plot_height = 64, 46, 300, 230
    rows = report["rows"]
    panel_rows = math.ceil(len(rows) / columns)
    width, height = columns * panel_width, panel_rows * panel_height + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="12" y="24" font-size="15" font-weight="bold">{html.escape(title_of(report))}</text>',
    ]
    for index, row in enumerate(rows):
        x0 = (index % columns) * panel_width
        y0 = 40 + (index // columns) * panel_height
        out += panel(row, report["cores"], x0, y0, left, top, plot_width, plot_height)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def title_of(report):
    load = f", load average {report['loadAverage']} at the start" if "loadAverage" in report else ""
    return (f"ConcurrencyKit under contention: wall ns per operation (log scale), {report['cores']} cores "
            f"({report['machine']}{load}), median of {report['rounds']} rounds")


def panel(row, cores, x0, y0, left, top, plot_width, plot_height):
    counts = [point["threads"] for point in row["points"]]
    values = [result["median"] for point in row["points"] for result in point["results"].values()
              if result["median"] > 0]
    out = [f'<text x="{x0 + 12}" y="{y0 + 22}" font-size="12" font-weight="bold">'
           f'{html.escape(row["title"].replace("`", ""))}</text>']
    if not counts or not values:
        return out
    low = 10 ** math.floor(math.log10(min(values)))
    high = 10 ** math.ceil(math.log10(max(values)))
    if high <= low:
        high = low * 10
    px, py = x0 + left, y0 + top

    def x_of(count):
        if len(counts) == 1:
            return px + plot_width / 2
        return px + plot_width * math.log2(count / counts[0]) / math.log2(counts[-1] / counts[0])

    def y_of(value):
        return py + plot_height * (1 - (math.log10(value) - math.log10(low)) / (math.log10(high) - math.log10(low)))

    out.append(f'<rect x="{px}" y="{py}" width="{plot_width}" height="{plot_height}" fill="none" stroke="#999"/>')
    decade = low
    while decade <= high * 1.001:
        y = y_of(decade)
        out.append(f'<line x1="{px}" y1="{y:.1f}" x2="{px + plot_width}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{px - 6}" y="{y + 4:.1f}" text-anchor="end">{tick_label(decade)}</text>')
        decade *= 10
    for count in counts:
        x = x_of(count)
        out.append(f'<line x1="{x:.1f}" y1="{py}" x2="{x:.1f}" y2="{py + plot_height}" stroke="#f0f0f0"/>')
        out.append(f'<text x="{x:.1f}" y="{py + plot_height + 15}" text-anchor="middle">{count}</text>')
    if counts[0] <= cores <= counts[-1]:
        x = x_of(cores)
        out.append(f'<line x1="{x:.1f}" y1="{py}" x2="{x:.1f}" y2="{py + plot_height}" stroke="#555" '
                   f'stroke-dasharray="4,3"/>')
        out.append(f'<text x="{x + 3:.1f}" y="{py + 11}" fill="#555">cores</text>')
    out.append(f'<text x="{px + plot_width / 2}" y="{py + plot_height + 32}" text-anchor="middle">'
               f'{html.escape(row["axis"])}</text>')
    out.append(f'<text x="{px - 48}" y="{py + plot_height / 2}" text-anchor="middle" '
               f'transform="rotate(-90 {px - 48} {py + plot_height / 2})">ns per operation</text>')
    ours_index = 0
    legend_y = py + 6
    for contender in row["contenders"]:
        name = contender["name"]
        if contender["ours"]:
            colour = OURS_COLOURS[ours_index % len(OURS_COLOURS)]
            ours_index += 1
            style = f'stroke="{colour}" stroke-width="2.6"'
        else:
            colour = COLOURS.get(name, "#7f7f7f")
            style = f'stroke="{colour}" stroke-width="1.5" stroke-dasharray="5,3"'
        points = [(x_of(point["threads"]), y_of(point["results"][name]["median"]))
                  for point in row["points"] if name in point["results"] and point["results"][name]["median"] > 0]
        if not points:
            continue
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        out.append(f'<polyline points="{path}" fill="none" {style}/>')
        for x, y in points:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.6" fill="{colour}"/>')
        lx = px + plot_width + 14
        out.append(f'<line x1="{lx}" y1="{legend_y}" x2="{lx + 22}" y2="{legend_y}" {style}/>')
        label = name + (" (ours)" if contender["ours"] else "")
        out.append(f'<text x="{lx + 28}" y="{legend_y + 4}">{html.escape(label)}</text>')
        legend_y += 17
    return out


def tick_label(value):
    if value >= 1_000_000:
        return f"{value / 1_000_000:g} ms"
    if value >= 1_000:
        return f"{value / 1_000:g} µs"
    return f"{value:g} ns"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", help="a prebuilt ScalingBenchmarks (default: build it here in release)")
    parser.add_argument("--from-json", help="read a saved report instead of running the benchmark")
    parser.add_argument("--json", help="where to write the report (default: .build/scaling/scaling.json)")
    parser.add_argument("--svg", help="where to write the chart (default: .build/scaling/scaling.svg)")
    parser.add_argument("--markdown", help="also write the tables and goals to this file")
    parser.add_argument("--check", action="store_true",
                        help="gate the goals at 1 and 2 threads and the oversubscribed rows at 4x the cores; "
                             "exit 1 when one is missed (make bench-check)")
    arguments, passed = parser.parse_known_args()

    if arguments.from_json:
        with open(arguments.from_json) as file:
            report = json.load(file)
    else:
        if arguments.check:
            cores = int(passed[passed.index("--cores") + 1]) if "--cores" in passed else os.cpu_count() or 1
            passed = check_arguments(passed, cores)
        report = run_benchmark(arguments.binary, passed)

    json_path = arguments.json or os.path.join(DEFAULT_OUT, "scaling.json")
    svg_path = arguments.svg or os.path.join(DEFAULT_OUT, "scaling.svg")
    for path in (json_path, svg_path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if not arguments.from_json or arguments.json:
        with open(json_path, "w") as file:
            json.dump(report, file, indent=1, sort_keys=True)
            file.write("\n")
    with open(svg_path, "w") as file:
        file.write(svg_chart(report))

    text = (f"{title_of(report)}\n\n{tables(report)}\nIssue 26's goals, at every count measured:\n\n{goals(report)}\n")
    print(text)
    if arguments.markdown:
        with open(arguments.markdown, "w") as file:
            file.write(text)
    print(f"scale: report {json_path}, chart {svg_path}", file=sys.stderr)
    if arguments.check:
        lines, missed = gate(report)
        print("Gated (make bench-check):\n\n" + "\n".join(lines))
        if missed:
            print(f"\nscale: {len(missed)} gated goal(s) missed", file=sys.stderr)
            sys.exit(1)
        print("\nscale: every gated goal met")


if __name__ == "__main__":
    main()
