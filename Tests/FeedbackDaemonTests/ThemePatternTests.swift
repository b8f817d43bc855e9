import FeedbackDaemon
import FeedbackServices
import FeedbackTestSupport
import Foundation
import Glibc
import Testing

/// A feedback theme's event that is a haptic pattern (our `pattern` field): what feedbackd and
/// its validator make of such a theme, and what our service plays, heard at a PulseAudio monitor
/// of this suite's own.
@Suite(.serialized, .enabled(if: DaemonTools.shouldRun))
struct ThemePatternTests {
    let directory = TemporaryDirectory()

    /// A theme whose `ring` event is a Sound with a pattern beside its effect, and whose `bad`
    /// event names a pattern that is not one.
    func theme(in directory: String) throws -> String {
        try writeClick(to: directory + "/click.wav")
        mkdir(directory + "/patterns", 0o755)
        _ = FileManager.default.createFile(
            atPath: directory + "/patterns/ring.json",
            contents: Data(
                #"""
                { "events": [ { "type": "sound", "time": 0, "file": "../click.wav" },
                              { "type": "sound", "time": 0.2, "file": "../click.wav", "pan": -1 } ] }
                """#.utf8))
        _ = FileManager.default.createFile(atPath: directory + "/patterns/bad.json", contents: Data("{ not json".utf8))
        let path = directory + "/patterned.json"
        _ = FileManager.default.createFile(
            atPath: path,
            contents: Data(
                #"""
                { "name": "default", "profiles": [ { "name": "full", "feedbacks": [
                  { "event-name": "ring", "type": "Sound", "effect": "phone-incoming-call", "pattern": "patterns/ring.json" },
                  { "event-name": "bad", "type": "Sound", "effect": "message-new-instant", "pattern": "patterns/bad.json" } ] },
                  { "name": "quiet", "feedbacks": [
                  { "event-name": "hushed", "type": "VibraRumble", "duration": 100, "pattern": "patterns/ring.json" } ] } ] }
                """#.utf8))
        return path
    }

    /// The theme reads the pattern (relative to the theme's directory) as `.pattern`, with what
    /// feedbackd plays instead; a pattern that cannot be read is a note, and the feedback as
    /// written. feedbackd's validator calls the theme valid (json-glib skips the member).
    @Test func aPatternFeedbackReadsWithWhatFeedbackdPlays() throws {
        let path = try theme(in: directory.path)
        let theme = try FeedbackTheme.load(path: path, parents: [])
        let ring = theme.feedbacks(for: "ring", profile: .full)
        guard case .pattern(let pattern, let instead)? = ring.first, ring.count == 1 else {
            Issue.record("\(ring)")
            return
        }
        #expect(instead == .sound(effect: "phone-incoming-call"))
        #expect(pattern.path == directory.file("patterns/ring.json") && pattern.events.count == 2)
        #expect(theme.patternFiles == [directory.file("patterns/ring.json"), directory.file("patterns/bad.json")], "watched")
        #expect(theme.feedbacks(for: "bad", profile: .full) == [.sound(effect: "message-new-instant")])
        #expect(theme.notes.contains { $0.contains("its pattern cannot be read, so it plays as written") }, "\(theme.notes)")
        if runningInCI || access("/usr/bin/fbd-theme-validate", X_OK) == 0 {
            let validated = runProcess(
                "/usr/bin/fbd-theme-validate", [path],
                environment: ["HOME=\(directory.path)", "XDG_CONFIG_HOME=\(directory.file("config"))", "XDG_DATA_DIRS=/usr/share"])
            #expect(validated.status == 0 && validated.output.contains("Validation successful"), "\(validated.output) \(validated.errors)")
        }
    }

    /// Triggered through org.sigxcpu.Feedback, the pattern plays in place of the effect: its two
    /// sounds 0.2 s apart (7,200 frames from the first's end) and the second hard left; looping
    /// (timeout 0), it starts again until ended; one whose pattern cannot be read plays its effect.
    @Test func theServicePlaysAThemesPatternAndLoopsIt() throws {
        let server = try PulseAudioTestServer.shared(named: "theme-patterns")
        defer { PulseAudioTestServer.shutDownShared(named: "theme-patterns") }
        let recorder = try #require(server.recorder)
        let harness = try DaemonHarness(pulse: server)
        let path = try theme(in: harness.directory.path)
        let daemon = try harness.startDaemon(environment: ["FEEDBACK_THEME": path])
        let monitor = try harness.monitor()
        func trigger(_ event: String, timeout: String) throws -> UInt32 {
            let reply = harness.callFeedback("org.sigxcpu.Feedback.TriggerFeedback", ["org.example.App", event, "{}", timeout])
            return try #require(reply.output.split(separator: "uint32 ").last.flatMap { UInt32($0.filter(\.isNumber)) }, "\(reply)")
        }

        let start = recorder.frameCount
        let once = try trigger("ring", timeout: "-1")
        #expect(monitor.ended(once, timeout: 10) == 0, "played to its end: \(monitor.output) \(daemon.errors)")
        try expectTwoClicks(at: recorder, after: start, "\(daemon.errors)")

        // Looping: the pattern (0.25 s of sound) again and again, until EndFeedback (from a
        // client that stays: one that leaves ends its looping feedbacks).
        let loopStart = recorder.frameCount
        let client = try harness.python("loop-then-end", "ring", "1.5")
        #expect(client.wait(timeout: 10) == 0, "\(client.errors)")
        #expect(client.output.contains("ended "), "\(client.output)")
        var onsets: [Int] = []
        var after = loopStart
        while let onset = recorder.firstSound(after: after, threshold: 0.1, timeout: 0.5) {
            onsets.append(onset)
            after = onset + 2_600  // past this click (2,400 frames), before the next
        }
        // Each play is two clicks; at least three plays in 1.5 s.
        #expect(onsets.count >= 6, "\(onsets.count) clicks heard while it looped: \(onsets.map { $0 - loopStart }) \(daemon.errors)")

        // At the quiet level the pattern's sounds are silenced and it has no vibration: looping,
        // it plays nothing, so it ends after one play rather than starting again and again.
        let environment = harness.environment().map { "\($0.key)=\($0.value)" }
        #expect(runProcess(feedbackctlBinary, ["profile", "quiet"], environment: environment).status == 0)
        #expect(monitor.process.waitForOutput(containing: "{'Profile': <'quiet'>}", timeout: 5) != nil, "\(monitor.output)")
        let hushed = try harness.python("hold", "hushed", "0", holdStdin: true)
        defer { hushed.closeStdin() }
        let said = try #require(hushed.waitForOutput(containing: "id ", timeout: 5), "\(hushed.errors)")
        let quietID = try #require(UInt32(said.dropFirst(3)), "\(said)")
        #expect(monitor.ended(quietID, timeout: 3) == 0, "a looping pattern that plays nothing ends: \(monitor.output)")
        #expect(monitor.endedCount(quietID) == 1)
        #expect(runProcess(feedbackctlBinary, ["profile", "full"], environment: environment).status == 0)

        // A pattern that cannot be read: the feedback as written (its effect), to its end.
        let bad = try trigger("bad", timeout: "-1")
        #expect(monitor.ended(bad, timeout: 10) == 0, "\(monitor.output)")
        // The pattern files are watched as the theme's own: mending one reads the theme again.
        _ = FileManager.default.createFile(
            atPath: harness.directory.file("patterns/bad.json"),
            contents: Data(#"{ "events": [ { "type": "sound", "time": 0, "file": "../click.wav" } ] }"#.utf8))
        #expect(daemon.waitForLog(containing: "theme file changed: feedback theme 'default'", timeout: 5), "\(daemon.errors)")
        #expect(!daemon.errors.contains("cannot read the feedback theme"), "\(daemon.errors)")
    }

    /// The shipped theme's ringtone is a pattern: the shipped sound theme's phone-incoming-call
    /// with the motor running on each of its two rings, and still in the gap between them and
    /// after them (10 ms windows; loud means a peak above 0.3).
    @Test func theShippedRingtoneBuzzesOnItsRings() throws {
        let shipped = try #require(FeedbackThemeLocations.shippedDirectory)
        let theme = try FeedbackTheme.load(path: shipped + "/feedbackservices.json", parents: [])
        #expect(theme.notes.isEmpty, "\(theme.notes)")
        guard case .pattern(let pattern, let instead)? = theme.feedbacks(for: "phone-incoming-call", profile: .full).first else {
            Issue.record("\(theme.feedbacks(for: "phone-incoming-call", profile: .full))")
            return
        }
        #expect(instead == .sound(effect: "phone-incoming-call"))
        #expect(pattern.events.first == .sound(time: 0, sound: .event("phone-incoming-call"), volume: 1, pan: 0, duration: nil))
        let sounds = try #require(SoundThemeSearchPath.shippedThemesDirectory)
        let sound = try SoundDecoder().decode(fileAt: sounds + "/feedbackservices/stereo/phone-incoming-call.wav").buffer
        let window = sound.sampleRate / 100 * sound.channelCount
        let peaks = stride(from: 0, to: sound.samples.count, by: window).map { start in
            sound.samples[start..<min(start + window, sound.samples.count)].map(abs).max() ?? 0
        }
        let levels = pattern.levels(at: peaks.indices.map { (Double($0) + 0.5) / 100 })
        let unfelt = peaks.indices.filter { peaks[$0] > 0.3 && (levels[$0].intensity ?? 0) == 0 }
        #expect(unfelt.isEmpty, "loud and not felt at \(unfelt.map { Double($0) / 100 }) s")
        let quiet = peaks.indices.filter { peaks[$0] < 0.001 }
        #expect(quiet.count > 10 && quiet.allSatisfy { (levels[$0].intensity ?? 0) == 0 }, "felt in silence")
    }
}

/// The two clicks the pattern tests play (2,400 frames at 0.5, at 0 s and, hard left, at 0.2 s),
/// heard at `recorder` after frame `start`: from the first's end to the second's start 7,200
/// frames, to the frame. (From start to start is not exact on a running stream: a new sound's
/// first frames may already be behind the server's read position when the rewrite lands, 14 in
/// one run.)
/// - Returns: the first click's frame.
@discardableResult
func expectTwoClicks(at recorder: MonitorRecorder, after start: Int, _ context: String = "") throws -> Int {
    let first = try #require(recorder.firstSound(after: start, threshold: 0.1, timeout: 2), "nothing reached the sound server \(context)")
    let second = try #require(recorder.firstSound(after: first + 4_800, threshold: 0.1, timeout: 2))
    let left = recorder.channel(0, from: first, frames: 0..<4_800)
    let end = first + (left.lastIndex { abs($0) > 0.1 } ?? 0) + 1
    #expect(second - end == 7_200, "the second sound began \(second - end - 7_200) frames off its time")
    #expect(recorder.channel(1, from: second, frames: 100..<1_000).allSatisfy { abs($0) < 0.01 }, "hard left")
    return first
}

/// Writes the click the pattern tests play (2,400 frames at 0.5, mono, 48 kHz) to `path`.
func writeClick(to path: String) throws {
    let click = try SoundDecoder().decode(samples: [Float](repeating: 0.5, count: 2_400), sampleRate: 48_000, channelCount: 1)
    try SoundFileWriter.write(click, to: path, format: .wavFloat)
}
