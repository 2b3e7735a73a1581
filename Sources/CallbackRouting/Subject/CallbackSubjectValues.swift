/// The values of a ``CallbackSubject`` as an `AsyncSequence`: it ends with the subject's completion, and throws the
/// subject's failure.
///
/// ```swift
/// import CallbackRouting
///
/// let temperatures = CallbackSubject<Double, Never>()
/// let reader = Task {
///     var seen: [Double] = []
///     for await celsius in temperatures.values { seen.append(celsius) }
///     return seen
/// }
/// while temperatures.subscriberCount == 0 { await Task.yield() }  // the loop has subscribed
/// temperatures.send(21.5)
/// temperatures.send(22.0)
/// temperatures.send(completion: .finished)
/// print(await reader.value)  // [21.5, 22.0]
/// ```
///
/// Each iteration subscribes when it starts (`makeAsyncIterator()`), on ``CallbackQueue/untouch``, and receives the
/// values sent from then on, in send order. It ends when the subject completes; a `.failure` is thrown from the loop,
/// typed: with `Failure == Never` the loop needs no `try`. The iteration does not keep the subject alive: when the
/// subject is released without a completion, the loop ends as finished, after the values sent before. Leaving the
/// loop, or cancelling the iterating task, cancels the subscription. Values the loop has not taken yet wait in a
/// buffer, kept as the ``BufferingPolicy`` says.
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

    /// Held weakly, as the loop's subscription holds it: a kept sequence does not keep the subject alive, and a loop
    /// over the values of a released subject ends as finished.
    private weak var subject: CallbackSubject<Output, Failure>?
    private let bufferingPolicy: BufferingPolicy

    init(subject: CallbackSubject<Output, Failure>, bufferingPolicy: BufferingPolicy) {
        if case .bufferingOldest(let limit) = bufferingPolicy {
            precondition(limit >= 0, "CallbackSubject.values: bufferingOldest limit must be 0 or more, got \(limit)")
        }
        if case .bufferingNewest(let limit) = bufferingPolicy {
            precondition(limit >= 0, "CallbackSubject.values: bufferingNewest limit must be 0 or more, got \(limit)")
        }
        self.subject = subject
        self.bufferingPolicy = bufferingPolicy
    }

    /// Subscribes to the subject, and returns the iterator of the values sent from now on.
    public func makeAsyncIterator() -> AsyncIterator {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: Output.self,
            throwing: (any Error).self,
            bufferingPolicy: self.bufferingPolicy.streamPolicy
        )
        guard let subject = self.subject else {
            continuation.finish()
            return AsyncIterator(base: stream.makeAsyncIterator())
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
        // The stream keeps the subscription until it terminates: finished, failed, left or cancelled.
        continuation.onTermination = { _ in subscription.cancel() }
        return AsyncIterator(base: stream.makeAsyncIterator())
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
                preconditionFailure("CallbackSubject.values: the stream ended with \(error), not a \(Failure.self)")
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
