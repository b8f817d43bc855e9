import FeedbackServices
import Glibc

/// A D-Bus error: the name a client sees (`org.freedesktop.DBus.Error.AccessDenied`) and a message.
/// A value; safe to share across threads.
package struct BusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The error name, as in the D-Bus specification's error names.
    package var name: String
    /// One line saying what went wrong.
    package var message: String

    /// An error with this name and message.
    package init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    /// An sd-bus call's failure: it returned `-code`. `ELIBACC` is what every sd-bus call returns
    /// when libsystemd cannot be loaded (COptionalLibraries): the message then says why and names
    /// the Debian package.
    init(code: Int32, _ what: String) {
        let reason = code == ELIBACC ? OptionalLibrary.systemd.unavailableReason : nil
        self.init(name: "org.freedesktop.DBus.Error.Failed", message: "\(what): \(reason ?? "\(Errno(rawValue: code))")")
    }

    /// `org.freedesktop.DBus.Error.AccessDenied`: the caller may not do this.
    package static func accessDenied(_ message: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.AccessDenied", message: message)
    }

    /// `org.freedesktop.DBus.Error.InvalidArgs`: an argument is out of range or malformed.
    package static func invalidArgs(_ message: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: message)
    }

    /// `org.freedesktop.DBus.Error.LimitsExceeded`: the caller reached a limit (the message names it).
    package static func limitsExceeded(_ message: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.LimitsExceeded", message: message)
    }

    /// `org.freedesktop.DBus.Error.FileNotFound`: a file the caller named is not there.
    package static func fileNotFound(_ message: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.FileNotFound", message: message)
    }

    /// `org.freedesktop.DBus.Error.Failed`: anything else.
    package static func failed(_ message: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.Failed", message: message)
    }

    /// "name: message".
    package var description: String { "\(name): \(message)" }
}
