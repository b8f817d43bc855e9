import FeedbackServices
import Glibc

/// The session service in the VM: a private `dbus-daemon`, `feedbackservicesd` on it, and `gdbus`
/// as the client (all three copied into the initramfs by scripts/vm/haptics, with their
/// libraries). `Haptic.Vibrate` and an event whose theme feedback is a `VibraRumble` must reach
/// the uinput device as the patterns they name.
func daemonCase(device: (String) throws(CaseFailure) -> DeviceProgram) throws -> String {
    let program = try device("FBS Daemon")
    defer { program.destroy() }
    // One rumble event: two 100 ms pulses at half strength, 50 ms apart (feedbackd's VibraRumble).
    let service = try VMDaemon(
        theme: """
            { "name": "vm", "profiles": [ { "name": "quiet", "feedbacks": [
              { "event-name": "vm-rumble", "type": "VibraRumble", "duration": 300, "count": 2, "pause": 50, "magnitude": 0.5 } ] } ] }
            """)
    defer { service.stop() }
    let environment = service.environment
    let feedback = VMDaemon.feedback

    let vibrate = gdbus(
        feedback + ["org.sigxcpu.Feedback.Haptic.Vibrate", "--", "org.example.Game", "[(1.0, 200), (0.0, 50), (0.5, 300)]"],
        environment)
    try expect(vibrate.output == "(true,)\n", "Vibrate: \(vibrate.status) \(vibrate.output) \(readLog("/tmp/vm-daemon.log"))")
    sleepMilliseconds(700)
    var seen = uploads(program.records()).map { [$0.int("strong"), $0.int("length"), $0.int("delay")] }
    try expect(seen == [[65535, 200, 0], [32768, 300, 250]], "Vibrate's uploads \(seen)")

    let trigger = gdbus(
        feedback + ["org.sigxcpu.Feedback.TriggerFeedback", "--", "org.example.App", "vm-rumble", "{}", "-1"], environment)
    try expect(trigger.status == 0 && trigger.output.hasPrefix("(uint32 "), "TriggerFeedback: \(trigger.output) \(readLog("/tmp/vm-daemon.log"))")
    sleepMilliseconds(600)
    seen = uploads(program.records()).map { [$0.int("strong"), $0.int("length"), $0.int("delay")] }
    try expect(
        seen.dropFirst(2).elementsEqual([[32768, 100, 0], [32768, 100, 150]]),
        "the rumble event's uploads \(seen.dropFirst(2)): \(readLog("/tmp/vm-daemon.log"))")
    // Looping (timeout 0) from a client that leaves at once (gdbus): its vibration ends with it,
    // where feedbackd's would run on.
    let looped = monotonicMicroseconds()
    let loop = gdbus(
        feedback + ["org.sigxcpu.Feedback.TriggerFeedback", "--", "org.example.App", "vm-rumble", "{}", "0"], environment)
    try expect(loop.status == 0, "looping TriggerFeedback: \(loop.output)")
    sleepMilliseconds(1_200)
    let plays = program.records().filter { $0.kind == "PLAY" && $0.time >= looped }.map { Double($0.time - looped) / 1000 }
    try expect(plays.count <= 2, "the loop went on after its client left: plays at \(plays) ms")
    // An empty pattern is a stop, and says true while there is a vibrator.
    let stop = gdbus(feedback + ["org.sigxcpu.Feedback.Haptic.Vibrate", "--", "org.example.Game", "@a(du) []"], environment)
    try expect(stop.output == "(true,)\n", "empty Vibrate: \(stop.output)")
    return "Haptic.Vibrate, a VibraRumble event, a looping one ending with its client (\(plays.count) plays), through gdbus → dbus-daemon → feedbackservicesd → uinput"
}

