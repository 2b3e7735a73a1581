/// A source location in one word, for holders that record where they took a resource on every acquisition: one
/// relaxed store beside the owner's, in a line the holder writes anyway.
///
/// On 64-bit platforms the file's address (a `#fileID` literal, stored NUL-terminated in the binary) fills the low 48
/// bits and the line the high 16; a line past 65,535, or a 32-bit platform, keeps the file alone, and the line reads
/// as 0. On arm64 an address that does not fit in 48 bits keeps no site.
@usableFromInline
package enum PackedSite {
    /// No site recorded.
    package static let none: UInt = 0

    private static var lineShift: Int { 48 }
    private static var addressMask: UInt { (1 << 48) - 1 }

    /// Packs `file`:`line`.
    @inlinable
    package static func pack(file: StaticString, line: UInt) -> UInt {
        guard file.hasPointerRepresentation else { return 0 }
        let address = UInt(bitPattern: file.utf8Start)
        #if arch(x86_64)
        // A program's image, where the literal lives, is mapped below 2^47 (only an `mmap` that asks for a higher
        // address gets one, with 5-level paging): no check at run time, only the line's, which a literal folds away.
        return line < 1 << 16 ? address | line << 48 : address
        #elseif arch(arm64)
        guard address >> 48 == 0 else { return 0 }
        return line < 1 << 16 ? address | line << 48 : address
        #else
        return address
        #endif
    }

    /// The NUL-terminated file name of a packed site; `nil` for ``none``.
    package static func file(of site: UInt) -> UnsafePointer<UInt8>? {
        #if arch(x86_64) || arch(arm64)
        UnsafePointer(bitPattern: site & Self.addressMask)
        #else
        UnsafePointer(bitPattern: site)
        #endif
    }

    /// The line of a packed site; 0 if it kept none.
    package static func line(of site: UInt) -> UInt {
        #if arch(x86_64) || arch(arm64)
        site >> Self.lineShift
        #else
        0
        #endif
    }

    /// `"File.swift:12"` for a packed site; `nil` for ``none``.
    package static func describe(_ site: UInt) -> String? {
        guard let file = Self.file(of: site) else { return nil }
        let name = String(cString: file)
        let line = Self.line(of: site)
        return line == 0 ? name : "\(name):\(line)"
    }
}
