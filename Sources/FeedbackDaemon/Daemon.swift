import FeedbackBus
import FeedbackServices
import FoundationEssentials
import Glibc

/// feedbackservicesd's main: options, the theme, the bus name, the loop.
///
/// Exit codes (sysexits.h): 0 after SIGTERM/SIGINT or when another instance took the name over
/// (`--replace`); 64 for a usage error; 66 when the theme cannot be read; 69 when the session bus
/// cannot be reached or goes away, or another process owns `org.sigxcpu.Feedback` (or
/// `org.feedbackservices.SystemSounds1`) and did not let it go (the message names its PID and how
/// to stop it).
package enum Daemon {
    /// The usage text `--help` prints.
    package static let usage = """
        OVERVIEW: The FeedbackServices session service: feedbackd's org.sigxcpu.Feedback and our
        org.feedbackservices.SystemSounds1 on the session bus

        USAGE: feedbackservicesd [--replace]

        OPTIONS:
          --replace     Take the name over from another feedbackservicesd (feedbackd does not let it go)
          -h, --help    Show this help

        ENVIRONMENT:
          FEEDBACK_THEME              the feedback theme file (feedbackd's JSON format)
          FEEDBACKSERVICES_PROFILE    the profile, over the settings file

        """

    /// Runs the service until SIGTERM or SIGINT; returns the exit status.
    package static func main(arguments: [String], environment: [String: String]) -> Int32 {
        var replace = false
        for argument in arguments {
            switch argument {
            case "--replace": replace = true
            case "-h", "--help":
                write(1, usage)
                return 0
            default:
                write(2, "Error: unknown argument '\(argument)'\n\n\(usage)")
                return 64
            }
        }
        // Blocked before any thread starts, so that every thread inherits the mask and the bus
        // thread alone receives them (sd_event_add_signal reads them from a signalfd).
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let locations = FeedbackThemeLocations.standard(environment: environment)
        let theme: FeedbackTheme
        do {
            theme = try FeedbackTheme.load(path: locations.theme, parents: locations.parentDirectories)
        } catch {
            log("Error: cannot read the feedback theme: \(error)")
            return 66
        }
        let chain = theme.files.joined(separator: " → ")
        log("feedback theme '\(theme.name)' (\(chain))")
        if !theme.ignored.isEmpty {
            log("\(theme.ignored.count) theme feedbacks are not played (LEDs are not driven yet): \(theme.ignored.joined(separator: ", "))")
        }

        let connection: BusConnection
        do {
            connection = try BusConnection.session(description: "feedbackservicesd")
        } catch {
            log("Error: cannot connect to the session bus: \(error.message)")
            return 69
        }
        // Clients' own sounds (SystemSounds1.RegisterFD) get IDs in the service range.
        let registry = SoundRegistry(
            decoder: SoundDecoder(), firstID: SoundIDRange.serviceIDs.lowerBound,
            lastID: SoundIDRange.serviceIDs.upperBound, persistentRegistry: try? SoundRegistryFile(environment: environment))
        let manager = FeedbackManager(registry: registry, settings: FeedbackSettings(environment: environment))
        let service = FeedbackService(manager: manager, theme: theme, log: log)
        let sounds = SystemSoundsService(manager: manager, log: log)
        do throws(BusError) {
            var taken: Int32??
            try connection.setUp { (bus) throws(BusError) in
                try service.export(on: bus)
                try sounds.export(on: bus)
                let stop = { (bus: BusContext) in
                    sounds.stop(bus: bus)
                    service.stop(bus: bus)
                }
                try bus.onSignal(SIGTERM, stop)
                try bus.onSignal(SIGINT, stop)
                // Taken over by `feedbackservicesd --replace`: stop as for SIGTERM.
                try bus.subscribe(
                    sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                    member: "NameLost"
                ) { message, bus in
                    if (try? message.readString()) == FeedbackService.busName {
                        log("another instance took \(FeedbackService.busName) over; stopping")
                        stop(bus)
                    }
                }
                if case .taken(let owner) = try bus.requestName(FeedbackService.busName, replace: replace) {
                    taken = .some(owner)
                } else if case .taken(let owner) = try bus.requestName(SystemSounds1.busName, replace: replace) {
                    // Only another feedbackservicesd could own it (no other program implements it).
                    taken = .some(owner)
                }
            }
            if let owner = taken {
                log(nameTakenMessage(owner: owner, replace: replace))
                return 69
            }
        } catch {
            log("Error: \(error.message)")
            return 69
        }
        // The sound server connection opens now, so the first feedback does not wait for it.
        manager.prepareAudioOutput()
        log("serving \(FeedbackService.busName) at \(FeedbackService.objectPath) and \(SystemSounds1.busName) at \(SystemSounds1.objectPath)")
        do {
            try connection.start()
        } catch {
            log("Error: \(error.message)")
            return 69
        }
        // feedbackctl reads it to skip the bus when no service runs (SystemSounds1.pidFile).
        let pidFile = SystemSounds1.pidFile(environment: environment)
        if let pidFile, case let fd = open(pidFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644), fd >= 0 {
            Array("\(getpid())\n".utf8).withUnsafeBytes { bytes in _ = try? System.writeAll(fd, bytes) }
            close(fd)
        }
        defer { if let pidFile { unlink(pidFile) } }
        guard connection.join() == 0 else {
            log("the session bus connection broke; stopping")
            return 69
        }
        return 0
    }

    /// The message for a name another process owns: who, and how to stop it.
    static func nameTakenMessage(owner: Int32?, replace: Bool) -> String {
        let name = FeedbackService.busName
        guard let owner else {
            return "Error: \(name) is owned by another connection on this bus (its process is unknown)"
        }
        let command = (try? String(contentsOfFile: "/proc/\(owner)/comm", encoding: .utf8))
            .map { $0.filter { $0 != "\n" } } ?? "?"
        let how =
            replace
            ? "it does not let the name go: stop it (kill \(owner))"
            : "stop it (kill \(owner); for feedbackd under systemd: systemctl --user stop feedbackd), or, if it is feedbackservicesd, start this one with --replace"
        return "Error: \(name) is owned by process \(owner) (\(command)); \(how)"
    }

    /// One line to standard error (the journal under systemd).
    @Sendable static func log(_ line: String) {
        write(2, "feedbackservicesd: \(line)\n")
    }

    private static func write(_ fd: Int32, _ text: String) {
        Array(text.utf8).withUnsafeBytes { bytes in _ = try? System.writeAll(fd, bytes) }
    }
}
