import FeedbackDaemon
import FeedbackServices
import FeedbackTestSupport
import FoundationEssentials
import Glibc
import Testing

/// The Haptic interface without a vibrator, the desktop's GSettings, SIGHUP and the settings file
/// watched on disk. In the suite, so that they share its recording one at a time.
extension FeedbackDaemonTests {
    private func trigger(_ harness: DaemonHarness, _ event: String) -> ProcessResult {
        harness.callFeedback("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", event, "{}", "-1"])
    }

    private func vibrate(_ harness: DaemonHarness, _ pattern: String) -> ProcessResult {
        harness.callFeedback("org.sigxcpu.Feedback.Haptic.Vibrate", ["org.example.Game", pattern])
    }

    /// A 0.4 s tone at `amplitude`, as a 16-bit WAV at `path`.
    private func writeTone(_ path: String, amplitude: Float = 0.1) throws {
        let rate = 48_000
        let samples = (0..<(rate * 2 / 5)).map { amplitude * Float(sin(2 * Double.pi * 440 * Double($0) / Double(rate))) }
        try SoundFileWriter.write(
            SoundDecoder().decode(samples: samples, sampleRate: rate, channelCount: 1), to: path, format: .wav16)
    }

    /// The keyfile GSettings backend's file for `harness`'s environment.
    private func writeGSettings(_ harness: DaemonHarness, _ lines: String) {
        let directory = harness.directory.file("home/.config/glib-2.0/settings")
        _ = runProcess("/bin/mkdir", ["-p", directory])
        _ = harness.directory.write(
            Array("[org/gnome/desktop/sound]\n\(lines)\n".utf8), to: "home/.config/glib-2.0/settings/keyfile")
    }

    @Test func hapticVibrateIsServedAndChecksItsPattern() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let introspection = harness.gdbus(
            "introspect", "--session", "--dest", "org.sigxcpu.Feedback", "--object-path", "/org/sigxcpu/Feedback")
        #expect(introspection.output.contains("interface org.sigxcpu.Feedback.Haptic"), "\(introspection.output)")
        #expect(introspection.output.contains("Vibrate(in  s app_id,"), "\(introspection.output)")
        // This machine has no vibrator: false, as feedbackd answers.
        #expect(vibrate(harness, "[(1.0, 200), (0.0, 50), (0.5, 300)]").output == "(false,)\n")
        #expect(vibrate(harness, "@a(du) []").output == "(false,)\n")
        let bad: [(String, String)] = [
            ("[(1.5, 100)]", "outside 0…1"), ("[(-0.1, 100)]", "outside 0…1"),
            ("[(1.0, 10001)]", "longer than 10000 ms"),
            ("[" + Array(repeating: "(1.0, 10000)", count: 7).joined(separator: ", ") + "]", "more than 60000 ms"),
            ("[" + Array(repeating: "(1.0, 1)", count: 65).joined(separator: ", ") + "]", "more than 64 pattern steps"),
        ]
        for (pattern, message) in bad {
            let reply = vibrate(harness, pattern)
            #expect(reply.errors.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(pattern): \(reply.errors)")
            #expect(reply.errors.contains(message), "\(pattern): \(reply.errors)")
        }
        let wrong = harness.callFeedback("org.sigxcpu.Feedback.Haptic.Vibrate", ["org.example.Game", "[(1, 2, 3)]"])
        #expect(wrong.status != 0)
        #expect(trigger(harness, "no-such-event").status == 0, "still answering")
    }

    @Test func debianDefaultThemePlaysByLevel() throws {
        let theme = try FeedbackTheme.load(path: DaemonTools.debianTheme, parents: [])
        let events = ["message-new-email", "phone-incoming-call", "battery-caution", "window-close", "phone-hangup"]
        func kinds(_ event: String, _ profile: FeedbackProfile) -> [String] {
            theme.feedbacks(for: event, profile: profile).map {
                switch $0 {
                case .sound, .soundFile: "sound"
                case .vibration: "vibration"
                case .led: "led"
                case .dummy: "dummy"
                case .pattern: "pattern"
                }
            }
        }
        let expected: [FeedbackProfile: [[String]]] = [
            .full: [["sound", "vibration"], ["sound", "vibration"], ["led"], ["sound", "vibration"], ["sound"]],
            .quiet: [["vibration"], ["vibration"], ["led"], ["vibration"], []],
            .silent: [[], [], ["led"], [], []],
        ]
        for profile in FeedbackProfile.allCases {
            #expect(events.map { kinds($0, profile) } == expected[profile], "\(profile)")
        }
        // Every sound is full's, every vibration quiet's, every LED silent's: 16, 12, 6.
        let all = Set(events + ["alarm-clock-elapsed", "button-pressed", "camera-shutter", "message-new-sms", "theme-demo"])
        #expect(all.allSatisfy { !kinds($0, .quiet).contains("sound") })
        #expect(all.allSatisfy { kinds($0, .silent).allSatisfy { $0 == "led" } })
    }

    @Test func gsettingsEventSoundsAndThemeNameAreHonoured() throws {
        let harness = try DaemonHarness(pulse: pulse)
        // A sound theme of the user's own, with a quiet tone for message-new-instant.
        let theme = harness.directory.file("home/.local/share/sounds/mytheme")
        _ = runProcess("/bin/mkdir", ["-p", "\(theme)/stereo"])
        _ = harness.directory.write(
            Array("[Sound Theme]\nName=Mine\nDirectories=stereo\n\n[stereo]\nOutputProfile=stereo\n".utf8),
            to: "home/.local/share/sounds/mytheme/index.theme")
        try writeTone("\(theme)/stereo/message-new-instant.wav")
        writeGSettings(harness, "event-sounds=false\ntheme-name='mytheme'")
        let daemon = try harness.startDaemon(environment: ["GSETTINGS_BACKEND": "keyfile"])
        let monitor = try harness.monitor()
        #expect(daemon.errors.contains("event sounds are off"), "\(daemon.errors)")
        var start = recorder.frameCount
        #expect(trigger(harness, "message-new-instant").status == 0)
        #expect(monitor.ended(1, timeout: 2) != nil)
        #expect(recorder.firstSound(after: start, timeout: 0.5) == nil, "event-sounds=false, yet a sound played")
        // SIGHUP reads the settings again: event sounds on, from the desktop's theme.
        writeGSettings(harness, "event-sounds=true\ntheme-name='mytheme'")
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog(containing: "reloaded", timeout: 5), "\(daemon.errors)")
        start = recorder.frameCount
        #expect(trigger(harness, "message-new-instant").status == 0)
        let onset = try #require(recorder.firstSound(after: start, timeout: 2), "\(daemon.errors)")
        let peak = recorder.peak(from: onset, to: onset + 12_000)
        #expect(peak > 0.05 && peak < 0.15, "the desktop theme's tone: peak \(peak)")
    }

    /// The theme's file edited while the service runs is read again: at once (inotify on its
    /// directory), and on SIGHUP; another file written beside it reloads nothing; a broken edit
    /// keeps the old theme, with a line saying so.
    @Test(arguments: [false, true])
    func anEditedThemeIsReadAgainAndABrokenOneKeepsTheOld(signalling: Bool) throws {
        let harness = try DaemonHarness(pulse: pulse)
        func theme(_ event: String) -> [UInt8] {
            Array(
                """
                { "name": "mine", "profiles": [ { "name": "full", "feedbacks": [
                  { "event-name": "\(event)", "type": "Sound", "effect": "message-new-instant" } ] } ] }
                """.utf8)
        }
        // Without SIGHUP the file watch reloads ("theme file changed"); with it, the signal too.
        let said = signalling ? "reloaded" : "theme file changed"
        let path = harness.directory.write(theme("first-event"), to: "theme.json")
        let daemon = try harness.startDaemon(environment: ["FEEDBACK_THEME": path])
        let monitor = try harness.monitor()
        #expect(trigger(harness, "first-event").status == 0)
        #expect(monitor.ended(1, timeout: 5) == 0)
        _ = harness.directory.write(theme("second-event"), to: "theme.json")
        if signalling { daemon.signal(SIGHUP) }
        #expect(daemon.waitForLog(containing: "\(said): feedback theme 'mine'", timeout: 5), "\(daemon.errors)")
        #expect(trigger(harness, "first-event").status == 0)
        #expect(monitor.ended(2, timeout: 2) == 4_294_967_295)
        #expect(trigger(harness, "second-event").status == 0)
        #expect(monitor.ended(3, timeout: 5) == 0)
        let reloads = daemon.errors.components(separatedBy: "theme file changed").count
        _ = harness.directory.write(Array("{}".utf8), to: "other.json")
        usleep(500_000)
        #expect(daemon.errors.components(separatedBy: "theme file changed").count == reloads, "\(daemon.errors)")
        _ = harness.directory.write(Array("{ not json".utf8), to: "theme.json")
        if signalling { daemon.signal(SIGHUP) }
        #expect(
            daemon.waitForLog(containing: "\(said): cannot read the feedback theme, so the old one stays", timeout: 5), "\(daemon.errors)")
        #expect(trigger(harness, "second-event").status == 0)
        #expect(monitor.ended(4, timeout: 5) == 0)
    }

    @Test func profileStoredByAnotherProcessIsAnnounced() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let monitor = try harness.monitor()
        let environment = harness.environment().map { "\($0.key)=\($0.value)" }
        for profile in ["quiet", "silent", "full"] {
            #expect(runProcess(feedbackctlBinary, ["profile", profile], environment: environment).status == 0)
            #expect(
                monitor.process.waitForOutput(containing: "{'Profile': <'\(profile)'>}", timeout: 2) != nil,
                "\(profile): \(monitor.output)")
        }
        // Once per change: storing the same profile again announces nothing.
        #expect(runProcess(feedbackctlBinary, ["profile", "full"], environment: environment).status == 0)
        usleep(300_000)
        #expect(monitor.output.components(separatedBy: "{'Profile': <'full'>}").count == 2, "\(monitor.output)")
    }
}

