import FoundationEssentials
import Glibc
import Testing

@testable import FeedbackServices

/// Every format libsndfile reads here: written with libsndfile by the test, decoded back, compared
/// within the codec's tolerance.
@Suite struct DecodingRoundTripTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let fileExtension: String
        let format: SoundFileFormat
        /// Largest sample difference for lossless formats; nil for lossy ones, which are compared by
        /// correlation after aligning the codec's delay.
        let tolerance: Float?
        let rate: Int
        var testDescription: String { "\(fileExtension) \(format)" }
    }

    static let cases: [Case] = [
        Case(fileExtension: "wav", format: .wav16, tolerance: 1.0 / 32768, rate: 48_000),
        Case(fileExtension: "wav", format: .wav24, tolerance: 1.0 / 8_388_608, rate: 48_000),
        Case(fileExtension: "wav", format: .wavFloat, tolerance: 0, rate: 48_000),
        Case(fileExtension: "rf64", format: .rf64_16, tolerance: 1.0 / 32768, rate: 48_000),
        Case(fileExtension: "aiff", format: .aiff16, tolerance: 1.0 / 32768, rate: 48_000),
        Case(fileExtension: "caf", format: .caf16, tolerance: 1.0 / 32768, rate: 48_000),
        Case(fileExtension: "caf", format: .cafALAC16, tolerance: 1.0 / 32768, rate: 48_000),
        Case(fileExtension: "flac", format: .flac16, tolerance: 1.0 / 32768, rate: 48_000),
        Case(fileExtension: "ogg", format: .oggVorbis, tolerance: nil, rate: 48_000),
        Case(fileExtension: "opus", format: .oggOpus, tolerance: nil, rate: 48_000),
        Case(fileExtension: "mp3", format: .mp3, tolerance: nil, rate: 48_000),
    ]

    @Test(arguments: cases)
    func roundTrip(_ testCase: Case) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("signal.\(testCase.fileExtension)")
        // Different tones left and right, so a swapped or mixed channel cannot pass.
        let original = Signal.sines([440, 1250], amplitude: 0.5, seconds: 0.5, rate: testCase.rate)
        try SoundFileWriter.write(Signal.buffer(original, channels: 2, rate: testCase.rate), to: path, format: testCase.format)

        let decoded = try SoundDecoder(sampleRate: testCase.rate).decode(fileAt: path)
        #expect(decoded.sourceFormat == testCase.format)
        #expect(decoded.sourceChannelCount == 2)
        #expect(decoded.buffer.channelCount == 2)
        #expect(decoded.buffer.sampleRate == testCase.rate)

        if let tolerance = testCase.tolerance {
            #expect(decoded.buffer.frameCount == original.count / 2)
            #expect(Analysis.maximumDifference(decoded.buffer.samples, original) <= tolerance)
        } else {
            // Lossy codecs may add or trim a few milliseconds; the content must still match.
            let frames = decoded.buffer.frameCount
            #expect(abs(frames - original.count / 2) <= testCase.rate / 10)
            for channel in 0..<2 {
                let want = Signal.channel(channel, of: original, channels: 2)
                let got = Signal.channel(channel, of: decoded.buffer.samples, channels: 2)
                let window = Array(want[2400..<21600])
                let match = Analysis.bestCorrelation(window, got, lags: (2400 - 2000)...(2400 + 2000))
                #expect(match.value >= 0.99, "channel \(channel) correlates \(match.value)")
            }
        }
    }

    @Test func urlAndPathDecodeTheSame() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("a b ü.flac")
        let samples = Signal.sines([300], seconds: 0.2, rate: 48_000)
        try SoundFileWriter.write(Signal.buffer(samples, channels: 1, rate: 48_000), to: path, format: .flac16)
        let byPath = try SoundDecoder().decode(fileAt: path)
        let byURL = try SoundDecoder().decode(contentsOf: URL(filePath: path))
        #expect(byPath.buffer == byURL.buffer)
        #expect(byPath.buffer.channelCount == 1)
    }

    @Test func writeIsAtomicAndLeavesTheOldFileOnFailure() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("keep.opus")
        let good = Signal.buffer(Signal.sines([440], seconds: 0.1, rate: 48_000), channels: 1, rate: 48_000)
        try SoundFileWriter.write(good, to: path, format: .oggOpus)
        let before = try #require(FileManager.default.contents(atPath: path))

        // libsndfile writes Opus only at 8/12/16/24/48 kHz: 44.1 kHz must fail and change nothing.
        let odd = Signal.buffer(Signal.sines([440], seconds: 0.1, rate: 44_100), channels: 1, rate: 44_100)
        let error = #expect(throws: FileError.self) {
            try SoundFileWriter.write(odd, to: path, format: .oggOpus)
        }
        #expect(error?.reason == .cannotWrite)
        #expect(FileManager.default.contents(atPath: path) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["keep.opus"])
    }

    @Test func writeIntoMissingDirectoryFails() {
        let error = #expect(throws: FileError.self) {
            try SoundFileWriter.write(
                Signal.buffer([0, 0], channels: 1, rate: 48_000), to: "/nonexistent-dir/x.wav", format: .wav16)
        }
        #expect(error?.reason == .cannotCreate && error?.errno == ENOENT)
        #expect(error?.detail == "No such file or directory")
    }

    @Test func integerFormatsClipInsteadOfWrapping() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("loud.wav")
        try SoundFileWriter.write(Signal.buffer([1.5, -1.5, 0.25], channels: 1, rate: 48_000), to: path, format: .wav16)
        let samples = try SoundDecoder().decode(fileAt: path).buffer.samples
        #expect(samples[0] > 0.999)
        #expect(samples[1] < -0.999)
        #expect(abs(samples[2] - 0.25) < 1e-4)
    }
}
