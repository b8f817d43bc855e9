import FeedbackServices
import FoundationEssentials
import Glibc
import Synchronization

/// A private PipeWire for the tests, as desktops run it: a session bus (`dbus-daemon --session`,
/// which WirePlumber needs; without it every stream stays unlinked), `pipewire` with a 48 kHz
/// stereo null sink added by a drop-in `pipewire.conf.d/null.conf`, `wireplumber` to link streams
/// to it, and `pipewire-pulse` so that PulseAudio clients (the engine's PulseAudio output,
/// libcanberra, the `parec` recorder on the sink's monitor) reach it too. Everything lives in a
/// temporary runtime directory.
///
/// Its processes form one process group (the bus leads it): `kill` ends them all with one signal,
/// and each has a watchdog that kills it if the test process dies first.
///
/// Each suite that records uses its own server (`shared(named:)`) and is `.serialized`.
package final class PipeWireTestServer: SoundTestServer, @unchecked Sendable {
    // Locking rule: `daemons`, `bus` and `recorder` change only in `start`/`kill`/`restart`, which
    // the serialized suites call from one test at a time.
    /// The null sink's node name (its monitor is `fbtest.monitor`, as on the PulseAudio server).
    package static let sink = PulseAudioTestServer.sink

    package let directory = TemporaryDirectory()
    package var runtime: String { directory.file("runtime") }
    /// PipeWire's own socket, for a native client (`remote.name`).
    package var socket: String { "\(runtime)/pipewire-0" }
    package var pipeWireSocket: String? { socket }
    /// pipewire-pulse's socket, as a PulseAudio server address.
    package var server: String { "unix:\(runtime)/pulse/native" }
    package private(set) var recorder: MonitorRecorder!
    package let recording: Bool
    /// The smallest graph quantum, in frames, when one is forced (`default.clock.min-quantum`).
    package let minimumQuantum: Int?
    package var kind: SoundServerKind { .pipeWire }
    /// The session bus (leader of the process group), and pipewire, wireplumber, pipewire-pulse.
    private var bus: pid_t = 0
    private var daemons: [pid_t] = []

    private init(recording: Bool, minimumQuantum: Int?) {
        self.recording = recording
        self.minimumQuantum = minimumQuantum
    }

    /// Whether the programs it needs are installed.
    package static var available: Bool {
        let programs = ["pipewire", "wireplumber", "pipewire-pulse", "dbus-daemon", "parec", "pactl"]
        return programs.allSatisfy { access("/usr/bin/\($0)", X_OK) == 0 }
    }

    /// Whether a test that needs the server should run: always in CI (where a missing server is
    /// a failure), otherwise only where it can be started.
    package static var shouldRun: Bool { runningInCI || available }

    private static let instances = Lock<[String: PipeWireTestServer]>([:])

    /// The server named `name`, started on first use and killed when the test process exits.
    /// `minimumQuantum` forces the graph to run at least that many frames per cycle: a 2 or 5 ms
    /// cycle glitches when the machine is busy, even with the data threads SCHED_FIFO (as root).
    package static func shared(
        named name: String = "default", recording: Bool = true, minimumQuantum: Int? = nil
    ) throws -> PipeWireTestServer {
        try instances.withLock { instances in
            if let instance = instances[name] { return instance }
            guard available else {
                throw TestFailure("pipewire, wireplumber, pipewire-pulse, dbus-daemon, parec and pactl are needed (scripts/setup installs them)")
            }
            let server = PipeWireTestServer(recording: recording, minimumQuantum: minimumQuantum)
            try server.start()
            if instances.isEmpty {
                atexit {
                    PipeWireTestServer.instances.withLock { $0.values.forEach { $0.shutdown() } }
                }
            }
            instances[name] = server
            return server
        }
    }

    /// Ends the shared server named `name`, if one runs (bus, daemons and recorder): for a suite
    /// that is done with it (its graph, driven by the recorder, otherwise runs to the end of the
    /// test process, with real-time threads). The next `shared(named: name)` starts a new one.
    package static func shutDownShared(named name: String) {
        instances.withLock { $0.removeValue(forKey: name) }?.shutdown()
    }

    private var environment: [String] {
        [
            "HOME=\(directory.path)", "XDG_RUNTIME_DIR=\(runtime)", "XDG_CONFIG_HOME=\(directory.file("config"))",
            "XDG_STATE_HOME=\(directory.file("state"))", "DBUS_SESSION_BUS_ADDRESS=unix:path=\(runtime)/bus",
            "PATH=/usr/bin:/bin",
        ]
    }

    /// Starts the bus (once) and the three daemons, and waits until the recorder hears the sink.
    ///
    /// When the recorder hears nothing (WirePlumber never linked parec within 10 s: in most CI runs,
    /// in the main run and the ThreadSanitizer run alike, always in `serverKilledMidPlay…` right
    /// after it killed and restarted the daemons; 8 runs of that test alone never showed it), the
    /// daemons are killed and started once more, with a line saying so, the graph's ports and
    /// links as PipeWire then had them (whether parec's ports existed, and what they were linked
    /// to) and the end of WirePlumber's log (which said nothing so far); a second silence fails.
    package func start() throws {
        do {
            try startOnce()
        } catch let failure as TestFailure where failure.description == MonitorRecorder.silence {
            let log = (try? String(contentsOfFile: directory.file("wireplumber.log"), encoding: .utf8)) ?? ""
            print(
                "PipeWireTestServer: \(failure); starting the daemons again. The graph then (pw-link -oil): \(graph()) "
                    + "wireplumber.log ends: \(log.suffix(600))")
            kill()
            try startOnce()
        }
    }

    /// PipeWire's ports and links (`pw-link --output --input --links`), or why there is no list;
    /// at most 5 s, for a daemon that does not answer.
    private func graph() -> String {
        guard
            let child = try? ChildProcess(
                "/usr/bin/pw-link", ["--output", "--input", "--links"], environment: merging(environment, into: [:]), watched: false)
        else { return "(pw-link did not start)" }
        guard child.wait(timeout: 5) != nil else { return "(pw-link had no answer within 5 s)" }
        let listing = child.output + child.errors
        return listing.count > 3_000 ? "…" + String(listing.suffix(3_000)) : listing
    }

    private func startOnce() throws {
        mkdir(runtime, 0o700)
        if bus == 0 {
            try writeConfiguration()
            bus = try spawn(
                "/usr/bin/dbus-daemon", ["--session", "--nofork", "--address=unix:path=\(runtime)/bus"],
                environment: environment, log: directory.file("dbus.log"), processGroup: 0)
            try waitFor("\(runtime)/bus", "dbus-daemon")
        }
        unlink(socket)
        unlink("\(runtime)/pulse/native")
        for program in ["pipewire", "wireplumber", "pipewire-pulse"] {
            daemons.append(
                try spawn(
                    "/usr/bin/\(program)", [], environment: environment, log: directory.file("\(program).log"),
                    processGroup: bus))
            if program == "pipewire" { try waitFor(socket, program) }
        }
        try waitFor("\(runtime)/pulse/native", "pipewire-pulse")
        // The recorder's stream is linked only once WirePlumber runs: audio arriving proves the
        // whole chain is up.
        if recording {
            try waitForPulseAnswer()
            recorder = try MonitorRecorder(server: server, sink: Self.sink, environment: environment)
        }
    }

    /// Waits (at most 10 s) until pipewire-pulse lists the null sink (`pactl list short sinks`). Its
    /// socket exists before it serves: in the one retry whose graph was listed (right after a kill
    /// and restart), parec had connected, yet its record stream never became a PipeWire node.
    private func waitForPulseAnswer() throws {
        let listed = waitForPactl(
            server: server, ["list", "short", "sinks"], environment: environment, timeout: 10) { $0.contains(Self.sink) }
        guard listed.satisfied else {
            throw TestFailure("pipewire-pulse did not list the sink \(Self.sink) within 10 s: \(listed.last.suffix(400))")
        }
    }

    private func writeConfiguration() throws {
        let dropIn = directory.file("config/pipewire/pipewire.conf.d")
        for path in ["config", "config/pipewire", "config/pipewire/pipewire.conf.d", "state"] {
            mkdir(directory.file(path), 0o700)
        }
        let quantum = minimumQuantum.map { "context.properties = { default.clock.min-quantum = \($0) }\n" } ?? ""
        let null = quantum + """
            context.objects = [
              { factory = adapter
                args = { factory.name = support.null-audio-sink node.name = "\(Self.sink)"
                         media.class = "Audio/Sink" audio.position = [ FL FR ] audio.rate = 48000
                         object.linger = true monitor.channel-volumes = true node.driver = true } }
            ]

            """
        guard FileManager.default.createFile(atPath: "\(dropIn)/null.conf", contents: Data(null.utf8)) else {
            throw TestFailure("cannot write \(dropIn)/null.conf")
        }
    }

    private func waitFor(_ path: String, _ program: String) throws {
        let deadline = MonotonicClock.now + 15
        while access(path, F_OK) != 0 {
            guard MonotonicClock.now < deadline else {
                throw TestFailure("\(program) did not open \(path) (see \(directory.path)/\(program).log)")
            }
            usleep(20_000)
        }
    }

    /// Kills pipewire, wireplumber and pipewire-pulse (SIGKILL), as a crash would; the bus stays
    /// for `restart`.
    package func kill() {
        for pid in daemons { Glibc.kill(pid, SIGKILL) }
        for pid in daemons { _ = try? System.waitpid(pid) }
        daemons = []
        // After the daemons: parec on pipewire-pulse does not end on SIGTERM while the server lives.
        recorder?.stop()
        recorder = nil
    }

    /// Starts the daemons again on the same sockets.
    package func restart() throws {
        try start()
    }

    /// Stops pipewire, wireplumber and pipewire-pulse (SIGSTOP), as a hung server would be.
    /// Always `resume()` it (in a `defer`).
    package func stop() {
        for pid in daemons { Glibc.kill(pid, SIGSTOP) }
    }

    /// Lets the stopped daemons run again (SIGCONT).
    /// PipeWire destroys the client's object (`pw-cli destroy`): pipewire-pulse's clients are
    /// PipeWire clients too.
    package func dropClient(_ index: String) -> ProcessResult {
        runProcess("/usr/bin/pw-cli", ["--remote", socket, "destroy", index])
    }

    package func resume() {
        for pid in daemons { Glibc.kill(pid, SIGCONT) }
    }

    /// Ends every process of the server, the bus too: one signal to the process group.
    private func shutdown() {
        guard bus != 0 else { return }
        Glibc.kill(-bus, SIGKILL)
        for pid in daemons + [bus] { _ = try? System.waitpid(pid) }
        daemons = []
        bus = 0
        recorder?.stop()
        recorder = nil
    }
}

