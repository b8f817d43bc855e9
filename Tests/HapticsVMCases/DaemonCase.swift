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
    let environment = [
        "PATH=/bin", "HOME=/tmp", "XDG_CONFIG_HOME=/tmp/config", "XDG_RUNTIME_DIR=/tmp",
        "DBUS_SESSION_BUS_ADDRESS=unix:path=/tmp/vm-bus", "FEEDBACK_THEME=/tmp/vm-theme.json",
        "PULSE_SERVER=unix:/tmp/no-sound-server",
    ]

    /// Starts both and waits until the daemon owns org.sigxcpu.Feedback.
    init(theme: String) throws(CaseFailure) {
        let tools = ["/bin/dbus-daemon", "/bin/gdbus", "/bin/feedbackservicesd"]
        for tool in tools where access(tool, X_OK) != 0 { throw CaseFailure("\(tool) is not in the initramfs") }
        let config = """
            <busconfig><type>session</type><listen>unix:path=/tmp/vm-bus</listen>
            <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
            </busconfig>
            """
        try writeFile("/tmp/vm-bus.conf", config)
        try writeFile("/tmp/vm-theme.json", theme)
        unlink("/tmp/vm-bus")
        bus = try startProgram("/bin/dbus-daemon", ["--config-file=/tmp/vm-bus.conf", "--nofork"], environment, log: "/tmp/vm-bus.log")
        for _ in 0..<200 where access("/tmp/vm-bus", F_OK) != 0 { sleepMilliseconds(10) }
        do {
            daemon = try startProgram("/bin/feedbackservicesd", [], environment, log: "/tmp/vm-daemon.log")
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

private func writeFile(_ path: String, _ text: String) throws(CaseFailure) {
    guard let file = fopen(path, "w") else { throw CaseFailure("cannot write \(path)") }
    fputs(text, file)
    fclose(file)
}

private func readLog(_ path: String) -> String {
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
private func startProgram(_ path: String, _ arguments: [String], _ environment: [String], log: String) throws(CaseFailure)
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
    let log = "/tmp/vm-gdbus.out"
    guard let pid = try? startProgram("/bin/gdbus", ["call", "--session"] + arguments, environment, log: log) else {
        return (-1, "")
    }
    let status = (try? System.waitpid(pid))?.status ?? -1
    return ((status >> 8) & 0xff, readLog(log))
}
