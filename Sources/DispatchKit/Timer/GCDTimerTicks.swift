import Dispatch

/// The fire times of a ``GCDTimer``, as an `AsyncSequence`; see ``GCDTimer/ticks``.
///
/// Each iteration registers with the timer when it starts (`makeAsyncIterator()`), and ends when the timer stops,
/// finishes or is released. Of the fires the loop has not taken yet, only the latest is kept, and none once the
/// timer has stopped or been released.
public struct GCDTimerTicks: AsyncSequence, Sendable {
    /// The time a fire ran.
    public typealias Element = DispatchTime

    private let timer: GCDTimer

    init(timer: GCDTimer) {
        self.timer = timer
    }

    /// Registers with the timer, and returns the iterator of its fires from now on.
    public func makeAsyncIterator() -> AsyncIterator {
        let (stream, listener) = AsyncStream.makeStream(of: DispatchTime.self, bufferingPolicy: .bufferingNewest(1))
        if let number = self.timer.addTickListener(listener) {
            listener.onTermination = { [weak timer] _ in timer?.removeTickListener(number) }
        }
        return AsyncIterator(base: stream.makeAsyncIterator(), timer: self.timer)
    }

    /// Takes the fires of one iteration, one at a time.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private var base: AsyncStream<DispatchTime>.Iterator
        private weak var timer: GCDTimer?

        init(base: AsyncStream<DispatchTime>.Iterator, timer: GCDTimer) {
            self.base = base
            self.timer = timer
        }

        /// The time of the next fire.
        ///
        /// - Returns: The time; `nil` once the timer has stopped, finished or been released, or the task is cancelled.
        public mutating func next() async -> DispatchTime? {
            guard let time = await self.base.next() else { return nil }
            // A fire taken after stop() or the release came before them, but the loop must end at once.
            guard let timer = self.timer, !timer.isStopped else { return nil }
            return time
        }

        /// The time of the next fire, awaited in the caller's isolation.
        ///
        /// - Parameter actor: The caller's actor.
        /// - Returns: The time; `nil` once the timer has stopped, finished or been released, or the task is cancelled.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> DispatchTime? {
            guard let time = await self.base.next(isolation: actor) else { return nil }
            guard let timer = self.timer, !timer.isStopped else { return nil }
            return time
        }
    }
}
