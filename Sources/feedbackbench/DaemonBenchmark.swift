import FeedbackBus
import FeedbackServices
import FeedbackTestSupport
import FoundationEssentials
import Glibc

/// feedbackservicesd beside Debian's feedbackd 0.0.3 (`/usr/libexec/feedbackd`),
/// each on a private session bus of its own, both playing into the benchmarks' PulseAudio, in one
/// run: `feedbackctl fire 1007` through the service against `paplay` of the same file; `fbcli`'s
/// trigger to the first sample; the `TriggerFeedback` round trip; a cold start by D-Bus activation
/// to the first sample; an idle daemon's wake-ups and memory; 100 clients at once.
struct DaemonBenchmark {
    let triggers: Int
    /// Only `feedbackctl fire` through the service against paplay (`--only daemon-fire`).
    var fireOnly = false

    static let feedbackd = "/usr/libexec/feedbackd"
    static let fbcli = "/usr/bin/fbcli"
    static let event = "message-new-instant"

    /// One daemon on its own bus.
    final class Contender {
        let name: String
        let program: String
        let directory = TemporaryDirectory()
        let environment: [String: String]
        let bus: PrivateSessionBus
        var process: ChildProcess?

        /// - Parameter output: where its sound goes (`PULSE_SERVER`, or `PIPEWIRE_REMOTE`).
        init(name: String, program: String, output: [String: String]) throws {
            self.name = name
            self.program = program
            mkdir(directory.file("services"), 0o700)
            mkdir(directory.file("home"), 0o700)
            var environment = [
                "PATH": "/usr/bin:/bin", "HOME": directory.file("home"),
                "XDG_CONFIG_HOME": directory.file("home/.config"), "XDG_DATA_HOME": directory.file("home/.local/share"),
                "XDG_RUNTIME_DIR": directory.path, "LANG": "C.UTF-8",
            ].merging(output) { $1 }
            bus = try PrivateSessionBus(directory: directory, services: directory.file("services"), environment: environment)
            environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
            self.environment = environment
        }

        /// Starts the daemon by hand and waits until it owns `org.sigxcpu.Feedback`.
        func start() throws -> Int32 {
            let process = try ChildProcess(program, [], environment: environment, watched: false)
            self.process = process
            let client = try BusClient(address: bus.address)
            let deadline = MonotonicClock.now + 10
            while client.ownerPID(of: "org.sigxcpu.Feedback") != process.pid {
                guard MonotonicClock.now < deadline else { throw TestFailure("\(name) did not take its name: \(process.errors)") }
                usleep(10_000)
            }
            return process.pid
        }

        func stop() {
            process?.signal(SIGTERM)
            if process?.wait(timeout: 5) == nil { process?.signal(SIGKILL) }
            bus.kill()
        }
    }

    func run() {
        guard let server = benchmarkServer(for: "daemon") else { return }
        let daemon = CommandBenchmark.siblingExecutable("feedbackservicesd")
        let feedbackctl = CommandBenchmark.siblingExecutable("feedbackctl")
        for (program, what) in [(daemon, "feedbackservicesd"), (feedbackctl, "feedbackctl"), (Self.feedbackd, "feedbackd (Debian package feedbackd)"), (Self.fbcli, "fbcli"), (PrivateSessionBus.program, "dbus-daemon")]
        where access(program, X_OK) != 0 {
            print("daemon: \(what) is missing at \(program); run 'swift build -c release' and scripts/setup")
            return
        }
        let ours: Contender
        let reference: Contender
        do {
            ours = try Contender(name: "feedbackservicesd", program: daemon, output: ["PULSE_SERVER": server.server])
            reference = try Contender(name: "feedbackd 0.0.3", program: Self.feedbackd, output: ["PULSE_SERVER": server.server])
            _ = try ours.start()
            _ = try reference.start()
        } catch {
            print("daemon: \(error)")
            return
        }
        defer {
            ours.stop()
            reference.stop()
        }
        fire(through: ours, server: server, feedbackctl: feedbackctl)
        if fireOnly { return }
        fbcli([ours, reference], server: server)
        roundTrip([ours, reference])
        idle([ours, reference])
        clients([ours, reference])
        coldStart(server: server, programs: [("feedbackservicesd", daemon), ("feedbackd 0.0.3", Self.feedbackd)])
    }

    /// The time from starting `command` to its first sample at the server.
    private func onset(_ server: PulseAudioTestServer, _ start: () throws -> Void, label: String) -> Double {
        server.recorder.wait(seconds: 0.1)
        let begin = MonotonicClock.now
        let arrival: Double?
        do { arrival = try server.recorder.arrivalOfFirstSound(after: start) } catch { fatalError("\(label): \(error)") }
        guard let arrival else { fatalError("\(label): the sound never reached the server") }
        return arrival - begin
    }

