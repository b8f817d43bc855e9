import FeedbackServices
import Foundation
import Glibc
import Testing

@testable import FeedbackCLI

/// `feedbackctl volume`, in process.
@Suite struct VolumeCommandTests {
    let directory = "/tmp/feedbackctl-volume-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"

    func source(format: SoundFileFormat = .flac16, name: String = "tone.flac") throws -> String {
        mkdir(directory, 0o700)
        let samples = (0..<48_000).map { Float(0.5 * sin(2 * Double.pi * 440 * Double($0) / 48_000)) }
        let buffer = try SoundDecoder().decode(samples: samples, sampleRate: 48_000, channelCount: 1)
        let path = directory + "/" + name
        try SoundFileWriter.write(buffer, to: path, format: format)
        return path
    }

    @Test func halvesAndExportsInTheSourceFormat() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let input = try source()
        let output = directory + "/half.flac"
        let result = feedbackctl("volume", "--json", input, "0.5", "--export", output)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("\"multiplier\":0.5") && result.output.contains("\"version\""), "\(result.output)")
        let decoded = try SoundDecoder().decode(fileAt: output)
        #expect(decoded.sourceFormat == .flac16)
        #expect(abs(decoded.buffer.peak - 0.25) < 0.001)
    }

    @Test func normalisesToALoudnessTarget() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let input = try source(format: .wav16, name: "tone.wav")
        let result = feedbackctl("volume", input, "--lufs", "-20")
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("→ -20.0 LUFS"), "\(result.output)")
    }

    @Test func argumentErrors() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let input = try source()
        #expect(feedbackctl("volume", input).status == 0)
        #expect(feedbackctl("volume", input, "0.5", "--lufs", "-16").status == 64)
        #expect(feedbackctl("volume", input, "-1").status == 64)
        #expect(feedbackctl("volume", input, "--lufs", "loud").status == 64)
        #expect(feedbackctl("volume", directory + "/missing.wav", "0.5").status == 66)
        #expect(feedbackctl("volume", "1017", "0.5").status == 66)
        #expect(feedbackctl("volume", input, "0.5", "--export", "/nonexistent/dir/x.flac").status == 73)
    }
}
