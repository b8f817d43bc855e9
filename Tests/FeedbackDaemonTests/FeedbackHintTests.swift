@testable import FeedbackDaemon
import FeedbackServices
import FeedbackTestSupport
import FoundationEssentials
import Glibc
import Testing

/// TriggerFeedback's hints (profile, important, sound-file), called with gdbus as feedbackd's
/// newer clients send them. In the suite, so that they share its recording one at a time.
extension FeedbackDaemonTests {
    private func trigger(
        _ harness: DaemonHarness, _ event: String, hints: String, app: String = "org.example.App"
    ) -> ProcessResult {
        harness.callFeedback("org.sigxcpu.Feedback.TriggerFeedback", [app, event, hints, "-1"])
    }

    /// Whether anything reached the sink within `seconds` after frame `start`.
    private func heard(after start: Int, within seconds: Double) -> Bool {
        recorder.firstSound(after: start, timeout: seconds) != nil
    }

    @Test func profileHintLowersTheLevelForOneFeedbackOnly() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let monitor = try harness.monitor()
        // quiet: message-new-instant is a rumble there, and this machine has no vibrator: no sound.
        var start = recorder.frameCount
        #expect(trigger(harness, "message-new-instant", hints: "{'profile': <'quiet'>}").output == "(uint32 1,)\n")
        #expect(monitor.ended(1, timeout: 2) == 0)
        #expect(!heard(after: start, within: 0.5), "quiet played a sound")
        // silent: our theme gives nothing there.
        #expect(trigger(harness, "message-new-instant", hints: "{'profile': <'silent'>}").status == 0)
        #expect(monitor.ended(2, timeout: 2) == 4_294_967_295)
        // The next feedback without the hint is at the service's profile again.
        start = recorder.frameCount
        #expect(trigger(harness, "message-new-instant", hints: "{}").status == 0)
        #expect(heard(after: start, within: 2))
        #expect(monitor.ended(3, timeout: 5) == 0)
    }

    @Test func importantPlaysOverTheProfileForAllowedApps() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon(environment: [FeedbackSettings.environmentVariable: "silent"])
        let monitor = try harness.monitor()
        // A profile hint cannot raise the level.
        var start = recorder.frameCount
        #expect(trigger(harness, "alarm-clock-elapsed", hints: "{'profile': <'full'>}").status == 0)
        #expect(monitor.ended(1, timeout: 2) == 4_294_967_295)
        // important from an app that may not override: as without it.
        #expect(trigger(harness, "alarm-clock-elapsed", hints: "{'important': <true>}").status == 0)
        #expect(monitor.ended(2, timeout: 2) == 4_294_967_295)
        #expect(daemon.errors.contains("its important hint is not honoured: app id 'org.example.App'"), "\(daemon.errors)")
        // important from GNOME Clocks (feedbackd's allow-important list) plays at the level its
        // profile hint asks for: quiet has no sound ...
        #expect(
            trigger(harness, "message-new-instant", hints: "{'important': <true>, 'profile': <'quiet'>}", app: "org.gnome.clocks")
                .status == 0)
        #expect(!heard(after: start, within: 0.5))
        // ... and full (no hint) rings under silent.
        start = recorder.frameCount
        let reply = trigger(harness, "alarm-clock-elapsed", hints: "{'important': <true>}", app: "org.gnome.clocks")
        #expect(reply.output == "(uint32 4,)\n", "\(reply.errors)")
        #expect(heard(after: start, within: 2), "an important feedback played under silent")
        #expect(monitor.ended(4, timeout: 10) == 0)
    }

    @Test func unknownHintsAreIgnoredAndWrongTypesRefused() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let ignored = trigger(harness, "no-such-event", hints: "{'x-unknown': <[1, 2]>, 'another': <'s'>}")
        #expect(ignored.output == "(uint32 1,)\n", "\(ignored.errors)")
        for (hints, key) in [
            ("{'important': <'yes'>}", "important"), ("{'profile': <3>}", "profile"),
            ("{'sound-file': <['/a']>}", "sound-file"),
        ] {
            let refused = trigger(harness, "message-new-instant", hints: hints)
            #expect(refused.errors.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(hints): \(refused.errors)")
            #expect(refused.errors.contains("the hint '\(key)' must be of type"), "\(hints): \(refused.errors)")
        }
        let loud = trigger(harness, "message-new-instant", hints: "{'profile': <'loud'>}")
        #expect(loud.errors.contains("full, quiet or silent"), "\(loud.errors)")
    }

    @Test func soundFilePlaysInsteadOfTheEventsSound() throws {
        let harness = try DaemonHarness(pulse: pulse)
        try harness.startDaemon()
        let monitor = try harness.monitor()
        // A quiet 440 Hz tone of 0.4 s: quieter than any theme sound, so it is what was heard.
        let rate = 48_000
        let samples = (0..<(rate * 2 / 5)).map { Float(0.1 * sin(2 * Double.pi * 440 * Double($0) / Double(rate))) }
        let path = harness.directory.file("tone.wav")
        try SoundFileWriter.write(
            SoundDecoder().decode(samples: samples, sampleRate: rate, channelCount: 1), to: path, format: .wav16)
        let start = recorder.frameCount
        // An event the theme does not list plays the file too, as in feedbackd.
        let reply = trigger(harness, "no-such-event", hints: "{'sound-file': <'\(path)'>}")
        #expect(reply.output == "(uint32 1,)\n", "\(reply.errors)")
        let onset = try #require(recorder.firstSound(after: start, timeout: 2))
        #expect(monitor.ended(1, timeout: 5) == 0)
        let peak = recorder.peak(from: onset, to: onset + rate / 4)
        #expect(peak > 0.05 && peak < 0.15, "the file's tone, not the event's sound: peak \(peak)")
        // Under quiet the file is not played.
        let quiet = recorder.frameCount
        _ = trigger(harness, "no-such-event", hints: "{'sound-file': <'\(path)'>, 'profile': <'quiet'>}")
        #expect(monitor.ended(2, timeout: 2) == 4_294_967_295)
        #expect(!heard(after: quiet, within: 0.3))
    }

    @Test func hostileSoundFilesAreRefused() throws {
        let harness = try DaemonHarness(pulse: pulse)
        let daemon = try harness.startDaemon()
        let monitor = try harness.monitor()
        let directory = harness.directory
        mkfifo(directory.file("fifo"), 0o600)
        let text = directory.write(Array("not a sound\n".utf8), to: "text.wav")
        symlink(text, directory.file("link.wav"))
        let huge = directory.file("huge.wav")
        let fd = open(huge, O_CREAT | O_WRONLY, 0o600)
        ftruncate(fd, off_t(FeedbackRunner.maximumSoundFileSize + 1))
        close(fd)
        let refusals: [(path: String, error: String)] = [
            (directory.file("fifo"), "InvalidArgs"), ("/dev/zero", "InvalidArgs"), (directory.path, "InvalidArgs"),
            // The bus's listening socket.
            (directory.file("bus"), "InvalidArgs"), (directory.file("link.wav"), "InvalidArgs"),
            (huge, "InvalidArgs"), (directory.file("missing.wav"), "FileNotFound"), ("relative.wav", "InvalidArgs"),
            ("\(directory.path)/../\(directory.path.split(separator: "/").last!)/text.wav", "InvalidArgs"),
        ]
        for (path, error) in refusals {
            let started = MonotonicClock.now
            let reply = trigger(harness, "message-new-instant", hints: "{'sound-file': <'\(path)'>}")
            #expect(reply.errors.contains("org.freedesktop.DBus.Error.\(error)"), "\(path): \(reply.errors)")
            #expect(MonotonicClock.now - started < 2, "\(path) hung the call")
        }
        // Refused with one log line each (the syntax checks before any id was given excepted).
        #expect(daemon.errors.components(separatedBy: "sound-file refused").count - 1 == refusals.count - 2, "\(daemon.errors)")
        // A regular file that is not a sound ends not-found, with a line saying why.
        let reply = trigger(harness, "message-new-instant", hints: "{'sound-file': <'\(text)'>}")
        let id = try #require(reply.output.split(separator: "uint32 ").last.flatMap { UInt32($0.filter(\.isNumber)) })
        #expect(monitor.ended(id, timeout: 5) == 4_294_967_295, "\(monitor.output)")
        #expect(daemon.errors.contains("did not play as asked"), "\(daemon.errors)")
        // Still answering.
        #expect(trigger(harness, "message-new-instant", hints: "{}").status == 0)
    }
}
