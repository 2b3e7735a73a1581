#if DEBUG
/// Where an acquisition happened: a source line, or the name of an entry point that cannot take one.
///
/// It keeps the file's UTF-8 bytes by address, as the per-thread records (in C) do: a `StaticString`'s bytes live as
/// long as the process.
struct LockOrderSite: Sendable, CustomStringConvertible {
    // Safety: the bytes of a static string are immutable and never freed.
    nonisolated(unsafe) let file: UnsafePointer<UInt8>
    let fileCount: Int
    let line: UInt

    init(file: StaticString, line: UInt) {
        self.file = file.utf8Start
        self.fileCount = file.utf8CodeUnitCount
        self.line = line
    }

    /// The site of a held lock, from the per-thread records.
    init(file: UnsafePointer<UInt8>, fileCount: Int, line: UInt) {
        self.file = file
        self.fileCount = fileCount
        self.line = line
    }

    /// `Module/File.swift:12`, or the entry point's name when the line is 0.
    var description: String {
        let file = String(decoding: UnsafeBufferPointer(start: self.file, count: self.fileCount), as: UTF8.self)
        return self.line == 0 ? file : "\(file):\(self.line)"
    }
}
#endif
