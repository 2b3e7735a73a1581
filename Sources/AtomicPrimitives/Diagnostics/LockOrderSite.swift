#if DEBUG
/// Where an acquisition happened: a source line, or the name of an entry point that cannot take one.
@usableFromInline
struct LockOrderSite: Sendable, CustomStringConvertible {
    @usableFromInline
    let file: StaticString
    @usableFromInline
    let line: UInt

    @_transparent
    @usableFromInline
    init(file: StaticString, line: UInt) {
        self.file = file
        self.line = line
    }

    /// `Module/File.swift:12`, or the entry point's name when the line is 0.
    @usableFromInline
    var description: String {
        self.line == 0 ? "\(self.file)" : "\(self.file):\(self.line)"
    }
}
#endif
