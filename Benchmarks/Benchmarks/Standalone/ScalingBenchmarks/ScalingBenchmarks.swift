// ConcurrencyKit's contended paths from 1 thread to the core count and past it (issue 26), each next to its anchors
// in one process. Run it with `make bench-scale` (Benchmarks/scale.py prints the tables and draws the chart), or build
// a self-contained binary for another machine with `make bench-scale-static`.
//
// For each row and thread count T (1, 2, 4, ... up to the core count, then 2x and 4x the cores), every contender
// first finds how many operations per thread take about the target time (20 ms), then the contenders are measured
// in turns for several rounds (the order reversed every other round). Each result is the median wall time per
// operation, with every round's figure, so that a ratio can be taken round by round. Contenders whose waiters spin
// run only up to the core count. The output is one JSON document on stdout; progress goes to stderr.
//
// Usage: ScalingBenchmarks [--quick] [--rows ID,...] [--cores N] [--threads N,...] [--rounds N] [--target-ms N]
//                          [--list]

import Foundation

/// What the command line asks for.
struct Options {
    var rowFilter: [String] = []
    var cores = ProcessInfo.processInfo.activeProcessorCount
    var threadCounts: [Int]? = nil
    var rounds = 7
    var targetMilliseconds = 20.0
    var listOnly = false

    init(_ arguments: [String]) {
        var remaining = arguments.makeIterator()
        func value(_ flag: String) -> String {
            guard let value = remaining.next() else { fail("\(flag) needs a value") }
            return value
        }
        func number(_ flag: String) -> Int {
            guard let number = Int(value(flag)), number > 0 else { fail("\(flag) needs a positive whole number") }
            return number
        }
        while let argument = remaining.next() {
            switch argument {
            case "--quick":
                self.rounds = 3
                self.targetMilliseconds = 5
            case "--rows": self.rowFilter = value(argument).split(separator: ",").map(String.init)
            case "--cores": self.cores = number(argument)
            case "--threads":
                self.threadCounts = value(argument).split(separator: ",").map { text in
                    guard let count = Int(text), count > 0 else { fail("--threads takes positive whole numbers") }
                    return count
                }
            case "--rounds": self.rounds = number(argument)
            case "--target-ms": self.targetMilliseconds = Double(number(argument))
            case "--list": self.listOnly = true
            case "--help", "-h":
                print(
                    """
                    Usage: ScalingBenchmarks [--quick] [--rows ID,...] [--cores N] [--threads N,...] [--rounds N] \
                    [--target-ms N] [--list]
                    """
                )
                exit(0)
            default: fail("unknown argument \(argument)")
            }
        }
    }

    /// The counts to measure: the powers of two below the core count, the core count, then twice and four times it.
    var counts: [Int] {
        if let threadCounts { return threadCounts }
        var counts: [Int] = []
        var count = 1
        while count < self.cores {
            counts.append(count)
            count *= 2
        }
        return counts + [self.cores, 2 * self.cores, 4 * self.cores]
    }
}

/// Prints `message` to stderr and exits with status 2.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("ScalingBenchmarks: \(message)\n".utf8))
    exit(2)
}