/// feedbackd's `max-haptic-strength` caps every vibration the service plays: read with the real
/// `gsettings` (copied into the image by scripts/vm/haptics) from a schema directory the script
/// compiled, whose `org.sigxcpu.feedbackd` says 0.25 (a vendor's default; GSettings' memory
/// backend, as the image has no dconf). `Haptic.Vibrate` at full strength and a theme's
/// `VibraRumble` at half both reach the uinput device at a quarter.
func hapticCapCase(device: (String) throws(CaseFailure) -> DeviceProgram) throws -> String {
    let program = try device("FBS Cap")
    defer { program.destroy() }
    for tool in ["/bin/gsettings", "/usr/share/feedbackservices-vm/schemas/gschemas.compiled"] where access(tool, F_OK) != 0 {
        throw CaseFailure("\(tool) is not in the initramfs")
    }
    let service = try VMDaemon(
        theme: """
            { "name": "vm", "profiles": [ { "name": "quiet", "feedbacks": [
              { "event-name": "vm-rumble", "type": "VibraRumble", "duration": 100, "magnitude": 0.5 } ] } ] }
            """,
        extraEnvironment: ["GSETTINGS_SCHEMA_DIR=/usr/share/feedbackservices-vm/schemas", "GSETTINGS_BACKEND=memory"])
    defer { service.stop() }
    for _ in 0..<100 where !service.log.contains("are read and followed") { sleepMilliseconds(20) }
    try expect(service.log.contains("feedbackd's settings (org.sigxcpu.feedbackd) are read and followed"), "settings not read: \(service.log)")
    let vibrate = service.call("org.sigxcpu.Feedback.Haptic.Vibrate", ["org.example.Game", "[(1.0, 200)]"])
    try expect(vibrate.output == "(true,)\n", "Vibrate: \(vibrate.status) \(vibrate.output) \(service.log)")
    sleepMilliseconds(400)
    let trigger = service.call("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", "vm-rumble", "{}", "-1"])
    try expect(trigger.status == 0 && trigger.output.hasPrefix("(uint32 "), "TriggerFeedback: \(trigger.output) \(service.log)")
    sleepMilliseconds(400)
    let seen = uploads(program.records()).map { [$0.int("strong"), $0.int("length")] }
    try expect(seen == [[16384, 200], [16384, 100]], "uploads \(seen), expected a quarter's 16384: \(service.log)")
    return "max-haptic-strength 0.25 from gsettings: Vibrate at 1.0 and a VibraRumble at 0.5 both reached the device at 16384"
}

