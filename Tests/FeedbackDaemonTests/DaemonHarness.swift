import FeedbackServices
import FeedbackTestSupport
import FoundationEssentials
import Glibc
import Synchronization
import Testing

/// The programs the daemon tests drive: the bus, the reference clients, the reference daemon.
enum DaemonTools {
    static let dbusDaemon = "/usr/bin/dbus-daemon"
    static let gdbus = "/usr/bin/gdbus"
    static let fbcli = "/usr/bin/fbcli"
    /// `/usr/bin/python3`: the one with `gi` (a `python3` earlier on PATH may lack it).
    static let python = "/usr/bin/python3"
    static let feedbackd = "/usr/libexec/feedbackd"
    static let debianTheme = "/usr/share/feedbackd/themes/default.json"

    static var missing: [String] {
        [dbusDaemon, gdbus, fbcli, python, feedbackd].filter { access($0, X_OK) != 0 }
    }

    /// Whether the daemon tests run: always in CI (where a missing part fails them), elsewhere
    /// when every part is installed (scripts/setup installs them).
    static var shouldRun: Bool { runningInCI || (missing.isEmpty && PulseAudioTestServer.available) }

    /// Fails the test when a part is missing.
    static func require() throws {
        guard missing.isEmpty else {
            throw TestFailure("missing \(missing.joined(separator: ", ")) (scripts/setup installs them)")
        }
    }
}

/// A private session bus whose only service directory is an empty one of ours (so Debian's
/// feedbackd activation file cannot answer), with the daemon, clients and a signal monitor on it,
/// all playing into the suite's private PulseAudio.
final class DaemonHarness: @unchecked Sendable {
    // Locking rule: used by one test at a time (the suites are serialized).
    let directory = TemporaryDirectory()
    let pulse: PulseAudioTestServer
    let address: String
    private let bus: PrivateSessionBus
    private(set) var daemon: ChildProcess?

    /// A bus whose only service directory is `services` (an empty one of the harness's own by
    /// default); with `otherUsers`, other users' processes may connect to it too.
    init(pulse: PulseAudioTestServer, services: String? = nil, otherUsers: Bool = false) throws {
        try DaemonTools.require()
        self.pulse = pulse
        mkdir(directory.file("services"), 0o700)
        mkdir(directory.file("home"), 0o700)
        // What it activates inherits its environment (and gets the bus's address from it).
        bus = try PrivateSessionBus(
            directory: directory, services: services ?? directory.file("services"),
            environment: Self.environment(directory: directory, pulse: pulse), otherUsers: otherUsers)
        address = bus.address
    }

    /// Kills the bus (SIGKILL), as the end of a session does.
    func killBus() {
        bus.kill()
    }

    /// What the bus and the services it activated wrote to standard error.
    var busErrors: String { bus.errors }