    private func fire(through ours: Contender, server: PulseAudioTestServer, feedbackctl: String) {
        guard let resolver = try? SoundThemeResolver.standard(),
            case .resolved(let sound) = resolver.resolve(try! SystemSoundCatalog.sound(for: 1007))
        else { return print("feedbackctl fire: system sound 1007 does not resolve to a file here") }
        var contenders: [(String, String, [String], [String: String])] = [
            ("feedbackctl fire 1007 (service running)", feedbackctl, ["fire", "1007"], ours.environment),
            ("feedbackctl fire 1007 --no-daemon", feedbackctl, ["fire", "1007", "--no-daemon"], ours.environment),
            ("paplay FILE", "/usr/bin/paplay", [sound.path], ours.environment),
        ]
        // Another feedbackctl to compare with in the same run (a change's before and after), as
        // the command benchmark's.
        if let baseline = getenv("FEEDBACKBENCH_BASELINE").map({ String(cString: $0) }), access(baseline, X_OK) == 0 {
            contenders.append(("baseline fire 1007 (service running)", baseline, ["fire", "1007"], ours.environment))
        }
        var onsets = [[Double]](repeating: [], count: contenders.count)
        for _ in 0..<triggers {
            for (index, contender) in contenders.enumerated() {
                var child: ChildProcess?
                onsets[index].append(onset(server, {
                    child = try ChildProcess(contender.1, contender.2, environment: contender.3, watched: false)
                }, label: contender.0))
                guard child?.wait(timeout: 10) == 0 else { fatalError("\(contender.0) failed: \(child?.errors ?? "")") }
            }
        }
        print("whole process, start to first sample at the server (\(triggers) runs each, interleaved; \(sound.path))")
        let timings = onsets.map { Timings(samples: $0) }
        for (index, contender) in contenders.enumerated() { print("  \(padded(contender.0)) \(timings[index].summary)") }
        let value = timings[0].median / timings[2].median
        print("  fire through the service / paplay: \(ratio(timings[0].median, timings[2].median)) (target ≤ 1.0×: \(value <= 1 ? "meets" : "MISSES"))")
    }

    private func fbcli(_ daemons: [Contender], server: PulseAudioTestServer) {
        var onsets = [[Double]](repeating: [], count: daemons.count)
        for _ in 0..<triggers {
            for (index, daemon) in daemons.enumerated() {
                var child: ChildProcess?
                onsets[index].append(onset(server, {
                    // fbcli ends its feedback when its standard input closes: it stays open.
                    child = try ChildProcess(Self.fbcli, ["-E", Self.event], environment: daemon.environment, holdStdin: true, watched: false)
                }, label: "fbcli → \(daemon.name)"))
                // It returns when the feedback ended: the next trigger starts in silence.
                guard child?.wait(timeout: 10) == 0 else { fatalError("fbcli → \(daemon.name) failed: \(child?.errors ?? "")") }
            }
        }
        print("fbcli -E \(Self.event): start to first sample at the server (\(triggers) runs each, interleaved)")
        let timings = onsets.map { Timings(samples: $0) }
        for (index, daemon) in daemons.enumerated() { print("  \(padded("fbcli → \(daemon.name)")) \(timings[index].summary)") }
        print("  ours / feedbackd: median \(ratio(timings[0].median, timings[1].median)), p90 \(ratio(timings[0].p90, timings[1].p90)) (target ≤ 1.0×)")
    }

    private func roundTrip(_ daemons: [Contender]) {
        let clients = daemons.map { try! BusClient(address: $0.bus.address) }
        var times = [[Double]](repeating: [], count: daemons.count)
        for _ in 0..<triggers {
            for (index, client) in clients.enumerated() {
                times[index].append(measure {
                    _ = try! client.call(
                        "org.sigxcpu.Feedback", path: "/org/sigxcpu/Feedback", interface: "org.sigxcpu.Feedback",
                        member: "TriggerFeedback", [.string("org.example.Bench"), .string(Self.event), .dictionary([:]), .int32(-1)])
                })
                // Within the service's trigger rate, and never more than a few sounds at once.
                usleep(60_000)
            }
        }
        print("TriggerFeedback round trip over sd-bus (\(triggers) calls each, interleaved)")
        let timings = times.map { Timings(samples: $0) }
        for (index, daemon) in daemons.enumerated() { print("  \(padded(daemon.name)) \(timings[index].summary)") }
        print("  ours / feedbackd: \(ratio(timings[0].median, timings[1].median))")
    }

