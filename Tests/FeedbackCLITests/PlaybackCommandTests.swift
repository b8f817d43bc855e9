import Foundation
import Glibc
import Testing

@testable import FeedbackCLI
import FeedbackServices

/// `fire` and `play`: argument and error paths in process, and the built binary against a real
/// PulseAudio server.
@Suite struct PlaybackCommandTests {
    @Test(arguments: [
        (["fire"], ExitCode.usage, "missing argument for 'fire'"),
        (["fire", "1017"], .noInput, "system sound 1017 is not assigned"),
        (["fire", "99999"], .noInput, "99999"),
        (["fire", "no-such-event-anywhere"], .noInput, "no sound for 'no-such-event-anywhere'"),
        (["fire", "../etc/passwd"], .usage, "event name"),
        (["fire", "1007", "--volume", "loud"], .usage, "--volume takes a number from 0.0 to 16.0, not 'loud'"),
        (["fire", "1007", "--output", "x.wav", "--canberra"], .usage, "--output and --canberra cannot be used together"),
        (["play"], .usage, "missing argument for 'play'"),
        (["play", "/nonexistent.wav"], .noInput, "/nonexistent.wav: no such file"),
        (["play", "/dev/zero"], .noInput, "not a regular file"),
        (["play", "x.wav", "--pan", "2"], .usage, "--pan takes a number from -1.0 to 1.0"),
        (["play", "x.wav", "--loop", "0"], .usage, "--loop takes a whole number of 1 or more"),
    ])
    func errors(arguments: [String], code: ExitCode, message: String) {
        let result = feedbackctl(arguments)
        #expect(result.status == code.rawValue, "\(result.errors)")
        #expect(result.errors.hasPrefix("Error: "))
        #expect(result.errors.contains(message), "\(result.errors)")
    }

    @Test func fireRendersTheTriToneIntoAFile() throws {
        let path = "/tmp/feedbackctl-fire-\(getpid()).wav"
        defer { unlink(path) }
        let result = feedbackctl("fire", "1007", "--output", path, "--json")
        #expect(result.status == 0, "\(result.errors)")
        let data = try #require(result.output.data(using: .utf8))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["id"] as? Int == 1007)
        #expect(object["result"] as? String == "finished")
        let decoded = try SoundDecoder().decode(fileAt: path)
        let expected = try #require(object["duration"] as? Double)
        #expect(abs(decoded.buffer.duration - expected) < 0.001)
        #expect(decoded.buffer.peak > 0.1)
    }

    @Test func playRendersPanAndLoopsIntoAFile() throws {
        let source = "/tmp/feedbackctl-src-\(getpid()).wav"
        let path = "/tmp/feedbackctl-play-\(getpid()).wav"
        defer {
            unlink(source)
            unlink(path)
        }
        let tone = try SoundDecoder().decode(samples: [Float](repeating: 0.5, count: 4_800), sampleRate: 48_000, channelCount: 1)
        try SoundFileWriter.write(tone, to: source, format: .wav16)
        let result = feedbackctl("play", "--pan", "-1", "--loop", "3", "--output", path, source)
        #expect(result.status == 0, "\(result.errors)")
        let decoded = try SoundDecoder().decode(fileAt: path).buffer
        #expect(decoded.frameCount == 14_400)
        #expect(decoded.samples[1] == 0, "panned fully left: the right channel is silent")
        #expect(abs(decoded.samples[0] - 0.5) < 0.001)
    }
}

/// The built feedbackctl against a private PulseAudio server (started by scripts/private-pulseaudio).
@Suite(.serialized) struct PlaybackBinaryTests {
    @Test func fire1007PlaysTheTriTone() throws {
        let server = try PrivateSoundServer.address()
        let started = Date()
        let result = runProcess(feedbackctlBinary, ["fire", "1007", "--json"], environment: ["PULSE_SERVER=\(server)"])
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 0, "\(result.errors)")
        let data = try #require(result.output.data(using: .utf8))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["result"] as? String == "finished")
        let duration = try #require(object["duration"] as? Double)
        // It waited for the sound to be played, and not much longer.
        #expect(elapsed >= duration)
        #expect(elapsed < duration + 2)
    }

    @Test func noServerIsExit69NamingWhereItLooked() {
        let result = runProcess(feedbackctlBinary, ["fire", "1007"], environment: ["PULSE_SERVER=unix:/nonexistent/native"])
        #expect(result.status == 69)
        #expect(result.errors.contains("no audio output is available"))
        #expect(result.errors.contains("unix:/nonexistent/native (PULSE_SERVER)"))
    }

    /// libcanberra's open fails without a server; the output reports it instead of crashing on a
    /// context destroyed twice (once by the failed init, once by deinit).
    @Test func noServerForLibcanberraIsExit69() {
        let result = runProcess(
            feedbackctlBinary, ["fire", "1007", "--canberra"], environment: ["PULSE_SERVER=unix:/nonexistent/native"])
        #expect(result.status == 69, "\(result.errors)")
        #expect(result.errors.hasPrefix("Error: libcanberra failed"))
    }

    @Test func ctrlCStopsTheSoundAndExits130() throws {
        let server = try PrivateSoundServer.address()
        let source = "/tmp/feedbackctl-long-\(getpid()).wav"
        defer { unlink(source) }
        let tone = try SoundDecoder().decode(samples: [Float](repeating: 0.1, count: 48_000 * 10), sampleRate: 48_000, channelCount: 1)
        try SoundFileWriter.write(tone, to: source, format: .wav16)
        let started = Date()
        let result = runProcess(
            feedbackctlBinary, ["play", source], environment: ["PULSE_SERVER=\(server)"], interruptAfter: 0.5)
        #expect(result.status == 130, "\(result.errors)")
        #expect(result.errors == "Error: interrupted; the sound or vibration was stopped\n")
        #expect(Date().timeIntervalSince(started) < 3)
    }
}
