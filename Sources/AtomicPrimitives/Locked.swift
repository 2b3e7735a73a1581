/// A property wrapper that keeps a property in an ``AtomicBox``: reads take the lock, writes go through `mutate`.
///
/// The property has no setter on purpose: `count += 1` on a plain locked property is a read and a write under two
/// separate lock acquisitions, which races. Write through the projected box instead, where the whole update is one
/// critical section:
///
/// ```swift
/// import AtomicPrimitives
/// import Dispatch
///
/// final class Stats: @unchecked Sendable {  // Safety: every stored var is @Locked.
///     @Locked var requests = 0
///
///     func record() {
///         $requests.mutate { $0 += 1 }
///     }
/// }
///
/// let stats = Stats()
/// DispatchQueue.concurrentPerform(iterations: 10) { _ in stats.record() }
/// print(stats.requests)  // 10
/// ```
///
/// A class whose state is held in `@Locked` properties has to declare itself `@unchecked Sendable`: the compiler
/// cannot see that the wrapper makes the stored properties safe.
@propertyWrapper
public struct Locked<Value> {
    /// The box that holds the value; `$name` in the declaring type.
    public let projectedValue: AtomicBox<Value>

    /// Wraps `wrappedValue` in a new box.
    ///
    /// - Parameters:
    ///   - wrappedValue: The initial value.
    ///   - file: Where the property is declared, for lock-order reports; leave the default.
    ///   - line: Where the property is declared, for lock-order reports; leave the default.
    public init(wrappedValue: Value, file: StaticString = #fileID, line: UInt = #line) {
        self.projectedValue = AtomicBox(wrappedValue, file: file, line: line)
    }

    /// Wraps `wrappedValue` in a new box with a name for lock-order reports: `@Locked(name: "state") var state = 0`.
    ///
    /// - Parameters:
    ///   - wrappedValue: The initial value.
    ///   - name: What lock-order reports call the property's lock.
    ///   - file: Where the property is declared, for lock-order reports; leave the default.
    ///   - line: Where the property is declared, for lock-order reports; leave the default.
    public init(wrappedValue: Value, name: String, file: StaticString = #fileID, line: UInt = #line) {
        self.projectedValue = AtomicBox(wrappedValue, name: name, file: file, line: line)
    }

    /// A copy of the value, read under the lock.
    ///
    /// To change it, use `$name.mutate { ... }`.
    @inlinable
    public var wrappedValue: Value {
        self.projectedValue.value
    }
}

extension Locked: Sendable where Value: Sendable {}
