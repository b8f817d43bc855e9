import Glibc

/// The one error type of LEDs: what failed, on which sysfs file or LED, and why.
///
/// `source` is the file concerned (`/sys/class/leds/input3::capslock/trigger`), or the LED
/// directory or the scanned directory; `detail` carries the system's own words where there are any.
///
/// Thread safety: a value; safe to share across threads.
public struct LEDError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why the LED cannot do what was asked.
    public enum Reason: Sendable, Equatable {
        /// No LED was found, or none matched the selector (name, colour, feedbackd's udev tag).
        case noDevice
        /// A sysfs file of the LED may not be written (or read): `EACCES`, `EPERM`.
        case permissionDenied
        /// The LED went away (its device was unplugged: `ENOENT`, `ENODEV` on one of its files).
        case deviceGone
        /// The LED cannot show this colour.
        case unsupportedColor(LEDColor)
        /// A value outside its bounds (frequency, duration, count, brightness); `detail` says which.
        case invalidArgument
        /// The system refused a call (`errno`).
        case ioError(errno: Int32)
    }

    /// Why it failed.
    public var reason: Reason
    /// The file, LED or directory concerned.
    public var source: String
    /// The system's message, or which bound was crossed.
    public var detail: String?

    /// Creates an error.
    public init(_ reason: Reason, source: String, detail: String? = nil) {
        self.reason = reason
        self.source = source
        self.detail = detail
    }

    /// The error for a failed system call on a sysfs file, classified by its `errno`.
    init(errno code: Int32, source: String) {
        let reason: Reason =
            switch code {
            case EACCES, EPERM, EROFS: .permissionDenied
            case ENOENT, ENODEV, ENXIO: .deviceGone
            default: .ioError(errno: code)
            }
        self.init(reason, source: source, detail: Errno(rawValue: code).description)
    }

    /// A sentence naming the file and the cause, and for a refused file what to do about it.
    public var description: String {
        errorSentence(source, summary, detail: detail)
    }

    private var summary: String {
        switch reason {
        case .noDevice: "no LED (a class device under /sys/class/leds) matches"
        case .permissionDenied:
            """
            permission denied; LED files belong to root: let a group write them with a udev rule \
            (SUBSYSTEM=="leds", ENV{FEEDBACKD_TYPE}=="led", RUN+="/bin/chgrp feedbackd %S%p/brightness \
            %S%p/trigger %S%p/multi_intensity", RUN+="/bin/chmod g+w %S%p/brightness %S%p/trigger \
            %S%p/multi_intensity", and the same for pattern and repeat once the pattern trigger is set, \
            as feedbackd's fbd-ledctrl does) and add the user to that group, or run as root
            """
        case .deviceGone: "the LED went away"
        case .unsupportedColor(let color): "the LED cannot show \(color.rawValue)"
        case .invalidArgument: "value out of range"
        case .ioError(let code): "input/output error (errno \(code))"
        }
    }
}