/// Prints a progress line to stderr.
func progress(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// The JSON document the benchmark prints.
struct Report: Encodable {
    struct ContenderInfo: Encodable {
        let name: String
        let ours: Bool
        let spins: Bool
    }

    struct Measurement: Encodable {
        /// Median wall nanoseconds per operation over the rounds.
        let median: Double
        /// Each round's nanoseconds per operation, in round order.
        let rounds: [Double]
        /// Operations per thread in each round.
        let perThread: Int
    }

    struct Point: Encodable {
        let threads: Int
        let results: [String: Measurement]
    }

    struct RowReport: Encodable {
        let id: String
        let title: String
        let axis: String
        let contenders: [ContenderInfo]
        var points: [Point]
    }

    let cores: Int
    let rounds: Int
    let targetMilliseconds: Double
    let machine: String
    /// The 1-minute load average when the run began: on a shared machine, how many others wanted a core.
    let loadAverage: String
    var rows: [RowReport]
}

/// Operations per thread that take about `target` nanoseconds for `contender` at `threads`.
///
/// Quadruples a small count until a run takes an eighth of the target, then scales it by the fastest of three runs
/// of that count: on a shared machine a run can only be slowed by the others, and a count sized on one slow run would
/// make every round too short to measure. These runs also warm the contender up.
func calibrate(_ contender: Contender, threads: Int, target: Double, limit: UInt64) -> Int {
    let ceiling = 1 << 24
    func run(_ perThread: Int) -> (elapsed: Double, perOperation: Double) {
        let sample = contender.run(Load(threads: threads, perThread: perThread, limit: limit))
        // The time one thread's operation takes: a run stopped at the limit counts the operations it did.
        let perThreadOperations = Double(max(sample.operations, 1)) / Double(threads)
        return (Double(sample.nanoseconds), Double(max(sample.nanoseconds, 1)) / perThreadOperations)
    }
    var perThread = 8
    var (elapsed, perOperation) = run(perThread)
    while elapsed < target / 8 && perThread < ceiling {
        perThread *= 4
        (elapsed, perOperation) = run(perThread)
    }
    for _ in 0..<2 { perOperation = min(perOperation, run(perThread).perOperation) }
    return min(max(Int(target / perOperation), 1), ceiling)
}

/// The machine's name, kernel and processor count, for the report.
func machineDescription() -> String {
    var name = utsname()
    uname(&name)
    func text<T>(_ field: T) -> String {
        withUnsafeBytes(of: field) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
    return "\(text(name.sysname)) \(text(name.release)) \(text(name.machine)), "
        + "\(ProcessInfo.processInfo.activeProcessorCount) processors"
}

/// The 1-minute load average, as `uptime` prints it.
func loadAverage() -> String {
    var loads = [0.0, 0.0, 0.0]
    guard getloadavg(&loads, 3) > 0 else { return "unknown" }
    return String(format: "%.2f", loads[0])
}

@main
enum ScalingBenchmarks {
    static func main() {
        let options = Options(Array(CommandLine.arguments.dropFirst()))
        let rows = allRows().filter { row in
            options.rowFilter.isEmpty || options.rowFilter.contains { row.id.hasPrefix($0) }
        }
        if options.listOnly {
            for row in rows { print("\(row.id): \(row.title)") }
            return
        }
        guard !rows.isEmpty else { fail("no row matches \(options.rowFilter)") }
        let target = options.targetMilliseconds * 1_000_000
        // A measurement past five times its target is stopped: a collapsing contender cannot hold the run up.
        let limit = UInt64(5 * target)
        var report = Report(
            cores: options.cores,
            rounds: options.rounds,
            targetMilliseconds: options.targetMilliseconds,
            machine: machineDescription(),
            loadAverage: loadAverage(),
            rows: []
        )
        for row in rows {
            var rowReport = Report.RowReport(
                id: row.id,
                title: row.title,
                axis: row.axis,
                contenders: row.contenders.map { .init(name: $0.name, ours: $0.isOurs, spins: $0.spins) },
                points: []
            )
            for threads in options.counts {
                let contenders = row.contenders.filter { !$0.spins || threads <= options.cores }
                let perThread = contenders.map { calibrate($0, threads: threads, target: target, limit: limit) }
                var samples = Array(repeating: [Double](), count: contenders.count)
                for round in 0..<options.rounds {
                    let order = Array(contenders.indices)
                    for index in round % 2 == 0 ? order : order.reversed() {
                        let sample = contenders[index].run(
                            Load(threads: threads, perThread: perThread[index], limit: limit)
                        )
                        samples[index].append(sample.nanosecondsPerOperation)
                    }
                }
                var results: [String: Report.Measurement] = [:]
                var line = "\(row.id) \(row.axis)=\(threads):"
                for (index, contender) in contenders.enumerated() {
                    let value = median(samples[index])
                    results[contender.name] = .init(median: value, rounds: samples[index], perThread: perThread[index])
                    line += " \(contender.name) \(String(format: "%.0f", value)) ns;"
                }
                progress(line)
                rowReport.points.append(.init(threads: threads, results: results))
            }
            report.rows.append(rowReport)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        FileHandle.standardOutput.write(try! encoder.encode(report))
        FileHandle.standardOutput.write(Data("\n".utf8))
    }
}
