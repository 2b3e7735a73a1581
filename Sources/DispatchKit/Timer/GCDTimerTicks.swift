import Dispatch

/// The fire times of a ``GCDTimer``, as an `AsyncSequence`; see ``GCDTimer/ticks``.
///
/// Each iteration registers with the timer when it starts (`makeAsyncIterator()`), starts the timer if it is new,
/// keeps the timer alive until the iteration ends, and ends when the timer stops or finishes. Of the fires the loop
/// has not taken yet, only the latest is kept, and none once the timer has stopped.
public struct GCDTimerTicks: AsyncSequence, Sendable {
    /// The time a fire ran.
    public typealias Element = DispatchTime

    private let timer: GCDTimer

    init(timer: GCDTimer) {
        self.timer = timer
    }

    /// Registers with the timer, starts it if it is new, and returns the iterator of its fires from now on.
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
        /// Kept while the loop iterates: a loop over the ticks of a timer nobody else keeps still gets them.
        private let timer: GCDTimer

        init(base: AsyncStream<DispatchTime>.Iterator, timer: GCDTimer) {
            self.base = base
            self.timer = timer
        }

        /// The time of the next fire.
        ///
        /// - Returns: The time; `nil` once the timer has stopped or finished, or the task is cancelled.
        public mutating func next() async -> DispatchTime? {
            guard let time = await self.base.next() else { return nil }
            // A fire taken after stop() came before it, but the loop must end at once.
            guard !self.timer.isStopped else { return nil }
            return time
        }

        /// The time of the next fire, awaited in the caller's isolation.
        ///
        /// - Parameter actor: The caller's actor.
        /// - Returns: The time; `nil` once the timer has stopped or finished, or the task is cancelled.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> DispatchTime? {
            guard let time = await self.base.next(isolation: actor) else { return nil }
            guard !self.timer.isStopped else { return nil }
            return time
        }
    }
}