/// A sound server the tests start and record from: PulseAudio, or PipeWire with pipewire-pulse.
package protocol SoundTestServer: AnyObject, Sendable {
    /// Which kind it is.
    var kind: SoundServerKind { get }
    /// Its PulseAudio address (`unix:…`): the PulseAudio server's, or pipewire-pulse's.
    var server: String { get }
    /// PipeWire's own socket, for `PipeWireOutput`; nil on PulseAudio.
    var pipeWireSocket: String? { get }
    /// The recorder on the null sink's monitor; nil for a server made with `recording: false`.
    var recorder: MonitorRecorder! { get }
    /// Kills it (SIGKILL), as a crash would.
    func kill()
    /// Starts it again on the same sockets.
    func restart() throws
    /// Stops it (SIGSTOP), as a hung server would be: its sockets accept, nothing answers or reads.
    func stop()
    /// Lets a stopped server run again (SIGCONT).
    func resume()
    /// Has the server drop its client `index` (as `pactl list clients` numbers it), as when the
    /// server is restarted under it.
    func dropClient(_ index: String) -> ProcessResult
}

extension SoundTestServer {
    /// The index of the client `pactl list clients` shows with the application name `name`.
    package func clientIndex(named name: String) -> String? {
        let listing = runProcess("/usr/bin/pactl", ["--server=\(server)", "list", "clients"])
        // Blocks of "Client #N" followed by their properties.
        let block = listing.output.components(separatedBy: "Client #").dropFirst()
            .first { $0.contains("application.name = \"\(name)\"") }
        return block.map { String($0.prefix { $0.isNumber }) }
    }
}