/// Idle: after the idle timeout the daemon holds no stream open and its threads sleep.
extension FeedbackDaemonTests {
    /// The threads that woke between two `wakeUps` counts, each with how often ("tid name: N");
    /// a thread that started or ended meanwhile woke too.
    static func woke(between before: [String: Int], and after: [String: Int]) -> [String] {
        after.filter { before[$0.key] != $0.value }.map { "\($0.key): \($0.value - (before[$0.key] ?? 0))" }
            + before.keys.filter { after[$0] == nil }.map { "\($0): ended" }
    }

    /// The context switches (voluntary + involuntary: each one a wake-up) of every thread of
    /// `pid`, by "tid name".
    static func wakeUps(_ pid: Int32) -> [String: Int] {
        var counts: [String: Int] = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            let base = "/proc/\(pid)/task/\(task)"
            guard let status = try? String(contentsOfFile: "\(base)/status", encoding: .utf8) else { continue }
            let name = (try? String(contentsOfFile: "\(base)/comm", encoding: .utf8))?.filter { $0 != "\n" } ?? "?"
            counts["\(task) \(name)"] = status.split(separator: "\n").filter { $0.contains("ctxt_switches:") }
                .compactMap { Int($0.split(separator: "\t").last ?? "") }.reduce(0, +)
        }
        return counts
    }

    @Test func idleDaemonClosesItsStreamAndSleepsThenPlaysTheNextTrigger() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon(["--idle-timeout", "1"])
        let monitor = try harness.monitor()
        /// Triggers feedback `id` (button-pressed); returns seconds from the gdbus start to the first sample.
        func click(_ id: UInt32) throws -> Double {
            let start = recorder.frameCount
            let called = MonotonicClock.now
            #expect(
                harness.callFeedback(
                    "org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", "button-pressed", "{}", "-1"]
                ).status == 0)
            let heard = try #require(recorder.firstSound(after: start, timeout: 2).flatMap(recorder.arrivalTime(ofFrame:)))
            #expect(monitor.ended(id, timeout: 5) == 0)
            return heard - called
        }
        let warm = try click(1)
        // A timed feedback too (from a client that stays: one that leaves ends it at once): its
        // timeout is a timer of the bus loop, which must not wake the daemon later.
        let timed = try harness.python("hold", "button-pressed", "1", holdStdin: true)
        let line = try #require(timed.waitForOutput(containing: "id ", timeout: 10), "\(timed.errors)")
        #expect(monitor.ended(try #require(UInt32(line.dropFirst(3))), timeout: 3) == FeedbackEndReason.expired.rawValue)
        timed.closeStdin()
        timed.wait(timeout: 5)
        // The stream closes a second after the sound; the play's own threads have ended long before.
        usleep(4_000_000)
        let inputs = runProcess("/usr/bin/pactl", ["list", "short", "sink-inputs"], environment: ["PULSE_SERVER=\(pulse.server)"])
        #expect(inputs.output.isEmpty, "the stream is still open: \(inputs.output)")
        // Every thread, libdispatch's too: the daemon never starts a Dispatch worker, so its 1 Hz
        // workqueue monitor (src/event/workqueue.c, `_dispatch_workq_init_once`) never runs.
        let before = Self.wakeUps(daemon.pid)
        // A program that connects to the bus meanwhile (and stays) does not wake it either: the
        // daemon hears only of clients that leave (`NameOwnerChanged` with `arg2=''`).
        let newcomer = try ChildProcess(
            DaemonTools.gdbus, ["wait", "--session", "--timeout", "10", "org.example.NobodyOwnsThis"],
            environment: harness.environment())
        defer {
            newcomer.signal(SIGTERM)
            _ = newcomer.wait(timeout: 5)
        }
        usleep(3_000_000)
        let after = Self.wakeUps(daemon.pid)
        let woke = Self.woke(between: before, and: after)
        #expect(woke.isEmpty, "wake-ups while idle: \(woke.sorted())")
        print("idle daemon: \(woke.count) of \(after.count) threads woke in 3 s (\(after.keys.sorted().joined(separator: ", ")))")
        // The first trigger after idle still plays; how long it took, beside the first one (the
        // stream opened at start), both from the start of a gdbus process to the first sample.
        let cold = try click(3)
        print("idle daemon: gdbus call → first sample \(Int(warm * 1000)) ms with the stream open, \(Int(cold * 1000)) ms after idle (stream reopened)")
    }
}