/// `feedbackctl vibrate` with the service running: the service vibrates (the command holds no
/// device open while it waits), at the strength `--intensity` scales; Ctrl-C stops it (130);
/// `--no-wait` leaves no process behind, and `feedbackctl stop` ends that vibration through the
/// service (`StopDetached`), as it signals the detached player of `--no-wait --no-daemon`.
func feedbackctlVibrateCase(device: (String) throws(CaseFailure) -> DeviceProgram) throws -> String {
    let program = try device("FBS CLI")
    defer { program.destroy() }
    let service = try VMDaemon(theme: #"{ "name": "vm", "profiles": [ { "name": "full", "feedbacks": [] } ] }"#)
    defer { service.stop() }
    let environment = service.environment
    func uploads(since time: Int64) -> [[Int]] {
        program.records().filter { $0.kind == "UPLOAD" && $0.time >= time }.map {
            [$0.int("strong"), $0.int("length"), $0.int("delay")]
        }
    }
    /// When the device was first told to stop or drop an effect after `time`, in ms after it.
    func stopped(after time: Int64) -> Int64? {
        program.records().first { ["STOP", "ERASE"].contains($0.kind) && $0.time >= time }.map { ($0.time - time) / 1000 }
    }

    var started = monotonicMicroseconds()
    let waited = runToEnd("/bin/feedbackctl", ["vibrate", "--pattern", "0,200,100,200", "--intensity", "0.5"], environment)
    let elapsed = (monotonicMicroseconds() - started) / 1000
    try expect(waited.status == 0, "vibrate: \(waited.status) \(waited.output) \(service.log)")
    try expect(elapsed >= 500, "vibrate returned after \(elapsed) ms, before its 500 ms pattern ended")
    let pattern = uploads(since: started)
    try expect(pattern == [[32768, 200, 0], [32768, 200, 300]], "vibrate's uploads \(pattern)")

    // A named primitive, through the service as a pattern: its steps reach the motor as written.
    started = monotonicMicroseconds()
    let clicked = runToEnd("/bin/feedbackctl", ["vibrate", "--primitive", "double-click"], environment)
    try expect(clicked.status == 0, "vibrate --primitive: \(clicked.status) \(clicked.output)")
    try expect(uploads(since: started) == [[65535, 20, 0], [65535, 20, 100]], "double-click's uploads \(uploads(since: started))")

    started = monotonicMicroseconds()
    let player = try startProgram("/bin/feedbackctl", ["vibrate", "--duration", "3000"], environment, log: "/tmp/vm-vibrate.out")
    for _ in 0..<300 where uploads(since: started).isEmpty { sleepMilliseconds(10) }
    let held = openFiles(of: player)
    kill(player, SIGINT)
    let interrupted = (try? System.waitpid(player))?.status ?? -1
    try expect(uploads(since: started) == [[65535, 3000, 0]], "the waiting vibrate's uploads \(uploads(since: started))")
    try expect(!held.contains(program.path), "the command opened the device itself: \(held)")
    try expect((interrupted >> 8) & 0xff == 130, "Ctrl-C: status \(interrupted) \(readLog("/tmp/vm-vibrate.out"))")
    let afterInterrupt = stopped(after: started)
    try expect((afterInterrupt ?? .max) < 2_000, "the vibration went on after Ctrl-C (stopped at \(String(describing: afterInterrupt)) ms)")

    started = monotonicMicroseconds()
    let detached = runToEnd("/bin/feedbackctl", ["vibrate", "--duration", "3000", "--no-wait"], environment)
    try expect(detached.status == 0, "vibrate --no-wait: \(detached.status) \(detached.output)")
    for _ in 0..<300 where uploads(since: started).isEmpty { sleepMilliseconds(10) }
    try expect(uploads(since: started) == [[65535, 3000, 0]], "--no-wait's uploads \(uploads(since: started))")
    let stop = runToEnd("/bin/feedbackctl", ["stop"], environment)
    let expected = "Stopped 1 player:\n  \(service.daemon)  feedbackservicesd: vibration of 3000 ms\n"
    try expect(stop.status == 0 && stop.output == expected, "stop: \(stop.status) '\(stop.output)'")
    let afterStop = stopped(after: started)
    try expect((afterStop ?? .max) < 2_500, "the --no-wait vibration went on after stop (stopped at \(String(describing: afterStop)) ms)")

    // The same in process (--no-daemon): a detached feedbackctl vibrates, and stop signals it.
    started = monotonicMicroseconds()
    let own = runToEnd("/bin/feedbackctl", ["vibrate", "--duration", "3000", "--no-wait", "--no-daemon"], environment)
    try expect(own.status == 0, "vibrate --no-wait --no-daemon: \(own.status) \(own.output)")
    for _ in 0..<300 where uploads(since: started).isEmpty { sleepMilliseconds(10) }
    try expect(uploads(since: started) == [[65535, 3000, 0]], "the detached player's uploads \(uploads(since: started))")
    let stopOwn = runToEnd("/bin/feedbackctl", ["stop"], environment)
    try expect(
        stopOwn.status == 0 && stopOwn.output.hasPrefix("Stopped 1 player:\n")
            && stopOwn.output.hasSuffix("  feedbackctl vibrate --duration 3000 --no-daemon\n"),
        "stop of the detached player: \(stopOwn.status) '\(stopOwn.output)'")
    let afterOwnStop = stopped(after: started)
    try expect((afterOwnStop ?? .max) < 2_500, "the detached player vibrated on after stop (\(String(describing: afterOwnStop)) ms)")
    return "vibrate through the service in \(elapsed) ms; Ctrl-C stopped it at \(afterInterrupt ?? -1) ms; "
        + "stop ended a --no-wait one at \(afterStop ?? -1) ms (in process: \(afterOwnStop ?? -1) ms)"
}

/// The paths process `pid` has open (`/proc/PID/fd`).
private func openFiles(of pid: pid_t) -> [String] {
    guard let directory = opendir("/proc/\(pid)/fd") else { return [] }
    defer { closedir(directory) }
    var paths: [String] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/\(pid)/fd/\(name)", &buffer, buffer.count - 1)
        if count > 0 { paths.append(String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)) }
    }
    return paths
}

/// A private `dbus-daemon` (/tmp/vm-bus) with `feedbackservicesd` on it, giving the feedback theme
/// `theme`; its log is /tmp/vm-daemon.log. `stop()` ends both (SIGTERM).
struct VMDaemon {
    /// `gdbus call` arguments up to the method's name.
    static let feedback = ["--dest", "org.sigxcpu.Feedback", "--object-path", "/org/sigxcpu/Feedback", "--method"]
    /// The dbus-daemon's PID.
    let bus: pid_t
    /// feedbackservicesd's PID.
    let daemon: pid_t
    /// What both run with, and what `gdbus` needs to reach the bus.
    let environment: [String]