    /// The environment every program on this bus gets: the bus, the sound server, a home and
    /// configuration of the test's own, and `extra`.
    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = Self.environment(directory: directory, pulse: pulse)
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        environment.merge(extra) { $1 }
        return environment
    }

    private static func environment(directory: TemporaryDirectory, pulse: PulseAudioTestServer) -> [String: String] {
        [
            "PATH": "/usr/bin:/bin", "PULSE_SERVER": pulse.server, "HOME": directory.file("home"),
            "XDG_CONFIG_HOME": directory.file("home/.config"), "XDG_RUNTIME_DIR": directory.path, "LANG": "C.UTF-8",
        ]
    }

    /// Starts feedbackservicesd as a user would by hand and waits until it owns the name and has
    /// written its PID file (the last of its start, which feedbackctl reads to use the service);
    /// checks that the owner is this process (nothing was activated instead).
    @discardableResult
    func startDaemon(_ arguments: [String] = [], environment extra: [String: String] = [:]) throws -> ChildProcess {
        #expect(!activatableNames().contains("org.sigxcpu.Feedback"), "the private bus must not activate feedbackd")
        let environment = environment(extra)
        let daemon = try ChildProcess(builtProduct("feedbackservicesd"), arguments, environment: environment)
        let deadline = MonotonicClock.now + 10
        while ownerPID() != daemon.pid {
            guard MonotonicClock.now < deadline, daemon.wait(timeout: 0) == nil else {
                throw TestFailure("feedbackservicesd did not take the name: \(daemon.errors)")
            }
            usleep(10_000)
        }
        if let runtime = environment["XDG_RUNTIME_DIR"] {
            let pidFile = runtime + "/feedbackservicesd.pid"
            while (try? String(contentsOfFile: pidFile, encoding: .utf8)) != "\(daemon.pid)\n" {
                guard MonotonicClock.now < deadline, daemon.wait(timeout: 0) == nil else {
                    throw TestFailure("feedbackservicesd did not write \(pidFile): \(daemon.errors)")
                }
                usleep(10_000)
            }
        }
        self.daemon = daemon
        return daemon
    }

    /// The PID of the process owning `org.sigxcpu.Feedback` (GetConnectionUnixProcessID).
    func ownerPID(of name: String = "org.sigxcpu.Feedback") -> Int32? {
        let reply = gdbus(
            "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
            "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID", name)
        guard reply.status == 0 else { return nil }
        return reply.output.split(separator: "uint32 ").last.flatMap { Int32($0.filter(\.isNumber)) }
    }

    func activatableNames() -> String {
        gdbus(
            "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
            "--method", "org.freedesktop.DBus.ListActivatableNames"
        ).output
    }

    /// Runs `gdbus` on this bus.
    func gdbus(_ arguments: String...) -> ProcessResult {
        runProcess(DaemonTools.gdbus, arguments, environment: environment().map { "\($0.key)=\($0.value)" })
    }

    /// Calls a method of org.sigxcpu.Feedback with gdbus (a client that leaves when the call returns).
    func callFeedback(_ method: String, _ arguments: [String]) -> ProcessResult {
        runProcess(
            DaemonTools.gdbus,
            [
                "call", "--session", "--dest", "org.sigxcpu.Feedback", "--object-path", "/org/sigxcpu/Feedback",
                "--method", method, "--",
            ] + arguments, environment: environment().map { "\($0.key)=\($0.value)" })
    }

    /// Starts `gdbus monitor` on the service and waits until it watches.
    func monitor() throws -> SignalMonitor {
        let process = try ChildProcess(
            DaemonTools.gdbus, ["monitor", "--session", "--dest", "org.sigxcpu.Feedback"], environment: environment())
        guard process.waitForOutput(containing: "Monitoring", timeout: 10) != nil else {
            throw TestFailure("gdbus monitor did not start: \(process.errors)")
        }
        // It subscribes once it has said who owns the name ("The name … is owned by …", or "does
        // not have an owner"), sending AddMatch right after that line: a signal sent later is
        // seen. ("Monitoring signals from all objects owned by org.sigxcpu.Feedback", the line
        // this waited for before, comes first, before gdbus has even asked who owns the name.)
        guard process.waitForOutput(containing: "The name org.sigxcpu.Feedback ", timeout: 10) != nil else {
            throw TestFailure("gdbus monitor did not say who owns org.sigxcpu.Feedback: \(process.output) \(process.errors)")
        }
        return SignalMonitor(process: process)
    }

    /// Runs a libfeedback/GIO client script (`LibfeedbackClient`) with /usr/bin/python3.
    func python(_ mode: String, _ arguments: String..., holdStdin: Bool = false) throws -> ChildProcess {
        try ChildProcess(
            DaemonTools.python, ["-u", "-c", LibfeedbackClient.script, mode] + arguments,
            environment: environment(), holdStdin: holdStdin)
    }
}

/// `gdbus monitor` on org.sigxcpu.Feedback: the signals it printed.
struct SignalMonitor {
    let process: ChildProcess

    /// The reason of `FeedbackEnded` for `id`, waiting up to `timeout` seconds.
    func ended(_ id: UInt32, timeout: Double) -> UInt32? {
        guard let line = process.waitForOutput(containing: "FeedbackEnded (uint32 \(id),", timeout: timeout) else {
            return nil
        }
        return UInt32(line.split(separator: "uint32 ").last?.filter(\.isNumber) ?? "")
    }

    /// How many `FeedbackEnded` signals it saw for `id`.
    func endedCount(_ id: UInt32) -> Int {
        process.output.split(separator: "\n").filter { $0.contains("FeedbackEnded (uint32 \(id),") }.count
    }

    var output: String { process.output }
}

