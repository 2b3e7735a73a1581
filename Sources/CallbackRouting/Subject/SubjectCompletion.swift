/// How a ``CallbackSubject`` ends: normally, or with an error.
public enum SubjectCompletion<Failure: Error>: Sendable {
    /// The subject finished normally.
    case finished
    /// The subject ended with `failure`.
    case failure(Failure)
}

extension SubjectCompletion: Equatable where Failure: Equatable {}
