/// The values of a ``CallbackSubject`` as an `AsyncSequence`: it ends with the subject's completion, and throws the
/// subject's failure.
///
/// ```swift
/// import CallbackRouting
///
/// let temperatures = CallbackSubject<Double, Never>()
/// let readings = temperatures.values  // subscribed from here on
/// let reader = Task {
///     var seen: [Double] = []
///     for await celsius in readings { seen.append(celsius) }
///     return seen
/// }
/// temperatures.send(21.5)  // kept for the loop, even if it has not started yet
/// temperatures.send(22.0)
/// temperatures.send(completion: .finished)
/// print(await reader.value)  // [21.5, 22.0]
/// ```
///
/// The sequence subscribes when it is made, on ``CallbackQueue/untouch``: when ``CallbackSubject/values`` (or
/// ``CallbackSubject/values(bufferingPolicy:)``) returns. So no value sent after that is lost: until the loop takes
/// them, values wait in a buffer, kept as the ``BufferingPolicy`` says, also before the loop has started. Make the
/// sequence where listening must begin, and hand it to the task that loops, as above; `Task { for await x in
/// subject.values { … } }` subscribes only when the task runs, and misses what is sent before.
///
/// The first iteration takes that subscription; each later iteration of the same sequence (a second `for await`, or
/// two loops at once) subscribes anew when it starts, and receives the values sent from then on. An iteration ends
/// when the subject completes; a `.failure` is thrown from the loop, typed: with `Failure == Never` the loop needs no
/// `try`. Leaving the loop, or cancelling the iterating task, cancels the iteration's subscription.
///
/// Neither the sequence nor an iteration keeps the subject alive: when the subject is released without a completion,
/// the loop ends as finished, after the values sent before. A sequence that is never iterated keeps its subscription,
/// and buffers, until it and every copy of it are released; then it unsubscribes. So keep a sequence only while you
/// mean to iterate it, or give it a bounded policy.
public struct CallbackSubjectValues<Output: Sendable, Failure: Error>: AsyncSequence, Sendable {
    /// What happens to values sent faster than the loop takes them, as with `AsyncStream`.
    public enum BufferingPolicy: Sendable, Hashable {
        /// Every value is kept until the loop takes it.
        case unbounded
        /// At most `limit` values are kept; newer ones are dropped while the buffer is full.
        case bufferingOldest(Int)
        /// At most `limit` values are kept; the oldest is dropped to make room for a newer one.
        case bufferingNewest(Int)
    }

    /// A value sent to the subject.
    public typealias Element = Output

    private typealias Stream = AsyncThrowingStream<Output, any Error>

    /// The subscription made with the sequence, until the first iteration takes it.
    private final class FirstSubscription: Sendable {
        let stream: AtomicBox<Stream?>

        init(_ stream: Stream) {
            self.stream = AtomicBox(stream)
        }
    }

    /// Held weakly, as the subscriptions hold it: a kept sequence does not keep the subject alive, and a loop over the
    /// values of a released subject ends as finished.
    private weak var subject: CallbackSubject<Output, Failure>?
    private let bufferingPolicy: BufferingPolicy
    /// Released with the last copy of the sequence: a stream nobody took then ends, and cancels its subscription.
    private let first: FirstSubscription

    init(subject: CallbackSubject<Output, Failure>, bufferingPolicy: BufferingPolicy) {
        if case .bufferingOldest(let limit) = bufferingPolicy {
            guarantee(limit >= 0, "CallbackSubject.values: bufferingOldest limit must be 0 or more, got \(limit)")
        }
        if case .bufferingNewest(let limit) = bufferingPolicy {
            guarantee(limit >= 0, "CallbackSubject.values: bufferingNewest limit must be 0 or more, got \(limit)")
        }
        self.subject = subject
        self.bufferingPolicy = bufferingPolicy
        self.first = FirstSubscription(Self.subscribe(to: subject, bufferingPolicy))
    }

    /// Returns the iterator of the first iteration, over the values sent since the sequence was made; a later
    /// iteration subscribes now, and receives the values sent from now on.
    public func makeAsyncIterator() -> AsyncIterator {
        let taken = self.first.stream.mutate { stream -> Stream? in
            defer { stream = nil }
            return stream
        }
        let stream = taken ?? Self.subscribe(to: self.subject, self.bufferingPolicy)
        return AsyncIterator(base: stream.makeAsyncIterator())
    }

    /// Subscribes a stream to `subject`: the stream gets its values and its completion, and ends at once if the
    /// subject is gone.
    ///
    /// The stream keeps the subscription until it terminates: finished, failed, or cancelled (its task was
    /// cancelled, or the stream and every iterator of it were released).
    private static func subscribe(
        to subject: CallbackSubject<Output, Failure>?,
        _ bufferingPolicy: BufferingPolicy
    ) -> Stream {
        let (stream, continuation) = Stream.makeStream(bufferingPolicy: bufferingPolicy.streamPolicy)
        guard let subject else {
            continuation.finish()
            return stream
        }
        let subscription = subject.subscribe(
            on: .untouch,
            finishingWithSubject: true,
            receiveValue: { value in continuation.yield(value) },
            receiveCompletion: { completion in
                switch completion {
                case .finished: continuation.finish()
                case .failure(let error): continuation.finish(throwing: error)
                }
            }
        )
        continuation.onTermination = { _ in subscription.cancel() }
        return stream
    }

    /// Takes the values of one iteration, one at a time.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private var base: AsyncThrowingStream<Output, any Error>.AsyncIterator

        init(base: AsyncThrowingStream<Output, any Error>.AsyncIterator) {
            self.base = base
        }

        /// The next value.
        ///
        /// - Returns: The value; `nil` once the subject has finished or the task is cancelled.
        /// - Throws: The subject's failure.
        public mutating func next() async throws(Failure) -> Output? {
            do {
                return try await self.base.next()
            } catch {
                throw Self.failure(error)
            }
        }

        /// The next value, awaited in the caller's isolation.
        ///
        /// - Parameter actor: The caller's actor.
        /// - Returns: The value; `nil` once the subject has finished or the task is cancelled.
        /// - Throws: The subject's failure.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Output? {
            do {
                return try await self.base.next(isolation: actor)
            } catch {
                throw Self.failure(error)
            }
        }

        private static func failure(_ error: any Error) -> Failure {
            guard let failure = error as? Failure else {
                halt("CallbackSubject.values: the stream ended with \(error), not a \(Failure.self)")
            }
            return failure
        }
    }
}

extension CallbackSubjectValues.BufferingPolicy {
    fileprivate var streamPolicy: AsyncThrowingStream<Output, any Error>.Continuation.BufferingPolicy {
        switch self {
        case .unbounded: .unbounded
        case .bufferingOldest(let limit): .bufferingOldest(limit)
        case .bufferingNewest(let limit): .bufferingNewest(limit)
        }
    }
}