/// Clients written with libfeedback (through GObject introspection) and GIO, as apps use them.
enum LibfeedbackClient {
    /// Modes: `trigger EVENT` (once, prints the end reason), `loop-then-end EVENT SECONDS` (loops,
    /// ends it after SECONDS, prints the CLOCK_MONOTONIC times and the reason), `hold EVENT [TIMEOUT]`
    /// (TriggerFeedback through GIO, timeout TIMEOUT or 0, prints the id, waits for its stdin to close),
    /// `flood EVENT COUNT TIMEOUT` (COUNT triggers as fast as GIO sends them; prints how long they
    /// took, `elapsed SECONDS`, each distinct error, then `ok` and how many were accepted, last; waits
    /// for its stdin to close).
    static let script = """
        import sys, time
        import gi
        gi.require_version('Lfb', '0.0')
        from gi.repository import Lfb, GLib, Gio
        mode, event = sys.argv[1], sys.argv[2]
        if mode == 'flood':
            bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
            ok, errors, began = 0, {}, time.monotonic()
            for _ in range(int(sys.argv[3])):
                try:
                    bus.call_sync('org.sigxcpu.Feedback', '/org/sigxcpu/Feedback', 'org.sigxcpu.Feedback',
                        'TriggerFeedback', GLib.Variant('(ssa{sv}i)', ('org.example.Flood', event, {}, int(sys.argv[4]))),
                        GLib.VariantType('(u)'), Gio.DBusCallFlags.NONE, -1, None)
                    ok += 1
                except GLib.Error as error:
                    errors[error.message] = 1
            print('elapsed', time.monotonic() - began, flush=True)
            for line in errors:
                print('error', line, flush=True)
            print('ok', ok, flush=True)
            sys.stdin.read()
            sys.exit(0)
        if mode == 'hold':
            bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
            reply = bus.call_sync('org.sigxcpu.Feedback', '/org/sigxcpu/Feedback', 'org.sigxcpu.Feedback',
                'TriggerFeedback', GLib.Variant('(ssa{sv}i)', ('org.example.Hold', event, {}, int((sys.argv + ['0'])[3]))),
                GLib.VariantType('(u)'), Gio.DBusCallFlags.NONE, -1, None)
            print('id', reply.unpack()[0], flush=True)
            sys.stdin.read()
            sys.exit(0)
        Lfb.init('org.example.Test')
        loop = GLib.MainLoop()
        ev = Lfb.Event.new(event)
        ev.connect('feedback-ended', lambda *args: loop.quit())
        GLib.timeout_add(5000, loop.quit)
        if mode == 'loop-then-end':
            ev.set_timeout(0)
            ev.trigger_feedback()
            print('triggered', time.monotonic(), flush=True)
            time.sleep(float(sys.argv[3]))
            print('ending', time.monotonic(), flush=True)
            ev.end_feedback()
        else:
            ev.trigger_feedback()
        if ev.get_state() != Lfb.EventState.ENDED:
            loop.run()
        print('ended', int(ev.get_end_reason()), 'state', int(ev.get_state()), time.monotonic(), flush=True)
        """
}

extension MonitorRecorder {
    /// The first frame that reached the recorder at or after CLOCK_MONOTONIC `time` (binary search
    /// over the arrival stamps); nil when the recording has not got there.
    func frame(at time: Double) -> Int? {
        var low = 0
        var high = frameCount - 1
        guard high >= 0, let last = arrivalTime(ofFrame: high), last >= time else { return nil }
        while low < high {
            let middle = (low + high) / 2
            if (arrivalTime(ofFrame: middle) ?? .infinity) < time { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The loudest sample from frame `start` to `end` (exclusive), both channels.
    func peak(from start: Int, to end: Int) -> Float {
        let samples = samples(from: start).prefix(max(0, end - start) * 2)
        return samples.reduce(0) { max($0, abs($1)) }
    }

    /// The last frame before `end` louder than `threshold`, from `start`; nil if none.
    func lastSound(from start: Int, before end: Int, threshold: Float = 0.01) -> Int? {
        let samples = samples(from: start)
        var frame = min(end, start + samples.count / 2) - 1
        while frame >= start {
            let index = (frame - start) * 2
            if abs(samples[index]) > threshold || abs(samples[index + 1]) > threshold { return frame }
            frame -= 1
        }
        return nil
    }
}

extension ChildProcess {
    /// Waits until its standard error (the daemon's log) contains `text`.
    func waitForLog(containing text: String, timeout: Double) -> Bool {
        let deadline = MonotonicClock.now + timeout
        while !errors.contains(text) {
            guard MonotonicClock.now < deadline else { return false }
            usleep(10_000)
        }
        return true
    }
}