    /// Starts both and waits until the daemon owns org.sigxcpu.Feedback; `theme` is the feedback
    /// theme (`FEEDBACK_THEME`; nil: none, the service chooses as it does on a device);
    /// `extraEnvironment` (`NAME=value`) is added to what both run with, an entry replacing the
    /// default of its name (`PULSE_SERVER=`, empty, lets the service fall back to ALSA);
    /// `arguments` are the daemon's.
    init(theme: String?, extraEnvironment: [String] = [], arguments: [String] = []) throws(CaseFailure) {
        let name = { (entry: String) in entry.prefix { $0 != "=" } }
        let replaced = Set(extraEnvironment.map(name) + (theme == nil ? ["FEEDBACK_THEME"] : []))
        environment = [
            "PATH=/bin", "HOME=/tmp", "XDG_CONFIG_HOME=/tmp/config", "XDG_RUNTIME_DIR=/tmp",
            "DBUS_SESSION_BUS_ADDRESS=unix:path=/tmp/vm-bus", "FEEDBACK_THEME=/tmp/vm-theme.json",
            "PULSE_SERVER=unix:/tmp/no-sound-server",
        ].filter { !replaced.contains(name($0)) } + extraEnvironment
        let tools = ["/bin/dbus-daemon", "/bin/gdbus", "/bin/feedbackservicesd"]
        for tool in tools where access(tool, X_OK) != 0 { throw CaseFailure("\(tool) is not in the initramfs") }
        let config = """
            <busconfig><type>session</type><listen>unix:path=/tmp/vm-bus</listen>
            <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
            </busconfig>
            """
        try writeFile("/tmp/vm-bus.conf", config)
        if let theme { try writeFile("/tmp/vm-theme.json", theme) }
        unlink("/tmp/vm-bus")
        bus = try startProgram("/bin/dbus-daemon", ["--config-file=/tmp/vm-bus.conf", "--nofork"], environment, log: "/tmp/vm-bus.log")
        for _ in 0..<200 where access("/tmp/vm-bus", F_OK) != 0 { sleepMilliseconds(10) }
        do {
            daemon = try startProgram("/bin/feedbackservicesd", arguments, environment, log: "/tmp/vm-daemon.log")
        } catch {
            stopProgram(bus)
            throw error
        }
        var owner = ""
        for _ in 0..<300 {
            owner = gdbus(
                ["--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                 "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID", "org.sigxcpu.Feedback"], environment).output
            if owner.contains("uint32 \(daemon)") { break }
            sleepMilliseconds(20)
        }
        guard owner.contains("uint32 \(daemon)") else {
            let logs = "\(readLog("/tmp/vm-daemon.log")) \(readLog("/tmp/vm-bus.log"))"
            stopProgram(daemon)
            stopProgram(bus)
            throw CaseFailure("feedbackservicesd did not take the name: \(owner) \(logs)")
        }
    }

    /// What the daemon logged so far.
    var log: String { readLog("/tmp/vm-daemon.log") }

    /// `feedbackctl ARGUMENTS` with what the service runs with, to its end.
    func feedbackctl(_ arguments: [String]) -> (status: Int32, output: String) {
        runToEnd("/bin/feedbackctl", arguments, environment)
    }

    /// `gdbus call` of org.sigxcpu.Feedback's `method` with `arguments`.
    func call(_ method: String, _ arguments: [String]) -> (status: Int32, output: String) {
        gdbus(Self.feedback + [method, "--"] + arguments, environment)
    }

    /// SIGTERM to the daemon (which puts back what it drives), then to the bus; waits for both.
    func stop() {
        stopProgram(daemon)
        stopProgram(bus)
    }
}

func writeFile(_ path: String, _ text: String) throws(CaseFailure) {
    guard let file = fopen(path, "w") else { throw CaseFailure("cannot write \(path)") }
    fputs(text, file)
    fclose(file)
}

func readLog(_ path: String) -> String {
    guard let file = fopen(path, "r") else { return "(no \(path))" }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        guard count > 0 else { break }
        bytes += buffer.prefix(count)
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// Starts `path` with its standard output and error into `log`; returns its PID.
func startProgram(_ path: String, _ arguments: [String], _ environment: [String], log: String) throws(CaseFailure)
    -> pid_t
{
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup($0) } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var pid = pid_t()
    let status = posix_spawn(&pid, path, &actions, nil, argv, envp)
    guard status == 0 else { throw CaseFailure("cannot start \(path): \(Errno(rawValue: status))") }
    return pid
}

private func stopProgram(_ pid: pid_t) {
    kill(pid, SIGTERM)
    _ = try? System.waitpid(pid)
}

/// `gdbus call --session ARGUMENTS`, its status and standard output.
private func gdbus(_ arguments: [String], _ environment: [String]) -> (status: Int32, output: String) {
    runToEnd("/bin/gdbus", ["call", "--session"] + arguments, environment)
}

/// Runs `path` to its end; its exit status and its standard output and error.
func runToEnd(_ path: String, _ arguments: [String], _ environment: [String]) -> (status: Int32, output: String) {
    let log = "/tmp/vm-run.out"
    guard let pid = try? startProgram(path, arguments, environment, log: log) else { return (-1, "") }
    let status = (try? System.waitpid(pid))?.status ?? -1
    return ((status >> 8) & 0xff, readLog(log))
}
