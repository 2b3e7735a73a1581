import Dispatch

/// The fire times of a ``GCDTimer``, as an `AsyncSequence`; see ``GCDTimer/ticks``.
///
/// Each iteration registers with the timer when it starts (`makeAsyncIterator()`), and ends when the timer stops,
/// finishes or is released. Fires the loop has not taken yet are not kept, but the latest one.
public struct GCDTimerTicks: AsyncSequence, Sendable {
    /// The time a fire ran.
    public typealias Element = DispatchTime

    private let timer: GCDTimer

    init(timer: GCDTimer) {
        self.timer = timer
    }

    /// Registers with the timer, and returns the iterator of its fires from now on.
    public func makeAsyncIterator() -> AsyncStream<DispatchTime>.Iterator {
        let (stream, listener) = AsyncStream.makeStream(of: DispatchTime.self, bufferingPolicy: .bufferingNewest(1))
        if let number = self.timer.addTickListener(listener) {
            listener.onTermination = { [weak timer] _ in timer?.removeTickListener(number) }
        }
        return stream.makeAsyncIterator()
    }
}
