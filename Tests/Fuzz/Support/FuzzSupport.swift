// What every fuzz target shares: the entry into libFuzzer's driver and an in-memory input file.
internal import CFeedbackShims
internal import CLibFuzzer
import Glibc

/// The argument vector a C `main` gets.
public typealias ArgumentVector = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?

/// Runs libFuzzer on `callback` with the program's arguments (libFuzzer's own flags, corpus
/// directories or inputs to replay): a target's `main` is this one call.
public func runFuzzer(
    _ argc: CInt, _ argv: ArgumentVector, _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt {
    var count = argc
    var vector = argv
    return LLVMFuzzerRunDriver(&count, &vector, callback)
}

/// What LeakSanitizer is not to report, in every fuzz target (it asks this hook as it starts,
/// before `main`: nothing here may need the Swift runtime). `_WZ` ends the name of a Swift
/// global's one-time initializer (a `static let`): what it makes lives as long as the process,
/// held by the global, yet LeakSanitizer reports it when the only reference is a multi-payload
/// enum's, which keeps its case in the pointer's top bits where the scan does not look
/// (`UsageItem.oneOf([Option])` in `DevicesCommand.usage` holds 0x8000… + the array's address: the
/// "176 bytes leaked" that failed a CI run whenever a leak check followed `devices`' usage text).
@_cdecl("__lsan_default_suppressions")
public func leakSanitizerSuppressions() -> UnsafePointer<CChar> {
    // A literal's bytes end with a NUL in the binary: a C string with no allocation.
    UnsafeRawPointer(("leak:_WZ\n" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
}

/// One anonymous in-memory file (`memfd_create`), refilled for every input and read through its
/// /proc path: the code under test opens and checks a real regular file, without touching a disk.
///
/// Thread safety: one fuzzing thread uses it.
public struct MemoryFile: Sendable {
    /// The path that opens the file.
    public let path: String
    private let fd: Int32

    /// Creates the file; `name` shows in /proc.
    public init(name: String) {
        fd = fbs_memfd(name)
        precondition(fd >= 0, "memfd_create failed")
        path = "/proc/self/fd/\(fd)"
    }

    /// Replaces the contents with `size` bytes at `data`; false if that failed.
    public func fill(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Bool {
        ftruncate(fd, 0) == 0 && pwrite(fd, data, size, 0) == size
    }
}