/// The sound servers the output suites run against, each a test case of its own.
package enum SoundServerKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case pulseAudio = "PulseAudio"
    case pipeWire = "PipeWire"

    /// The kinds to test here: both in CI (a missing server fails there), otherwise the ones installed.
    package static var testable: [SoundServerKind] {
        allCases.filter { runningInCI || $0.available }
    }

    /// Its name, for test case names ("PipeWire").
    package var description: String { rawValue }

    /// Whether its programs are installed.
    package var available: Bool {
        switch self {
        case .pulseAudio: PulseAudioTestServer.available
        case .pipeWire: PipeWireTestServer.available
        }
    }

    /// Ends the shared server of this kind named `name`, if one runs.
    package func shutDownShared(named name: String) {
        switch self {
        case .pulseAudio: PulseAudioTestServer.shutDownShared(named: name)
        case .pipeWire: PipeWireTestServer.shutDownShared(named: name)
        }
    }

    /// The shared server of this kind named `name` (see `PulseAudioTestServer.shared(named:recording:)`).
    package func shared(named name: String, recording: Bool = true) throws -> any SoundTestServer {
        switch self {
        case .pulseAudio: try PulseAudioTestServer.shared(named: name, recording: recording)
        case .pipeWire: try PipeWireTestServer.shared(named: name, recording: recording)
        }
    }
}
