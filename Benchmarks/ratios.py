#!/usr/bin/env python3
"""Runs ConcurrencyKit's benchmarks several times and prints each result as a ratio to its same-run baseline.

A single run's ratio moves by up to ±20% on a small VM, so every ratio is computed within one run (ours and its
baseline measured in the same process) and the median over the runs is reported. With --check, exits 1 when a
goal is missed. Goals are listed in GOALS below; each names two benchmarks by their exact names.
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# (kind, ours, baseline or None, limit, note)
#   "ratio":   p50 wall clock of ours / p50 of baseline <= limit
#   "mallocs": p50 malloc count of ours per 1,000 operations <= limit
#   "ns":      p50 wall clock of ours per operation, in nanoseconds, <= limit
#   "over":    p50 wall clock of ours minus baseline, per operation, in nanoseconds, <= limit
#   "paired":  p50 of a ratio the benchmark itself measured per pair of alternating rounds (in thousandths) <= limit
GOALS = [
    ("ratio", "MutexLock.withLock increment", "baseline pthread_mutex increment", 1.10, "uncontended"),
    ("ratio", "MutexLock.withLock increment", "baseline Synchronization.Mutex increment", 1.35, "uncontended"),
    ("ratio", "AtomicBox.mutate increment", "baseline pthread_mutex increment", 1.10, "uncontended"),
    ("ratio", "AtomicBox.mutate increment", "baseline Synchronization.Mutex increment", 1.35, "uncontended"),
    ("ratio", "AtomicBox.value read", "baseline pthread_mutex read", 1.10, "uncontended"),
    ("ratio", "MutexLock.withLock increment", "baseline NSLock increment", None, "for information"),
    ("ratio", "MutexLock.withLock increment", "baseline DispatchQueue.sync increment", None, "for information"),
    ("ratio", "MutexLock.withLock increment 2 threads", "baseline pthread_mutex increment 2 threads", 1.20, ""),
    ("ratio", "AtomicBox.mutate increment 2 threads", "baseline pthread_mutex increment 2 threads", 1.20, ""),
    ("ratio", "MutexLock.withLock increment 2 threads", "baseline Synchronization.Mutex increment 2 threads", None,
     "for information"),
    ("over", "CallbackQueue.untouch.execute", "baseline direct block call", 5, "ns per call"),
    ("ns", "CallbackQueue.isOnMainQueue", None, 30, "ns per check"),
    ("ns", "baseline Thread.isMainThread", None, None, "ns per check, for information"),
    ("ratio", "CallbackQueue.isOnMainQueue", "baseline Thread.isMainThread", None, "for information"),
    ("mallocs", "CallbackSubject.send to 10 untouch subscribers", None, 0, "per 1,000 sends"),
    ("ratio", "QueueSafeValue wait get", "baseline pthread_mutex read", 5.0, "uncontended"),
    ("ratio", "QueueSafeValue wait set(newValue:)", "baseline pthread_mutex increment", 5.0, "uncontended"),
    ("mallocs", "QueueSafeValue wait get", None, 0, "per 1,000 commands"),
    ("mallocs", "QueueSafeValue wait set(newValue:)", None, 0, "per 1,000 commands"),
    ("ratio", "QueueSafeValue async set(accessClosure:) increment", "baseline DispatchQueue.async increment", 1.5, ""),
    ("ns", "QueueSafeValue suspend get", None, 100, "ns per command, uncontended"),
    ("ratio", "QueueSafeValue 10000 commands 10000 pending", "QueueSafeValue 10000 commands 10 pending", 2.0,
     "cost per command by queue depth"),
    ("ratio", "GCDQueue.async", "baseline DispatchQueue.async", 1.10, "1,000 blocks to a serial queue"),
    ("ratio", "GCDQueue.sync", "baseline DispatchQueue.sync", 1.15, "from a thread not on the queue, pinned"),
    ("ratio", "GCDQueue.isCurrent inside", "baseline DispatchQueue.getSpecific inside", 1.0,
     "a check from inside the queue"),
    ("ns", "GCDQueue.isCurrent inside", None, None, "ns per check, for information"),
    ("ns", "GCDQueue.isCurrent outside", None, None, "ns per check, for information"),
    ("ratio", "Queuer 10000 empty ConcurrentOperations", "baseline OperationQueue 10000 empty BlockOperations", 1.0,
     "per operation"),
    ("ratio", "GroupOperation of 100 ConcurrentOperations", "baseline 100 ConcurrentOperations added directly", 1.5, ""),
    ("ratio", "CountingSemaphore async wait+signal", "baseline continuation semaphore async wait+signal", 1.5,
     "uncontended"),
    ("paired", "Queuer AsyncOperations/OperationQueue BlockOperations alternating rounds", None, 1.2,
     "10,000 of each, per operation, rounds of each alternate"),
    ("ratio", "Queuer 10000 empty AsyncOperations", "baseline OperationQueue 10000 empty BlockOperations", None,
     "per operation, measured one after the other, for information"),
    # ConsumerBenchmarks: the umbrella used as an app uses it, against what the app would pick instead.
    ("ratio", "consumer QueueSafeValue wait get", "consumer pthread_mutex get", 3.0, "consumer shape"),
    ("ratio", "consumer QueueSafeValue wait set(newValue:)", "consumer pthread_mutex set", 3.0, "consumer shape"),
    ("ratio", "consumer QueueSafeValue wait get", "consumer NIOLockedValueBox get", None, "for information"),
    ("ratio", "consumer QueueSafeValue wait get", "consumer Synchronization.Mutex get", None, "for information"),
    ("mallocs", "consumer QueueSafeValue wait get", None, 0, "per 1,000 commands"),
    ("mallocs", "consumer QueueSafeValue wait set(newValue:)", None, 0, "per 1,000 commands"),
    ("ratio", "consumer QueueSafeValue wait set(newValue:) 2 threads", "consumer NIOLockedValueBox set 2 threads", 2.0,
     "contended: throughput at least half"),
    ("ratio", "consumer QueueSafeValue suspend get", "consumer actor get", 2.0, "from a task"),
    ("ratio", "consumer CallbackSubject.send to 1 untouch", "consumer OpenCombine PassthroughSubject.send to 1 sink",
     1.0, ""),
    ("ratio", "consumer CallbackSubject.send to 10 untouch",
     "consumer OpenCombine PassthroughSubject.send to 10 sink", 1.0, ""),
    ("mallocs", "consumer CallbackSubject.send to 1 untouch", None, 0, "per 1,000 sends"),
    ("ratio", "consumer CallbackSubject.values send and next", "consumer AsyncStream yield and next", None,
     "for information"),
    ("ratio", "consumer GCDQueue.sync", "consumer DispatchQueue.sync", 1.15, "unpinned"),
    ("paired", "consumer Queuer/OperationQueue 10000 operations alternating rounds", None, 1.0,
     "per operation, rounds of each alternate"),
    ("ratio", "consumer Queuer 10000 ConcurrentOperations", "consumer OperationQueue 10000 BlockOperations", None,
     "per operation, measured one after the other, for information"),
    ("paired", "consumer Queuer.run(retrying:)/Queuer.run alternating rounds", None, 1.1,
     "1,000 awaited calls whose first attempt succeeds, rounds of each alternate"),
    ("mallocs", "MutexLock.withLock increment", None, 0, "per 1,000 operations"),
    ("mallocs", "AtomicBox.mutate increment", None, 0, "per 1,000 operations"),
    ("mallocs", "AtomicBox.value read", None, 0, "per 1,000 operations"),
]

METRICS = {"ratio": "Time(wallclock)", "mallocs": "Malloc(total)", "ns": "Time(wallclock)", "over": "Time(wallclock)",
           "paired": "ratiopermille"}
OPERATIONS_PER_ITERATION = 1000


def run_once():
    """One run of every benchmark target; returns {(metric, test): p50 value}."""
    command = ["swift", "package", "--disable-sandbox", "benchmark", "--format", "influx", "--path", "stdout",
               "--no-progress"]
    output = subprocess.run(command, cwd=HERE, check=True, capture_output=True, text=True).stdout
    results = {}
    for line in output.splitlines():
        fields = line.split(",")
        # target,host,cpu,processors,memory,kernel,metric,unit,test,percentile,value,average,iterations,warmup,time
        if len(fields) != 15 or fields[9] != "50.0":
            continue
        try:
            results[(fields[6], fields[8])] = float(fields[10])
        except ValueError:
            continue
    if not results:
        sys.exit("bench: the benchmark run printed no results")
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS", "3")))
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    arguments = parser.parse_args()

    runs = []
    for index in range(arguments.runs):
        print(f"bench: run {index + 1} of {arguments.runs}", file=sys.stderr, flush=True)
        runs.append(run_once())

    missed = []
    print(f"{'measure':<92} {'median':>8} {'runs':>22} {'goal':>8}")
    for kind, ours, baseline, limit, note in GOALS:
        metric = METRICS[kind]
        values = []
        for results in runs:
            if (metric, ours) not in results or (baseline and (metric, baseline) not in results):
                sys.exit(f"bench: no result for {ours!r} or {baseline!r}")
            value = results[(metric, ours)]
            if kind == "ratio":
                values.append(value / results[(metric, baseline)])
            elif kind == "over":
                values.append((value - results[(metric, baseline)]) / OPERATIONS_PER_ITERATION)
            elif kind == "ns":
                values.append(value / OPERATIONS_PER_ITERATION)
            elif kind == "paired":
                values.append(value / 1000)
            else:
                values.append(value)
        median = statistics.median(values)
        label = {"ratio": f"{ours} / {baseline}", "over": f"{ours} - {baseline}", "ns": ours,
                 "mallocs": f"{ours}: mallocs", "paired": ours}[kind]
        if note:
            label += f" ({note})"
        shown = ", ".join(f"{value:.2f}" for value in values)
        goal = "" if limit is None else (f"<= {limit:.2f}x" if kind in ("ratio", "paired") else f"<= {limit}")
        status = ""
        if limit is not None and median > limit:
            status = "  MISSED"
            missed.append(label)
        print(f"{label:<92} {median:>8.2f} {shown:>22} {goal:>8}{status}")

    if missed:
        print(f"\nbench: {len(missed)} goal(s) missed", file=sys.stderr)
        if arguments.check:
            sys.exit(1)
    else:
        print("\nbench: every goal met")


if __name__ == "__main__":
    main()
