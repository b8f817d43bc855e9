import FeedbackBus
@testable import FeedbackDaemon
import FeedbackServices
import FeedbackTestSupport
import FoundationEssentials
import Glibc
import Testing

/// org.feedbackservices.SystemSounds1 as clients use it: feedbackservicesd started by hand on a
/// private bus, called from GIO in /usr/bin/python3 (`SystemSoundsClient`) and gdbus, its sound
/// checked at the monitor of a PulseAudio of this suite's own. Serialized: the tests share the
/// recording.
@Suite(.serialized, .enabled(if: DaemonTools.shouldRun))
struct SystemSoundsTests {
    let pulse: PulseAudioTestServer

    init() throws {
        pulse = try PulseAudioTestServer.shared(named: "sounds1")
    }

    private var recorder: MonitorRecorder { pulse.recorder }

    /// A `seconds`-long 440 Hz tone, 16-bit WAV, `channels` channels, in the harness's directory.
    private func tone(_ harness: DaemonHarness, _ name: String, seconds: Double, channels: Int = 1) throws -> String {
        let frames = Int(48_000 * seconds)
        var samples: [Float] = []
        samples.reserveCapacity(frames * channels)
        for frame in 0..<frames {
            let value = Float(0.5 * sin(2 * Double.pi * 440 * Double(frame) / 48_000))
            for _ in 0..<channels { samples.append(value) }
        }
        let buffer = try SoundDecoder(maximumDuration: nil).decode(
            samples: samples, sampleRate: 48_000, channelCount: channels)
        let path = harness.directory.file(name)
        try SoundFileWriter.write(buffer, to: path, format: .wav16)
        return path
    }

    private func client(_ harness: DaemonHarness, _ commands: String..., holdStdin: Bool = false) throws -> ChildProcess {
        try ChildProcess(
            DaemonTools.python, ["-u", "-c", SystemSoundsClient.script] + commands, environment: harness.environment(),
            holdStdin: holdStdin)
    }

    /// Runs a client to its end and returns its output lines.
    private func run(_ harness: DaemonHarness, _ commands: String...) throws -> [Substring] {
        let process = try ChildProcess(
            DaemonTools.python, ["-u", "-c", SystemSoundsClient.script] + commands, environment: harness.environment())
        #expect(process.wait(timeout: 30) == 0, "\(process.errors)")
        return process.output.split(separator: "\n")
    }

    private func gdbusCall(_ harness: DaemonHarness, _ method: String, _ arguments: String...) -> ProcessResult {
        runProcess(
            DaemonTools.gdbus,
            [
                "call", "--session", "--dest", SystemSounds1.busName, "--object-path", SystemSounds1.objectPath,
                "--method", "\(SystemSounds1.interface).\(method)", "--",
            ] + arguments, environment: harness.environment().map { "\($0.key)=\($0.value)" })
    }

    private static func endings(_ lines: [Substring], play: String) -> [Substring] {
        lines.filter { $0.hasPrefix("ended \(play) ") }
    }

    private static func value(_ lines: [Substring], _ key: String) -> String? {
        lines.first { $0.hasPrefix("\(key) ") }.map { String($0.dropFirst(key.count + 1)) }
    }

