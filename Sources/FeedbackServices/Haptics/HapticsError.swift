import Glibc

/// The one error type of haptics: what failed, on which device node, and why.
///
/// `source` is the device node (`/dev/input/event3`) or the scanned directory; `detail` carries the
/// system's own words (`strerror(errno)`) where there are any.
public struct HapticsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why vibration is not possible.
    public enum Reason: Sendable, Equatable {
        /// No force-feedback device with rumble or periodic effects was found (or none matched).
        case noDevice
        /// The node exists but may not be opened for writing (`EACCES`, `EPERM`).
        case permissionDenied
        /// The device went away: unplugged, or its driver unbound it (`ENODEV`).
        case deviceGone
        /// Every effect slot of the device is taken (`ENOSPC` from `EVIOCSFF`).
        case noFreeEffectSlot
        /// The device cannot play what was asked (`EINVAL` from `EVIOCSFF`, a missing `FF_GAIN`, …).
        case unsupported
        /// The system refused a call (`errno`).
        case ioError(errno: Int32)
    }

    /// Why it failed.
    public var reason: Reason
    /// The device node or directory concerned.
    public var source: String
    /// The system's message, where there is one.
    public var detail: String?

    /// Creates an error.
    public init(_ reason: Reason, source: String, detail: String? = nil) {
        self.reason = reason
        self.source = source
        self.detail = detail
    }

    /// The error for a failed system call, classified by its `errno`.
    init(errno code: Int32, source: String) {
        let reason: Reason =
            switch code {
            case EACCES, EPERM: .permissionDenied
            case ENODEV, ENXIO: .deviceGone
            case ENOSPC: .noFreeEffectSlot
            case EINVAL, ENOTTY, EOPNOTSUPP: .unsupported
            default: .ioError(errno: code)
            }
        self.init(reason, source: source, detail: Errno(rawValue: code).description)
    }

    /// A sentence naming the node and the cause, for logs and the command line.
    public var description: String {
        var text = "\(source): \(summary)"
        if let detail, !detail.isEmpty { text += " (\(detail))" }
        return text
    }

    private var summary: String {
        switch reason {
        case .noDevice: "no vibration device (an evdev device with force-feedback rumble or periodic effects)"
        case .permissionDenied:
            "permission denied; add the user to the 'input' group or give the device a udev 'uaccess' tag"
        case .deviceGone: "the device went away"
        case .noFreeEffectSlot: "every force-feedback effect slot of the device is in use"
        case .unsupported: "the device does not support this"
        case .ioError(let code): "input/output error (errno \(code))"
        }
    }
}
