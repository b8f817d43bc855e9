import FeedbackServices
import Glibc

/// A private session bus (`dbus-daemon --session --nofork`) listening in a directory of its own,
/// whose only service directory is `services`: so that no activation file installed on the
/// machine (Debian's feedbackd ships one for `org.sigxcpu.Feedback`) can answer on it. What it
/// activates inherits `environment` and gets the bus's address. Killed when released.
///
/// Thread safety: one test or benchmark at a time uses it.
package final class PrivateSessionBus: @unchecked Sendable {
    // Locking rule: `process` is used by its owner's calls, one at a time.
    /// `dbus-daemon`.
    package static let program = "/usr/bin/dbus-daemon"
    /// The address clients connect to (`DBUS_SESSION_BUS_ADDRESS`).
    package let address: String
    private let process: ChildProcess

    /// Starts a bus listening at `directory/bus`, with its configuration in `directory/bus.conf`;
    /// with `otherUsers`, processes of every user may connect (a session bus takes only its own
    /// user's), to test what a service lets one user do to another's requests.
    /// - Throws: `TestFailure` when it does not start.
    package init(directory: TemporaryDirectory, services: String, environment: [String: String], otherUsers: Bool = false)
        throws
    {
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(directory.file("bus"))</listen>
              <servicedir>\(services)</servicedir>
              <policy context="default">
                \(otherUsers ? #"<allow user="*"/>"# : "")
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        directory.write(Array(config.utf8), to: "bus.conf")
        process = try ChildProcess(
            Self.program, ["--config-file=\(directory.file("bus.conf"))", "--nofork", "--print-address=1"],
            environment: environment)
        guard let line = process.waitForOutput(containing: "unix:", timeout: 10) else {
            throw TestFailure("dbus-daemon printed no address: \(process.errors)")
        }
        address = line
    }

    /// Kills the bus (SIGKILL), as the end of a session does.
    package func kill() {
        process.signal(SIGKILL)
        process.wait(timeout: 5)
    }

    /// What the bus and the services it activated wrote to standard error.
    package var errors: String { process.errors }
}