    @Test func servedIntrospectionIsTheShippedXML() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        #expect(harness.ownerPID(of: SystemSounds1.busName) == harness.daemon?.pid)
        let served = harness.gdbus(
            "introspect", "--session", "--xml", "--dest", SystemSounds1.busName, "--object-path",
            SystemSounds1.objectPath)
        try #require(served.status == 0, "\(served.errors)")
        var root = "\(#filePath)"
        for _ in 0..<3 { root = String(root[..<root.lastIndex(of: "/")!]) }
        let shipped = try String(
            contentsOfFile: "\(root)/share/dbus-1/interfaces/org.feedbackservices.SystemSounds1.xml", encoding: .utf8)
        let members = Self.members(of: SystemSounds1.interface, in: shipped)
        #expect(!members.isEmpty)
        #expect(Self.members(of: SystemSounds1.interface, in: served.output) == members)
    }

    /// The members of `interface` in introspection XML, each tag as "kind attribute=value …" with
    /// the attributes sorted, comments left out.
    static func members(of interface: String, in xml: String) -> [String] {
        guard let start = xml.firstRange(of: "<interface name=\"\(interface)\">"),
            let end = xml[start.upperBound...].firstRange(of: "</interface>")
        else { return [] }
        var text = String(xml[start.upperBound..<end.lowerBound])
        while let open = text.firstRange(of: "<!--"), let close = text[open.upperBound...].firstRange(of: "-->") {
            text.removeSubrange(open.lowerBound..<close.upperBound)
        }
        return text.split(separator: "<").compactMap { tag -> String? in
            guard !tag.hasPrefix("/") else { return nil }
            let body = tag.split(separator: ">").first.map(String.init) ?? ""
            let words = body.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "/" })
            guard let kind = words.first, ["method", "signal", "property", "arg"].contains(String(kind)) else { return nil }
            // Annotations (sd-bus adds some) are not members: compared are names, types, directions, access.
            let attributes = words.dropFirst().map(String.init).sorted()
            return ([String(kind)] + attributes).joined(separator: " ")
        }
    }

    @Test func playFinishesWithExactlyOnePlayEnded() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let start = recorder.frameCount
        let lines = try run(harness, "play", "1007", "wait", "3")
        let play = try #require(Self.value(lines, "play"), "\(lines)")
        #expect(Self.endings(lines, play: play) == ["ended \(play) finished played"], "\(lines)")
        #expect(recorder.firstSound(after: start, timeout: 1) != nil, "nothing reached the sound server")
    }

    @Test func playEventWithOptionsPlays() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let start = recorder.frameCount
        let lines = try run(harness, "event", "message-new-instant", "volume=0.5", "pan=-1", "wait", "3")
        let play = try #require(Self.value(lines, "play"), "\(lines)")
        #expect(Self.endings(lines, play: play) == ["ended \(play) finished played"], "\(lines)")
        let onset = try #require(recorder.firstSound(after: start, timeout: 1))
        // Panned hard left: the right channel stays silent.
        let right = recorder.channel(1, from: onset).prefix(PulseAudioTestServer.rate / 10)
        #expect(right.allSatisfy { abs($0) < 0.01 })
    }

    @Test func stopEndsThePlayStoppedOnceAndSilences() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let long = try tone(harness, "long.wav", seconds: 3)
        try harness.startDaemon()
        let start = recorder.frameCount
        let lines = try run(harness, "register", long, "play", "last-id", "wait", "0.5", "stop", "last", "wait", "1.5")
        let play = try #require(Self.value(lines, "play"), "\(lines)")
        #expect(Self.endings(lines, play: play) == ["ended \(play) stopped stop"], "\(lines)")
        let onset = try #require(recorder.firstSound(after: start, timeout: 1))
        let last = try #require(recorder.lastSound(from: onset, before: recorder.frameCount))
        #expect(last - onset < PulseAudioTestServer.rate, "it played on after Stop")
    }

    @Test func stopAllStopsOnlyTheCallersPlays() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let long = try tone(harness, "long.wav", seconds: 3)
        try harness.startDaemon()
        let other = try client(harness, "register", long, "play", "last-id", "wait", "2.5")
        let lines = try run(harness, "register", long, "play", "last-id", "play", "last-id", "wait", "0.3", "stopall", "wait", "1")
        #expect(Self.value(lines, "stopped") == "2", "\(lines)")
        #expect(lines.filter { $0.hasPrefix("ended ") && $0.hasSuffix(" stopped stop") }.count == 2, "\(lines)")
        #expect(other.wait(timeout: 10) == 0)
        let otherLines = other.output.split(separator: "\n")
        let otherPlay = try #require(Self.value(otherLines, "play"))
        // The other client's sound played on (3 s): it had not ended when it stopped waiting.
        #expect(Self.endings(otherLines, play: otherPlay).isEmpty, "\(otherLines)")
    }

    @Test func aFireAndForgetPlayOutlivesItsClient() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let start = recorder.frameCount
        // gdbus leaves the bus as soon as the reply comes.
        let reply = gdbusCall(harness, "Play", "1007", "{}")
        #expect(reply.output == "(uint32 1,)\n", "\(reply.errors)")
        let onset = try #require(recorder.firstSound(after: start, timeout: 2))
        recorder.wait(seconds: 1)
        let last = try #require(recorder.lastSound(from: onset, before: recorder.frameCount))
        #expect(last - onset > PulseAudioTestServer.rate / 4, "it was cut when its client left")
    }

    @Test func sigtermEndsEveryPlayStoppedOnce() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let long = try tone(harness, "long.wav", seconds: 3)
        let daemon = try harness.startDaemon()
        let owner = try client(harness, "register", long, "play", "last-id", "wait", "3")
        let line = try #require(owner.waitForOutput(containing: "play ", timeout: 10), "\(owner.errors)")
        let play = String(line.dropFirst(5))
        usleep(300_000)
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 3) == 0, "\(daemon.errors)")
        #expect(access(harness.directory.file("feedbackservicesd.pid"), F_OK) != 0, "the PID file outlived the service")
        #expect(owner.wait(timeout: 10) == 0)
        let lines = owner.output.split(separator: "\n")
        #expect(Self.endings(lines, play: play) == ["ended \(play) stopped service-stopping"], "\(lines)")
    }

    @Test func failedPlayEndsFailedOnceWithTheReason() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon(environment: ["PULSE_SERVER": "unix:\(harness.directory.file("no-server"))"])
        let lines = try run(harness, "play", "1007", "wait", "8")
        let play = try #require(Self.value(lines, "play"), "\(lines)")
        let endings = Self.endings(lines, play: play)
        #expect(endings.count == 1, "\(lines)")
        #expect(endings.first?.hasPrefix("ended \(play) failed no-audio-output: ") == true, "\(lines)")
    }

    @Test func anotherClientsStopIsRefused() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let long = try tone(harness, "long.wav", seconds: 3)
        try harness.startDaemon()
        let owner = try client(harness, "register", long, "play", "last-id", "hold", holdStdin: true)
        let line = try #require(owner.waitForOutput(containing: "play ", timeout: 10), "\(owner.errors)")
        let play = String(line.dropFirst(5))
        let refused = gdbusCall(harness, "Stop", play)
        #expect(refused.status != 0)
        #expect(refused.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(refused.errors)")
        let stopAll = gdbusCall(harness, "StopAll")
        #expect(stopAll.output == "(uint32 0,)\n", "\(stopAll.errors)")
        owner.closeStdin()
        #expect(owner.wait(timeout: 10) == 0)
    }

    @Test func vibrateNeedsAVibratorAndAPatternThatVibrates() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon()
        // This machine has no vibrator: refused in the reply, with one log line.
        let refused = gdbusCall(harness, "Vibrate", "[(1.0, 200), (0.0, 50), (0.5, 300)]", "{}")
        #expect(refused.errors.contains("org.feedbackservices.SystemSounds1.Error.NoVibrator"), "\(refused.errors)")
        #expect(daemon.waitForLog(containing: "Vibrate (client ", timeout: 2), "\(daemon.errors)")
        for (pattern, options) in [
            ("@a(du) []", "{}"), ("[(0.0, 200)]", "{}"), ("[(1.0, 20000)]", "{}"), ("[(1.5, 100)]", "{}"),
            (Self.repeated("(1.0, 10000)", 7), "{}"), ("[(1.0, 100)]", "{'volume': <1.0>}"), ("[(1.0, 100)]", "{'detached': <''>}"),
        ] {
            let reply = gdbusCall(harness, "Vibrate", pattern, options)
            #expect(reply.errors.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(pattern) \(options): \(reply.errors)")
        }
        #expect(gdbusCall(harness, "ListSounds").status == 0)
    }

    /// PlayPattern: an AHAP file's two sounds as one play, 0.2 s apart at the monitor to the frame,
    /// ending `finished played` once; with a haptic tap on a machine with no vibrator the sounds
    /// still play (the vibration part reports no vibrator, the play is still `played`); refusals.
    @Test func playPatternPlaysTheSoundsAsOnePlay() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try writeClick(to: harness.directory.file("click.wav"))
        let pattern = harness.directory.file("pattern.ahap")
        _ = FileManager.default.createFile(
            atPath: pattern,
            contents: Data(
                #"""
                { "Version": 1.0, "Pattern": [
                  { "Event": { "Time": 0, "EventType": "HapticTransient" } },
                  { "Event": { "Time": 0, "EventType": "AudioCustom", "EventWaveformPath": "click.wav" } },
                  { "Event": { "Time": 0.2, "EventType": "AudioCustom", "EventWaveformPath": "click.wav",
                      "EventParameters": [ { "ParameterID": "AudioPan", "ParameterValue": -1 } ] } } ] }
                """#.utf8))
        let broken = harness.directory.file("broken.ahap")
        _ = FileManager.default.createFile(
            atPath: broken, contents: Data(#"{ "Pattern": [ { "Event": { "Time": 0, "EventType": "HapticBuzz" } } ] }"#.utf8))
        let tapOnly = harness.directory.file("tap.ahap")
        _ = FileManager.default.createFile(
            atPath: tapOnly, contents: Data(#"{ "Pattern": [ { "Event": { "Time": 0, "EventType": "HapticTransient" } } ] }"#.utf8))
        try harness.startDaemon()
        let start = recorder.frameCount
        let lines = try run(harness, "pattern", pattern, "volume=0.5", "wait", "3")
        let play = try #require(Self.value(lines, "play"), "\(lines)")
        #expect(Self.endings(lines, play: play) == ["ended \(play) finished played"], "\(lines)")
        let first = try expectTwoClicks(at: recorder, after: start)
        #expect(abs(recorder.channel(0, from: first, frames: 100..<200).max()! - 0.25) < 0.01, "half volume")

        let refused = try run(harness, "pattern", broken, "pattern", "relative.ahap", "pattern", tapOnly, "pattern", pattern, "alert=true")
        #expect(refused.count == 4, "\(refused)")
        #expect(refused[0].hasPrefix("error org.feedbackservices.SystemSounds1.Error.BadSound") && refused[0].contains("HapticBuzz"), "\(refused)")
        #expect(refused[1].hasPrefix("error org.freedesktop.DBus.Error.InvalidArgs"), "\(refused)")
        #expect(refused[2].hasPrefix("error org.feedbackservices.SystemSounds1.Error.NoVibrator"), "\(refused)")
        #expect(refused[3].hasPrefix("error org.freedesktop.DBus.Error.InvalidArgs") && refused[3].contains("alert"), "\(refused)")
    }

    /// PlayPatternFD: our own form read from a passed descriptor, its sounds by absolute path and
    /// by ID, played as one at the monitor; what it refuses (a relative sound file, a descriptor
    /// that is no regular file) is refused before anything plays.
    @Test func playPatternFDPlaysAPassedPattern() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let clickPath = harness.directory.file("click.wav")
        try writeClick(to: clickPath)
        let pattern = harness.directory.file("pattern.json")
        _ = FileManager.default.createFile(
            atPath: pattern,
            contents: Data(
                #"""
                { "events": [ { "type": "sound", "time": 0, "file": "\#(clickPath)" },
                              { "type": "sound", "time": 0.2, "file": "\#(clickPath)", "pan": -1 } ] }
                """#.utf8))
        let relative = harness.directory.file("relative.json")
        _ = FileManager.default.createFile(
            atPath: relative, contents: Data(#"{ "events": [ { "type": "sound", "time": 0, "file": "click.wav" } ] }"#.utf8))
        try harness.startDaemon()
        let start = recorder.frameCount
        let lines = try run(harness, "pattern-fd", pattern, "wait", "3")
        let play = try #require(Self.value(lines, "play"), "\(lines)")
        #expect(Self.endings(lines, play: play) == ["ended \(play) finished played"], "\(lines)")
        try expectTwoClicks(at: recorder, after: start)

        let refused = try run(harness, "pattern-fd", relative, "pattern-fd", "/dev/null")
        #expect(refused.count == 2, "\(refused)")
        #expect(
            refused[0].hasPrefix("error org.feedbackservices.SystemSounds1.Error.BadSound") && refused[0].contains("is relative"),
            "\(refused)")
        #expect(refused[1].hasPrefix("error org.freedesktop.DBus.Error.InvalidArgs") && refused[1].contains("not a regular file"), "\(refused)")
    }

    private static func repeated(_ step: String, _ count: Int) -> String {
        "[" + Array(repeating: step, count: count).joined(separator: ", ") + "]"
    }

    @Test func stopDetachedStopsTheUsersDetachedPlaysOfTheGroupOnly() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let long = try tone(harness, "long.wav", seconds: 3)
        try harness.startDaemon()
        // A fire-and-forget client: its detached play runs on after it left.
        let started = try run(harness, "register", long, "play", "last-id", "detached=feedbackctl")
        let id = try #require(Self.value(started, "id"), "\(started)")
        let detached = try #require(Self.value(started, "play"), "\(started)")
        // Two that stay: one without the option, one of another group.
        let plain = try client(harness, "play", id, "wait", "2.5")
        let otherGroup = try client(harness, "play", id, "detached=org.example.Other", "wait", "2.5")
        #expect(plain.waitForOutput(containing: "play ", timeout: 10) != nil && otherGroup.waitForOutput(containing: "play ", timeout: 10) != nil)
        let stopped = gdbusCall(harness, "StopDetached", "feedbackctl")
        #expect(stopped.output == "([(uint32 \(detached), 'sound \(id)')],)\n", "\(stopped.output) \(stopped.errors)")
        #expect(gdbusCall(harness, "StopDetached", "feedbackctl").output == "(@a(us) [],)\n")
        // The others played on: they had not ended when they stopped waiting.
        for other in [plain, otherGroup] {
            #expect(other.wait(timeout: 10) == 0)
            let lines = other.output.split(separator: "\n")
            let play = try #require(Self.value(lines, "play"), "\(lines)")
            #expect(Self.endings(lines, play: play).isEmpty, "\(lines)")
        }
    }

    @Test func stopDetachedOfAnotherUserReachesNothingOfThisOne() throws {
        let harness = try DaemonHarness(pulse: pulse, otherUsers: true)
        // The other user must reach the bus's socket in the harness's directory.
        chmod(harness.directory.path, 0o711)
        let long = try tone(harness, "long.wav", seconds: 3)
        try harness.startDaemon()
        let mine = try run(harness, "register", long, "play", "last-id", "detached=feedbackctl")
        let id = try #require(Self.value(mine, "id"), "\(mine)")
        let play = try #require(Self.value(mine, "play"), "\(mine)")
        // nobody's StopDetached of the same group stops nobody's own detached play, not this user's.
        var environment = harness.environment()
        environment["HOME"] = "/nonexistent"
        let nobody = try ChildProcess(
            "/usr/bin/setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", DaemonTools.python, "-u", "-c", SystemSoundsClient.script]
                + ["play", "1007", "detached=feedbackctl", "stopdetached", "feedbackctl", "wait", "1"],
            environment: environment)
        #expect(nobody.wait(timeout: 30) == 0, "\(nobody.errors)")
        let lines = nobody.output.split(separator: "\n")
        let own = try #require(Self.value(lines, "play"), "\(lines) \(nobody.errors)")
        #expect(Self.value(lines, "detached-stopped") == "\(own):sound 1007", "\(lines)")
        #expect(Self.endings(lines, play: own) == ["ended \(own) stopped stop"], "\(lines)")
        let stopped = gdbusCall(harness, "StopDetached", "feedbackctl")
        #expect(stopped.output == "([(uint32 \(play), 'sound \(id)')],)\n", "\(stopped.output) \(stopped.errors)")
    }

    @Test func registerFDSoundIsTheClientsOwnAndVanishesWhenItLeaves() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let short = try tone(harness, "short.wav", seconds: 0.3)
        try harness.startDaemon()
        let owner = try client(harness, "register-fd", short, "beep", "list", "play", "last-id", "wait", "1", "hold", holdStdin: true)
        let line = try #require(owner.waitForOutput(containing: "ended ", timeout: 10), "\(owner.errors)")
        #expect(line.hasSuffix(" finished played"))
        let lines = owner.output.split(separator: "\n")
        let id = try #require(Self.value(lines, "id").flatMap(UInt32.init))
        #expect(SoundIDRange(id) == .service)
        #expect(lines.contains("sound \(id) beep 0.3"), "\(lines)")
        // Another client may neither play nor remove it, nor see it.
        let play = gdbusCall(harness, "Play", "\(id)", "{}")
        #expect(play.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(play.errors)")
        let unregister = gdbusCall(harness, "Unregister", "\(id)")
        #expect(unregister.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(unregister.errors)")
        #expect(!gdbusCall(harness, "ListSounds").output.contains("\(id)"))
        owner.closeStdin()
        #expect(owner.wait(timeout: 10) == 0)
        // Its owner left: the sound is gone.
        let deadline = MonotonicClock.now + 5
        var after = gdbusCall(harness, "Play", "\(id)", "{}")
        while after.errors.contains("AccessDenied") && MonotonicClock.now < deadline {
            usleep(20_000)
            after = gdbusCall(harness, "Play", "\(id)", "{}")
        }
        #expect(after.errors.contains("org.feedbackservices.SystemSounds1.Error.NoSuchSound"), "\(after.errors)")
    }

    @Test func registerFDBytesPerClientAreLimited() throws {
        let harness = try DaemonHarness(pulse: pulse)
        // 25 s of 48 kHz stereo float is 9.6 MB decoded: the second one goes over 16 MiB.
        let big = try tone(harness, "big.wav", seconds: 25, channels: 2)
        try harness.startDaemon()
        let lines = try run(harness, "register-fd", big, "one", "register-fd", big, "two")
        #expect(lines.filter { $0.hasPrefix("id ") }.count == 1, "\(lines)")
        let error = try #require(lines.first { $0.hasPrefix("error ") }, "\(lines)")
        #expect(error.contains("org.freedesktop.DBus.Error.LimitsExceeded"))
        #expect(error.contains("bytes per client"))
    }

    @Test func aFloodOfPlaysIsRefusedByALimitAndTheServiceGoesOn() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let started = MonotonicClock.now
        let lines = try run(harness, "flood", "button-pressed", "200")
        let elapsed = MonotonicClock.now - started
        let accepted = try #require(Self.value(lines, "ok").flatMap(Int.init), "\(lines)")
        // At most the burst (40) or the plays one client may have at once (32), whichever came first,
        // plus what the rate (20 a second) gave back while the flood lasted (longer on a busy machine).
        #expect(accepted >= 32 && accepted <= 41 + Int(20 * elapsed), "\(lines) in \(elapsed) s")
        #expect(lines.contains { $0.contains("org.freedesktop.DBus.Error.LimitsExceeded") }, "\(lines)")
        // Another client is not held back by it.
        #expect(gdbusCall(harness, "ListSounds").status == 0)
        let other = try run(harness, "play", "1007", "wait", "2")
        #expect(Self.value(other, "play") != nil, "\(other)")
    }

    @Test func triggerBudgetsRefillAtTheirRateUpToTheBurst() {
        var budgets = TriggerBudgets(rate: 10, burst: 3)
        #expect((0..<4).map { _ in budgets.take(":1.1", now: 0) } == [true, true, true, false])
        let other = budgets.take(":1.2", now: 0)
        #expect(other, "each client has its own bucket")
        let tooSoon = budgets.take(":1.1", now: 0.05)
        let refilled = budgets.take(":1.1", now: 0.15)
        #expect(!tooSoon && refilled)
        // A long quiet spell refills to the burst, not beyond.
        #expect((0..<4).map { _ in budgets.take(":1.1", now: 100) } == [true, true, true, false])
        budgets.forget(":1.1")
        let fresh = budgets.take(":1.1", now: 100)
        #expect(fresh, "a forgotten client starts full")
    }

    @Test func registerSetVolumeListUnregisterUseThePersistentRegistry() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let path = try tone(harness, "ding.wav", seconds: 0.5)
        try harness.startDaemon()
        let lines = try run(harness, "register", path, "volume", "last-id", "0.5", "list")
        let id = try #require(Self.value(lines, "id"), "\(lines)")
        #expect(UInt32(id).map(SoundIDRange.init) == .persistent)
        #expect(lines.contains("volume ok"), "\(lines)")
        #expect(lines.contains("sound \(id) \(path) 0.5"), "\(lines)")
        // The same registry file feedbackctl uses: it sees the sound and its new level.
        let listed = runProcess(
            builtProduct("feedbackctl"), ["list", "--json"],
            environment: harness.environment().map { "\($0.key)=\($0.value)" })
        #expect(listed.output.contains(path), "\(listed.output) \(listed.errors)")
        #expect(gdbusCall(harness, "Unregister", id).status == 0)
        #expect(!gdbusCall(harness, "ListSounds").output.contains(path))
        let relative = gdbusCall(harness, "Register", "ding.wav")
        #expect(relative.errors.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(relative.errors)")
    }

    @Test func badRequestsAreRefusedWithNamedErrors() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let option = gdbusCall(harness, "Play", "1007", "{'loudness': <1.0>}")
        #expect(option.errors.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(option.errors)")
        let volume = gdbusCall(harness, "Play", "1007", "{'volume': <9.0>}")
        #expect(volume.errors.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(volume.errors)")
        let unknown = gdbusCall(harness, "Play", "4097", "{}")
        #expect(unknown.errors.contains("org.feedbackservices.SystemSounds1.Error.NoSuchSound"), "\(unknown.errors)")
        let event = gdbusCall(harness, "PlayEvent", "no-such-event-anywhere", "{}")
        #expect(event.errors.contains("org.feedbackservices.SystemSounds1.Error.NoSuchSound"), "\(event.errors)")
        let local = gdbusCall(harness, "Play", "1000001", "{}")
        #expect(local.errors.contains("org.feedbackservices.SystemSounds1.Error.NoSuchSound"), "\(local.errors)")
        let escape = gdbusCall(harness, "PlayEvent", "../../etc/passwd", "{}")
        #expect(escape.status != 0, "\(escape.output)")
        let state = harness.gdbus(
            "call", "--session", "--dest", SystemSounds1.busName, "--object-path", SystemSounds1.objectPath,
            "--method", "org.freedesktop.DBus.Properties.Get", SystemSounds1.interface, "Profile")
        #expect(state.output == "(<'full'>,)\n", "\(state.errors)")
        // It still serves.
        #expect(gdbusCall(harness, "ListSounds").status == 0)
    }
}

/// A client of org.feedbackservices.SystemSounds1 written with GIO, as apps use it. Its arguments
/// are commands run in order: `play ID|last-id [key=value…]`, `event NAME [key=value…]`, `pattern
/// PATH [key=value…]`, `pattern-fd PATH [key=value…]` (the file passed open) (prints `play N`; a value is a boolean, a number or else a string), `stop N|last`, `stopall` (prints
/// `stopped N`), `stopdetached GROUP` (prints `detached-stopped PLAY:WHAT…`), `register PATH`, `register-fd PATH NAME`
/// (print `id N`), `volume ID|last-id LEVEL` (prints `volume ok`), `list` (prints `sound ID NAME
/// SECONDS` per sound), `wait SECONDS` (runs the loop: each `PlayEnded` prints `ended PLAY HOW WHY`),
/// `hold` (runs the loop until its standard input closes). A refused call prints `error NAME MESSAGE`.
enum SystemSoundsClient {
    static let script = """
        import sys, os, time, threading
        from gi.repository import Gio, GLib
        NAME = 'org.feedbackservices.SystemSounds1'
        PATH = '/org/feedbackservices/SystemSounds1'
        bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
        def on_signal(conn, sender, path, iface, member, params):
            play, how, why = params.unpack()
            print('ended', play, how, why, flush=True)
        bus.signal_subscribe(None, NAME, 'PlayEnded', PATH, None, Gio.DBusSignalFlags.NONE, on_signal)
        def call(method, signature=None, args=None, fds=None):
            try:
                parameters = GLib.Variant(signature, args) if signature else None
                if fds is not None:
                    reply, _ = bus.call_with_unix_fd_list_sync(NAME, PATH, NAME, method, parameters, None,
                        Gio.DBusCallFlags.NONE, -1, Gio.UnixFDList.new_from_array(fds), None)
                else:
                    reply = bus.call_sync(NAME, PATH, NAME, method, parameters, None, Gio.DBusCallFlags.NONE, -1, None)
                return reply.unpack()
            except GLib.Error as error:
                print('error', Gio.DBusError.get_remote_error(error), error.message, flush=True)
                return None
        def pump(seconds):
            context = GLib.MainContext.default()
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                if not context.iteration(False):
                    time.sleep(0.005)
        def options(words):
            result = {}
            for word in words:
                key, value = word.split('=')
                if value in ('true', 'false'):
                    result[key] = GLib.Variant('b', value == 'true')
                else:
                    try:
                        result[key] = GLib.Variant('d', float(value))
                    except ValueError:
                        result[key] = GLib.Variant('s', value)
            return result
        args, last_id, last_play = sys.argv[1:], None, None
        i = 0
        def take():
            global i
            i += 1
            return args[i - 1]
        def extra():
            words = []
            while i < len(args) and '=' in args[i]:
                words.append(take())
            return words
        while i < len(args):
            command = take()
            if command in ('play', 'event', 'pattern', 'pattern-fd'):
                target = take()
                if command == 'play':
                    reply = call('Play', '(ua{sv})', (last_id if target == 'last-id' else int(target), options(extra())))
                elif command == 'pattern':
                    reply = call('PlayPattern', '(sa{sv})', (target, options(extra())))
                elif command == 'pattern-fd':
                    reply = call('PlayPatternFD', '(ha{sv})', (0, options(extra())), fds=[os.open(target, os.O_RDONLY)])
                else:
                    reply = call('PlayEvent', '(sa{sv})', (target, options(extra())))
                if reply is not None:
                    last_play = reply[0]
                    print('play', last_play, flush=True)
            elif command == 'stop':
                target = take()
                call('Stop', '(u)', (last_play if target == 'last' else int(target),))
            elif command == 'stopdetached':
                reply = call('StopDetached', '(s)', (take(),))
                if reply is not None: print('detached-stopped', ' '.join('%d:%s' % row for row in reply[0]), flush=True)
            elif command == 'stopall':
                reply = call('StopAll')
                if reply is not None: print('stopped', reply[0], flush=True)
            elif command == 'register':
                reply = call('Register', '(s)', (take(),))
                if reply is not None:
                    last_id = reply[0]
                    print('id', last_id, flush=True)
            elif command == 'register-fd':
                path, name = take(), take()
                reply = call('RegisterFD', '(hs)', (0, name), fds=[os.open(path, os.O_RDONLY)])
                if reply is not None:
                    last_id = reply[0]
                    print('id', last_id, flush=True)
            elif command == 'volume':
                target, level = take(), float(take())
                if call('SetVolume', '(ud)', (last_id if target == 'last-id' else int(target), level)) is not None:
                    print('volume ok', flush=True)
            elif command == 'list':
                reply = call('ListSounds')
                for (sound, name, seconds) in (reply[0] if reply else []):
                    print('sound', sound, name, round(seconds, 3), flush=True)
            elif command == 'flood':
                event, count, ok, errors = take(), int(take()), 0, {}
                for _ in range(count):
                    try:
                        bus.call_sync(NAME, PATH, NAME, 'PlayEvent', GLib.Variant('(sa{sv})', (event, {})), None,
                            Gio.DBusCallFlags.NONE, -1, None)
                        ok += 1
                    except GLib.Error as error:
                        errors[error.message.split(': client')[0]] = 1
                print('ok', ok, flush=True)
                for line in errors:
                    print('error', line, flush=True)
            elif command == 'wait':
                pump(float(take()))
            elif command == 'hold':
                closed = threading.Event()
                threading.Thread(target=lambda: (sys.stdin.read(), closed.set()), daemon=True).start()
                while not closed.is_set():
                    pump(0.05)
        """
}

/// feedbackctl as the service's client: the real binary on the suite's private bus, with the
/// service running (it plays) and without it or with --no-daemon (the command plays). Serialized,
/// with its own PulseAudio: the tests share its recording.
@Suite(.serialized, .enabled(if: DaemonTools.shouldRun))
struct FeedbackctlThroughTheServiceTests {
    let pulse: PulseAudioTestServer

    init() throws {
        pulse = try PulseAudioTestServer.shared(named: "sounds1-cli")
    }

    private var recorder: MonitorRecorder { pulse.recorder }

    private func feedbackctl(_ harness: DaemonHarness, _ arguments: [String], _ extra: [String: String] = [:]) -> ProcessResult {
        runProcess(builtProduct("feedbackctl"), arguments, environment: harness.environment(extra).map { "\($0.key)=\($0.value)" })
    }

    @Test func describeSaysWhatPlayWouldPlayAndRefusesWhatPlayRefuses() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let sound = describe(harness, "Describe", "1007")
        #expect(sound.status == 0, "\(sound.errors)")
        #expect(sound.output.contains("'content': <'sound'>"), "\(sound.output)")
        #expect(sound.output.contains("'file': <'/"), "\(sound.output)")
        #expect(sound.output.contains("'duration': <"), "\(sound.output)")
        let vibration = describe(harness, "Describe", "4095")
        #expect(vibration.output.contains("'content': <'vibration-only'>"), "\(vibration.output) \(vibration.errors)")
        let event = describe(harness, "DescribeEvent", "message-new-instant")
        #expect(event.output.contains("'event': <'message-new-instant'>"), "\(event.output) \(event.errors)")
        for (method, argument) in [("Describe", "999"), ("DescribeEvent", "no-such-event-anywhere"), ("Describe", "1000000")] {
            let refused = describe(harness, method, argument)
            #expect(refused.status != 0)
            #expect(refused.errors.contains("org.feedbackservices.SystemSounds1.Error.NoSuchSound"), "\(method) \(argument): \(refused.errors)")
        }
        let empty = describe(harness, "DescribeEvent", "")
        #expect(empty.errors.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(empty.errors)")
    }

    /// Through the service, `fire --json` reports the sound the service played, as the service
    /// found it: the command looks nothing up. A sound theme only the command's environment sees
    /// (its own XDG_DATA_HOME) names another file in process, and not through the service.
    @Test func fireJSONThroughTheServiceIsTheServicesAccount() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let plain = feedbackctl(harness, ["fire", "1007", "--json", "--no-daemon"])
        try #require(plain.status == 0, "\(plain.errors)")
        struct Report: Decodable { let event: String?, file: String? }
        let report = try JSONDecoder().decode(Report.self, from: Data(plain.output.utf8))
        let event = try #require(report.event, "\(plain.output)")
        let file = try #require(report.file, "\(plain.output)")
        let data = harness.directory.file("command-data")
        // The theme's directory of the same name (…/<theme>/stereo/<event>.<ext>), with its index.
        let parts = file.split(separator: "/")
        let theme = String(parts[parts.count - 3])
        let shipped = "/" + parts.dropLast(2).joined(separator: "/")
        let directory = "\(data)/sounds/\(theme)"
        let own = "\(directory)/stereo/\(event).\(file.split(separator: ".").last!)"
        try FileManager.default.createDirectory(atPath: "\(directory)/stereo", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: "\(shipped)/index.theme", toPath: "\(directory)/index.theme")
        try FileManager.default.copyItem(atPath: file, toPath: own)
        let environment = ["XDG_DATA_HOME": data]
        let inProcess = feedbackctl(harness, ["fire", "1007", "--json", "--no-daemon"], environment)
        #expect(inProcess.output.contains(own), "the command's own theme is not its own: \(inProcess.output) \(inProcess.errors)")
        let throughService = feedbackctl(harness, ["fire", "1007", "--json"], environment)
        #expect(throughService.status == 0, "\(throughService.errors)")
        #expect(throughService.output == plain.output, "\(throughService.output) | \(plain.output)")
    }

    private func describe(_ harness: DaemonHarness, _ method: String, _ argument: String) -> ProcessResult {
        harness.gdbus(
            "call", "--session", "--dest", SystemSounds1.busName, "--object-path", SystemSounds1.objectPath,
            "--method", "\(SystemSounds1.interface).\(method)", "--", argument)
    }

    @Test func fireThroughTheServiceIsPlayedByTheService() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        // The command itself cannot reach a sound server: what is heard, the service played.
        let deaf = ["PULSE_SERVER": "unix:\(harness.directory.file("no-server"))"]
        let start = recorder.frameCount
        let fired = feedbackctl(harness, ["fire", "1007"], deaf)
        #expect(fired.status == 0, "\(fired.errors)")
        #expect(fired.output.isEmpty && fired.errors.isEmpty, "\(fired.output) \(fired.errors)")
        #expect(recorder.firstSound(after: start, timeout: 1) != nil, "nothing reached the sound server")
        // The whole sound played before fire returned: nothing new starts after it.
        recorder.wait(seconds: 0.3)
        let afterwards = recorder.frameCount
        recorder.wait(seconds: 0.3)
        #expect(recorder.peak(from: afterwards, to: recorder.frameCount) < 0.01)

        // --no-daemon and the environment variable play in this process: here, into no server.
        let forced = feedbackctl(harness, ["fire", "1007", "--no-daemon"], deaf)
        #expect(forced.status == 69, "\(forced.errors)")
        var variable = deaf
        variable[DaemonRouteNames.environmentVariable] = "1"
        #expect(feedbackctl(harness, ["fire", "1007"], variable).status == 69)
    }

    /// A sound the service started and lost mid-play (its sound server killed) is the command's
    /// failure, said once, and is not played again in process: the command's own sound server
    /// (another one here, which would take a replay) hears nothing of it.
    @Test func aPlayThatBrokeOffInTheServiceIsNotPlayedAgain() throws {
        let serviceServer = try PulseAudioTestServer.shared(named: "sounds1-cli-killed")
        defer { PulseAudioTestServer.shutDownShared(named: "sounds1-cli-killed") }
        let harness = try DaemonHarness(pulse: serviceServer)
        try harness.startDaemon()
        let heardByService = serviceServer.recorder.frameCount
        let start = recorder.frameCount
        let fire = try ChildProcess(
            builtProduct("feedbackctl"), ["fire", "1007"], environment: harness.environment(["PULSE_SERVER": pulse.server]))
        defer { fire.signal(SIGKILL) }
        try #require(serviceServer.recorder.firstSound(after: heardByService, timeout: 5) != nil, "the service played nothing")
        serviceServer.kill()
        let status = fire.wait(timeout: 10)
        #expect(status == 69, "\(fire.errors)")
        #expect(fire.errors.contains("connection to the sound server was lost"), "\(fire.errors)")
        #expect(fire.errors.components(separatedBy: "Error:").count == 2, "one error: \(fire.errors)")
        recorder.wait(seconds: 0.5)
        #expect(recorder.firstSound(after: start, timeout: 0.05) == nil, "the command played it again in process")
    }

    /// The route through the service needs libsystemd only: no sound server's library, and no
    /// libsndfile (the service decodes). Checked with the dynamic loader's report (OptionalLibraryTests).
    @Test func fireThroughTheServiceMapsOnlyLibsystemd() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let (fired, objects) = runReportingLoadedObjects(
            builtProduct("feedbackctl"), ["fire", "1007"], environment: harness.environment().map { "\($0.key)=\($0.value)" })
        #expect(fired.status == 0, "\(fired.errors.suffix(2_000))")
        #expect(objects.all.intersection(optionalLibraries) == ["libsystemd.so.0"], "\(objects.all)")
    }

    @Test func aServiceThatCannotLoadLibsystemdSaysWhichPackage() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let libraries = brokenLibraries(["libsystemd.so.0"], in: harness.directory)
        let service = runProcess(
            builtProduct("feedbackservicesd"), [],
            environment: harness.environment(["LD_LIBRARY_PATH": libraries]).map { "\($0.key)=\($0.value)" })
        #expect(service.status == 69, "\(service.errors)")
        #expect(service.errors.contains("libsystemd.so.0"), "\(service.errors)")
        #expect(service.errors.contains("install the Debian package libsystemd0"), "\(service.errors)")
    }

    @Test func withoutTheServicesPIDFileTheCommandDoesNotAskIt() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon()
        let pidFile = harness.directory.file("feedbackservicesd.pid")
        #expect((try? String(contentsOfFile: pidFile, encoding: .utf8)) == "\(daemon.pid)\n")
        // No PID file, no bus connection: the command plays itself, into no server here.
        unlink(pidFile)
        let fired = feedbackctl(harness, ["fire", "1007"], ["PULSE_SERVER": "unix:\(harness.directory.file("no-server"))"])
        #expect(fired.status == 69, "\(fired.errors)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 3) == 0)
    }

    @Test func noDaemonPlaysInProcess() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let start = recorder.frameCount
        let fired = feedbackctl(harness, ["fire", "1007", "--no-daemon"])
        #expect(fired.status == 0, "\(fired.errors)")
        #expect(recorder.firstSound(after: start, timeout: 1) != nil)
    }

    @Test(arguments: [
        ["fire", "1007", "--json"],
        ["fire", "message-new-instant", "--volume", "0.5", "--json"],
        ["fire", "1007", "--no-wait", "--json"],
        ["fire", "no-such-event-anywhere"],
        ["fire", "4097"],
        ["fire", "1000000"],
        ["fire", "1007", "--volume", "9"],
        // This machine has no vibrator: the service refuses, and the command says so as in process.
        ["vibrate"],
        ["vibrate", "--duration", "150", "--intensity", "0.5"],
        ["vibrate", "--pattern", "0,200,100,200"],
        ["vibrate", "--pattern", "100,50,100", "--amplitudes", "1,0,0.4"],
        ["vibrate", "--no-wait"],
        ["vibrate", "--duration", "20000"],
        ["vibrate", "--duration", "soon"],
        ["vibrate", "--device", "no-such-vibrator"],
    ])
    func outputAndExitStatusAreTheSameBothWays(arguments: [String]) throws {
        let harness = try DaemonHarness(pulse: pulse)
        let viaProcess = feedbackctl(harness, arguments)
        try harness.startDaemon()
        let viaService = feedbackctl(harness, arguments)
        #expect(viaService.status == viaProcess.status, "\(viaService.errors) | \(viaProcess.errors)")
        #expect(viaService.output == viaProcess.output)
        #expect(viaService.errors == viaProcess.errors)
    }

    @Test func vibrateAsksTheService() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon()
        let asked = "Vibrate (client "
        let vibrated = feedbackctl(harness, ["vibrate", "--duration", "100"])
        #expect(vibrated.status == 69, "\(vibrated.errors)")
        #expect(daemon.waitForLog(containing: asked, timeout: 2), "the service was not asked: \(daemon.errors)")
        // Not with a vibrator of the command's own choosing, nor with --no-daemon.
        let logged = daemon.errors.count
        for arguments in [["--device", "/dev/input/event0"], ["--input-dir", harness.directory.path], ["--no-daemon"]] {
            #expect(feedbackctl(harness, ["vibrate"] + arguments).status == 69)
        }
        #expect(!daemon.errors.dropFirst(logged).contains(asked), "\(daemon.errors)")
    }

    /// A `seconds`-long tone of `frequency` Hz registered with `feedbackctl register`; its ID.
    private func registeredTone(_ harness: DaemonHarness, seconds: Double, frequency: Double = 440) throws -> UInt32 {
        let samples = (0..<Int(48_000 * seconds)).map { Float(0.5 * sin(2 * Double.pi * frequency * Double($0) / 48_000)) }
        let buffer = try SoundDecoder().decode(samples: samples, sampleRate: 48_000, channelCount: 1)
        let path = harness.directory.file("tone-\(seconds)-\(frequency).wav")
        try SoundFileWriter.write(buffer, to: path, format: .wav16)
        let registered = feedbackctl(harness, ["register", path])
        return try #require(UInt32(registered.output.filter(\.isNumber)), "\(registered.errors)")
    }

    @Test func stopReachesWhatFireNoWaitLeftToTheService() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon()
        let id = try registeredTone(harness, seconds: 3)
        let start = recorder.frameCount
        // The command itself cannot reach a sound server: what is heard, the service played.
        let fired = feedbackctl(harness, ["fire", "\(id)", "--no-wait"], ["PULSE_SERVER": "unix:\(harness.directory.file("no-server"))"])
        #expect(fired.status == 0, "\(fired.errors)")
        let onset = try #require(recorder.firstSound(after: start, timeout: 2), "nothing reached the sound server")
        recorder.wait(seconds: 0.3)
        let stopped = feedbackctl(harness, ["stop"])
        #expect(stopped.status == 0, "\(stopped.errors)")
        #expect(stopped.output == "Stopped 1 player:\n  \(daemon.pid)  feedbackservicesd: sound \(id)\n", "\(stopped.output)")
        // Silence after the stop's fade, where the tone had 2 s to go.
        recorder.wait(seconds: 0.1)
        let after = recorder.frameCount
        recorder.wait(seconds: 0.4)
        #expect(recorder.peak(from: after, to: recorder.frameCount) < 0.01, "it played on after stop")
        #expect(after - onset < 2 * PulseAudioTestServer.rate)
        let again = feedbackctl(harness, ["stop", "--json"])
        #expect(again.status == 0 && again.output.contains(#""stopped":[]"#), "\(again.output)")
    }

    @Test func stopLeavesOtherClientsPlaysAlone() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        // Two tones, not one twice: the same tone started a D-Bus round trip (~1.1 ms, half of
        // 440 Hz's period) later can cancel the first (a CI run heard a peak of 0.04 with both playing).
        let id = try registeredTone(harness, seconds: 3)
        let otherID = try registeredTone(harness, seconds: 3, frequency: 660)
        let before = recorder.frameCount
        // Another program's play, and one it detached in a group of its own.
        let other = try ChildProcess(
            DaemonTools.python,
            ["-u", "-c", SystemSoundsClient.script, "play", "\(id)", "play", "\(otherID)", "detached=org.example.Other", "wait", "2"],
            environment: harness.environment())
        #expect(other.waitForOutput(containing: "play ", timeout: 10) != nil, "\(other.errors)")
        // Heard before the stop, so that a quiet or late start is told apart from a stop that
        // reached it (a CI run saw a peak of 0.04 after the stop, with nothing to say which).
        _ = try #require(
            recorder.firstSound(after: before, threshold: 0.1, timeout: 2),
            "the other's sound was not heard before the stop: \(other.output) \(other.errors)")
        let start = recorder.frameCount
        let stopped = feedbackctl(harness, ["stop"])
        #expect(stopped.status == 0 && stopped.output == "Nothing was playing.\n", "\(stopped.output) \(stopped.errors)")
        recorder.wait(seconds: 0.5)
        let after = recorder.peak(from: start + PulseAudioTestServer.rate / 5, to: recorder.frameCount)
        #expect(after > 0.1, "the other's sound stopped: peak \(after) after the stop; the client said \(other.output)")
        #expect(other.wait(timeout: 10) == 0)
        #expect(!other.output.contains("ended "), "\(other.output)")
    }

    @Test func devicesShowsTheServicesState() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let before = feedbackctl(harness, ["devices", "--json", "--input-dir", harness.directory.path])
        #expect(before.output.contains(#""service":{"output":null,"pid":null,"profile":null,"running":false,"theme":null}"#)
            || before.output.contains(#""running":false"#), "\(before.output)")
        let daemon = try harness.startDaemon()
        let after = feedbackctl(harness, ["devices", "--json", "--input-dir", harness.directory.path])
        #expect(after.status == 0, "\(after.errors)")
        #expect(after.output.contains(#""running":true"#) && after.output.contains(#""pid":\#(daemon.pid)"#), "\(after.output)")
        #expect(after.output.contains(#""profile":"full""#), "\(after.output)")
        let text = feedbackctl(harness, ["devices", "--input-dir", harness.directory.path])
        #expect(text.output.contains("Service: feedbackservicesd, process \(daemon.pid)\n  profile:   full\n"), "\(text.output)")
    }

    @Test func profileIsAnnouncedByTheService() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let monitor = try harness.monitor()
        let set = feedbackctl(harness, ["profile", "quiet"])
        #expect(set.status == 0 && set.output == "quiet\n", "\(set.errors)")
        #expect(monitor.process.waitForOutput(containing: "'Profile': <'quiet'>", timeout: 5) != nil, "\(monitor.output)")
        // --no-daemon only writes the file; the service, which watches it, announces that too.
        let quietly = feedbackctl(harness, ["profile", "full", "--no-daemon"])
        #expect(quietly.status == 0 && quietly.output == "full\n", "\(quietly.errors)")
        #expect(monitor.process.waitForOutput(containing: "'Profile': <'full'>", timeout: 5) != nil, "\(monitor.output)")
    }

    @Test func interruptedFireStopsTheServicesSound() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let samples = (0..<(48_000 * 3)).map { Float(0.5 * sin(2 * Double.pi * 440 * Double($0) / 48_000)) }
        let buffer = try SoundDecoder().decode(samples: samples, sampleRate: 48_000, channelCount: 1)
        let path = harness.directory.file("long.wav")
        try SoundFileWriter.write(buffer, to: path, format: .wav16)
        let registered = feedbackctl(harness, ["register", path])
        let id = try #require(UInt32(registered.output.filter(\.isNumber)), "\(registered.errors)")
        let start = recorder.frameCount
        let fire = try ChildProcess(
            builtProduct("feedbackctl"), ["fire", "\(id)"],
            environment: harness.environment(["PULSE_SERVER": "unix:\(harness.directory.file("no-server"))"]))
        let onset = try #require(recorder.firstSound(after: start, timeout: 2))
        recorder.wait(seconds: 0.3)
        fire.signal(SIGINT)
        #expect(fire.wait(timeout: 5) == 130, "\(fire.errors)")
        recorder.wait(seconds: 0.3)
        let last = try #require(recorder.lastSound(from: onset, before: recorder.frameCount))
        #expect(last - onset < 2 * PulseAudioTestServer.rate, "the sound went on after Ctrl-C")
    }
}

/// The environment variable feedbackctl reads, as its help says it.
enum DaemonRouteNames {
    static let environmentVariable = "FEEDBACKCTL_NO_DAEMON"
}
