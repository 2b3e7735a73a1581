import Testing

/// Whether the tests were built for debugging, as `make test`'s `unit`, `chaos` and sanitizer stages build them.
///
/// The `release` stage builds them optimized, as users ship the package, and runs the suites whose rules must hold
/// there too. What only debug builds have is then missing: the lock-order checker, the blocking-call check, schedule
/// chaos and its point observer, and a value's wait observer.
public let isDebugBuild: Bool = {
    #if DEBUG
    true
    #else
    false
    #endif
}()

extension Trait where Self == ConditionTrait {
    /// For a test of something only debug builds have (see ``isDebugBuild``): the `release` stage skips it.
    ///
    /// - Parameter needs: What the test needs that an optimized build lacks.
    /// - Returns: A trait that enables the test in debug builds only.
    public static func debugBuildsOnly(_ needs: Comment) -> Self {
        .enabled(if: isDebugBuild, needs)
    }
}
