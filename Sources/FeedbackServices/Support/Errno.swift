import Glibc

/// The error number a failed system call left in `errno`, with the system's message.
///
/// Every system call the package makes goes through `System`, which retries `EINTR` and turns
/// any other failure into one of these; domain errors (`SoundError`, `HapticsError`) are made from
/// it where the call's meaning is known.
package struct Errno: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The C value (`ENOENT`, `EINTR`, …).
    package let rawValue: Int32

    package init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// `errno` as the last failed call on this thread left it.
    package static var current: Errno { Errno(rawValue: errno) }

    /// The system's message (`strerror`).
    package var description: String { String(cString: strerror(rawValue)) }

    /// A signal interrupted the call before it did anything. The corresponding C constant is `EINTR`.
    package static let interrupted = Errno(rawValue: EINTR)
    /// No such file or directory. The corresponding C constant is `ENOENT`.
    package static let noSuchFile = Errno(rawValue: ENOENT)
    /// A non-blocking call would have waited. The corresponding C constant is `EAGAIN` (`EWOULDBLOCK`).
    package static let wouldBlock = Errno(rawValue: EAGAIN)
    /// The device is gone. The corresponding C constant is `ENODEV`.
    package static let noDevice = Errno(rawValue: ENODEV)
    /// A low-level input/output error. The corresponding C constant is `EIO`.
    package static let ioError = Errno(rawValue: EIO)
}