    private func coldStart(server: PulseAudioTestServer, programs: [(String, String)]) {
        let runs = triggers
        var onsets = [[Double]](repeating: [], count: programs.count)
        for _ in 0..<runs {
            for (index, program) in programs.enumerated() {
                let contender = try! Contender(name: program.0, program: program.1, output: ["PULSE_SERVER": server.server])
                let activation = "[D-BUS Service]\nName=org.sigxcpu.Feedback\nExec=\(program.1)\n"
                contender.directory.write(Array(activation.utf8), to: "services/org.sigxcpu.Feedback.service")
                let client = try! BusClient(address: contender.bus.address)
                onsets[index].append(onset(server, {
                    _ = try client.call(
                        "org.sigxcpu.Feedback", path: "/org/sigxcpu/Feedback", interface: "org.sigxcpu.Feedback",
                        member: "TriggerFeedback", [.string("org.example.Bench"), .string(Self.event), .dictionary([:]), .int32(-1)],
                        autoStart: true)
                }, label: "cold \(program.0)"))
                if let pid = client.ownerPID(of: "org.sigxcpu.Feedback") {
                    kill(pid, SIGTERM)
                    let deadline = MonotonicClock.now + 5
                    while kill(pid, 0) == 0 && MonotonicClock.now < deadline { usleep(5_000) }
                }
                contender.bus.kill()
            }
        }
        print("cold start: first TriggerFeedback activates the daemon → first sample (\(runs) starts each, interleaved)")
        let timings = onsets.map { Timings(samples: $0) }
        for (index, program) in programs.enumerated() { print("  \(padded(program.0)) \(timings[index].summary)") }
        print("  ours / feedbackd: \(ratio(timings[0].median, timings[1].median))")
    }

    private func idle(_ daemons: [Contender]) {
        print("idle daemon, 2 s after one feedback, over 5 s: wake-ups (context switches of all threads) and memory")
        for daemon in daemons {
            guard let pid = daemon.process?.pid else { continue }
            let client = try! BusClient(address: daemon.bus.address)
            _ = try? client.call(
                "org.sigxcpu.Feedback", path: "/org/sigxcpu/Feedback", interface: "org.sigxcpu.Feedback",
                member: "TriggerFeedback", [.string("org.example.Bench"), .string(Self.event), .dictionary([:]), .int32(-1)])
            usleep(2_000_000)
            let before = contextSwitches(pid)
            usleep(5_000_000)
            let perSecond = Double(contextSwitches(pid) - before) / 5
            print("  \(padded(daemon.name)) \((perSecond * 10).rounded() / 10) wake-ups/s  RSS \(status(pid, "VmRSS"))")
        }
    }

    private func clients(_ daemons: [Contender]) {
        print("100 clients, one connection each, triggering at once: the daemon's CPU time and memory")
        for daemon in daemons {
            guard let pid = daemon.process?.pid else { continue }
            let connections = (0..<100).compactMap { _ in try? BusClient(address: daemon.bus.address) }
            let cpuBefore = cpuSeconds(pid)
            let elapsed = measure {
                for client in connections {
                    _ = try? client.call(
                        "org.sigxcpu.Feedback", path: "/org/sigxcpu/Feedback", interface: "org.sigxcpu.Feedback",
                        member: "TriggerFeedback", [.string("org.example.Bench"), .string(Self.event), .dictionary([:]), .int32(-1)])
                }
            }
            usleep(1_500_000)
            let cpu = cpuSeconds(pid) - cpuBefore
            print(
                "  \(padded(daemon.name)) 100 triggers in \(milliseconds(elapsed)), CPU \(milliseconds(cpu)) until 1.5 s after"
                    + "  RSS \(status(pid, "VmRSS")) (peak \(status(pid, "VmHWM")))")
        }
    }

    /// Voluntary and involuntary context switches of every thread of `pid`.
    private func contextSwitches(_ pid: Int32) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { total, task in
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
            return total
                + text.split(separator: "\n").filter { $0.contains("ctxt_switches:") }
                .compactMap { Int($0.split(separator: "\t").last ?? "") }.reduce(0, +)
        }
    }

    /// User plus system CPU time of `pid`, from /proc/PID/stat.
    private func cpuSeconds(_ pid: Int32) -> Double {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        // The fields after the command name, which is in parentheses and may hold spaces.
        let fields = text.split(separator: ")").last?.split(separator: " ") ?? []
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// A line of /proc/PID/status, such as "VmRSS", without its name.
    private func status(_ pid: Int32, _ key: String) -> String {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix("\(key):") } ?? ""
        return String(line.dropFirst(key.count + 1).drop { $0 == " " || $0 == "\t" })
    }
}
