internal import CSndFile
import FoundationEssentials
import Glibc
import Testing

@testable import FeedbackServices

/// Every way a file can fail to be a usable sound: a typed error naming the file and the cause,
/// never a crash, a hang or a half-decoded sound.
@Suite struct DecodingErrorTests {
    let directory = TemporaryDirectory()

    /// A valid 16-bit stereo WAV of `seconds` at `rate`, as bytes.
    func wav(seconds: Double = 0.25, rate: Int = 44_100, channels: Int = 2) throws -> [UInt8] {
        let path = directory.file("source-\(UInt32.random(in: 0...UInt32.max)).wav")
        let samples = Signal.sines(Array(repeating: 440, count: channels), seconds: seconds, rate: rate)
        try SoundFileWriter.write(Signal.buffer(samples, channels: channels, rate: rate), to: path, format: .wav16)
        defer { unlink(path) }
        return bytes(of: path)
    }

    func decodeError(_ path: String, decoder: SoundDecoder = SoundDecoder()) -> SoundError? {
        let error = #expect(throws: SoundError.self) { try decoder.decode(fileAt: path) }
        if let error { #expect(error.source == path, "the error must name the file") }
        return error
    }

    @Test func notFound() {
        let error = decodeError(directory.file("missing.wav"))
        #expect(error?.reason == .notFound)
        #expect(error?.description.contains("no such file") == true)
    }

    @Test func aPathThroughAFileIsNotFound() throws {
        let file = directory.write(try wav(), to: "a.wav")
        #expect(decodeError(file + "/inside.wav")?.reason == .notFound)
    }

    @Test func permissionDenied() throws {
        // Root reads any file, so as root this is proved end to end by the CLI test that runs
        // feedbackctl as an unprivileged user; the mapping is checked here either way.
        #expect(SoundFileReader.openError(errno: EACCES, path: "x").reason == .permissionDenied)
        #expect(SoundFileReader.openError(errno: EPERM, path: "x").reason == .permissionDenied)
        if getuid() != 0 {
            let file = directory.write(try wav(), to: "secret.wav")
            chmod(file, 0)
            #expect(decodeError(file)?.reason == .permissionDenied)
        }
    }

    @Test func notASoundFile() {
        let file = directory.write(Array("just some text, not audio at all\n".utf8), to: "notes.wav")
        let error = decodeError(file)
        #expect(error?.reason == .notASoundFile)
        #expect(error?.detail == "Format not recognised.", "libsndfile's own message is carried")
    }

    @Test func unsupportedEncoding() throws {
        // An AIFF-C whose compression type libsndfile does not implement.
        let path = directory.file("plain.aiff")
        try SoundFileWriter.write(Signal.buffer([0.1, 0.2, 0.3, 0.4], channels: 1, rate: 8_000), to: path, format: .aiff16)
        var data = bytes(of: path)
        // Rewrite as AIFC with a COMM chunk naming the unknown codec 'ZZZZ'.
        let comm = try #require(offset(of: "COMM", in: data))
        let ssnd = try #require(offset(of: "SSND", in: data))
        var aifc = Array("FORM".utf8) + [0, 0, 0, 0] + Array("AIFC".utf8)
        aifc += Array("FVER".utf8) + [0, 0, 0, 4, 0xA2, 0x80, 0x51, 0x40]
        let commBody = Array(data[(comm + 8)..<(comm + 26)]) + Array("ZZZZ".utf8) + [4] + Array("zzzz".utf8) + [0]
        aifc += Array("COMM".utf8) + [0, 0, 0, UInt8(commBody.count)] + commBody
        aifc += Array(data[ssnd...])
        let size = UInt32(aifc.count - 8)
        aifc[4...7] = [UInt8(size >> 24), UInt8((size >> 16) & 0xff), UInt8((size >> 8) & 0xff), UInt8(size & 0xff)]
        data = aifc
        let file = directory.write(data, to: "codec.aifc")
        let error = decodeError(file)
        #expect(error?.reason == .unsupportedEncoding)
    }

    @Test func emptyFile() {
        let file = directory.write([], to: "empty.wav")
        #expect(decodeError(file)?.reason == .empty)
    }

    @Test func zeroFrames() throws {
        var data = try wav()
        let dataChunk = try #require(offset(of: "data", in: data))
        data.removeSubrange((dataChunk + 8)...)
        patch(&data, at: dataChunk + 4, littleEndian: 0, size: 4)
        patch(&data, at: 4, littleEndian: UInt32(data.count - 8), size: 4)
        let file = directory.write(data, to: "zero-frames.wav")
        let error = decodeError(file)
        #expect(error?.reason == .empty)
        #expect(error?.detail == "zero frames")
    }

    @Test func tooLongIsRefusedNotTruncated() throws {
        let path = directory.file("long.wav")
        let samples = [Float](repeating: 0.1, count: 8_000 * 31)
        try SoundFileWriter.write(Signal.buffer(samples, channels: 1, rate: 8_000), to: path, format: .wav16)
        let error = decodeError(path)
        #expect(error?.reason == .exceedsMaximumDuration(seconds: 31, limit: 30))
        // Without the limit (music, not system sounds) the same file decodes whole.
        let whole = try SoundDecoder(maximumDuration: nil).decode(fileAt: path)
        #expect(whole.buffer.duration == 31)
    }

    @Test func exactlyThirtySecondsIsAllowed() throws {
        let samples = [Float](repeating: 0.1, count: 48_000 * 30)
        let buffer = try SoundDecoder().decode(samples: samples, sampleRate: 48_000, channelCount: 1)
        #expect(buffer.duration == 30)
        let error = #expect(throws: SoundError.self) {
            try SoundDecoder().decode(samples: samples + [0.1], sampleRate: 48_000, channelCount: 1)
        }
        #expect(error?.reason == .exceedsMaximumDuration(seconds: 30 + 1.0 / 48_000, limit: 30))
    }

    @Test func sixtyFourChannels() throws {
        let path = directory.file("64ch.wav")
        // Written with libsndfile directly: the public writer only takes 1- or 2-channel buffers.
        var info = SF_INFO(frames: 0, samplerate: 48_000, channels: 64, format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16), sections: 0, seekable: 0)
        let file = try #require(sf_open(path, Int32(SFM_WRITE), &info))
        var frames = [Float](repeating: 0.1, count: 64 * 100)
        #expect(sf_writef_float(file, &frames, 100) == 100)
        sf_close(file)
        let error = decodeError(path)
        #expect(error?.reason == .tooManyChannels(64, limit: 8))
    }

    @Test func sampleRateOfZero() throws {
        var data = try wav()
        let fmt = try #require(offset(of: "fmt ", in: data))
        patch(&data, at: fmt + 12, littleEndian: 0, size: 4)
        let error = decodeError(directory.write(data, to: "0hz.wav"))
        #expect(error?.reason == .malformed)
        #expect(error?.detail?.contains("sample rate or channel count of zero") == true)
    }

    @Test func sampleRateOfTenMegahertz() throws {
        var data = try wav()
        let fmt = try #require(offset(of: "fmt ", in: data))
        patch(&data, at: fmt + 12, littleEndian: 10_000_000, size: 4)
        let error = decodeError(directory.write(data, to: "10mhz.wav"))
        #expect(error?.reason == .invalidSampleRate(10_000_000, supported: SoundDecoder.supportedSampleRates))
    }

    @Test func truncatedHeader() throws {
        let data = try wav()
        let error = decodeError(directory.write(Array(data.prefix(30)), to: "header.wav"))
        #expect(error?.reason == .malformed)
        #expect(error?.detail?.contains("data") == true)
    }

    @Test func headerPromisingMoreDataThanTheFileHolds() throws {
        // Half the data is cut off but the header still claims all of it. libsndfile clamps the
        // length to what is there; the decoded sound is exactly the data present, nothing invented.
        let data = try wav(seconds: 1, rate: 48_000)
        let dataChunk = try #require(offset(of: "data", in: data))
        let keptFrames = 12_345
        let cut = Array(data.prefix(dataChunk + 8 + keptFrames * 4))
        let file = directory.write(cut, to: "cut.wav")
        let decoded = try SoundDecoder().decode(fileAt: file)
        #expect(decoded.buffer.frameCount == keptFrames)
        let original = try SoundDecoder().decode(fileAt: directory.write(data, to: "whole.wav"))
        #expect(Array(decoded.buffer.samples) == Array(original.buffer.samples.prefix(keptFrames * 2)))
    }

    @Test func aDirectory() {
        #expect(decodeError(directory.path)?.reason == .isDirectory)
    }

    @Test(.timeLimit(.minutes(1)))
    func aFIFOWithoutWriterDoesNotHang() throws {
        let path = directory.file("pipe.wav")
        #expect(mkfifo(path, 0o600) == 0)
        #expect(decodeError(path)?.reason == .notARegularFile)
    }

    @Test func devZeroIsNotReadForever() {
        #expect(decodeError("/dev/zero")?.reason == .notARegularFile)
    }

    @Test func ioErrorCarriesTheSystemMessage() {
        let longName = directory.file(String(repeating: "x", count: 300) + ".wav")
        let error = decodeError(longName)
        #expect(error?.reason == .ioError(errno: ENAMETOOLONG))
        #expect(error?.detail == "File name too long")
        #expect(SoundFileReader.openError(errno: EIO, path: "x").reason == .ioError(errno: EIO))
    }

    @Test func nonFileURL() {
        let error = #expect(throws: SoundError.self) {
            try SoundDecoder().decode(contentsOf: URL(string: "https://example.org/a.wav")!)
        }
        #expect(error?.reason == .notFound)
        #expect(error?.source == "https://example.org/a.wav")
    }

    @Test func everyMessageNamesTheSourceAndTheCause() {
        let error = SoundError(.exceedsMaximumDuration(seconds: 31.5, limit: 30), source: "/x/a.wav")
        #expect(error.description == "/x/a.wav: lasts 31.5 s, longer than the 30.0 s limit for system sounds")
        let withDetail = SoundError(.notASoundFile, source: "/x/b", detail: "Format not recognised.")
        #expect(withDetail.description == "/x/b: not a sound file in any format libsndfile reads (Format not recognised.)")
    }
}

/// In-memory samples get the same checks as files.
@Suite struct InMemoryValidationTests {
    let decoder = SoundDecoder()

    func reason(_ samples: [Float], rate: Int = 48_000, channels: Int = 1) -> SoundError.Reason? {
        let error = #expect(throws: SoundError.self) {
            try decoder.decode(samples: samples, sampleRate: rate, channelCount: channels, name: "beep")
        }
        #expect(error?.source == "beep")
        return error?.reason
    }

    @Test func invalidRates() {
        #expect(reason([0.1], rate: 0) == .invalidSampleRate(0, supported: SoundDecoder.supportedSampleRates))
        #expect(reason([0.1], rate: 10_000_000) == .invalidSampleRate(10_000_000, supported: SoundDecoder.supportedSampleRates))
        #expect(reason([0.1], rate: -44_100) == .invalidSampleRate(-44_100, supported: SoundDecoder.supportedSampleRates))
    }

    @Test func invalidChannelCounts() {
        #expect(reason([0.1], channels: 0) == .invalidSamples("0 channels"))
        #expect(reason(Array(repeating: 0.1, count: 64), channels: 64) == .tooManyChannels(64, limit: 8))
    }

    @Test func partialFrames() {
        #expect(reason([0.1, 0.2, 0.3], channels: 2) == .invalidSamples("3 samples are not a whole number of 2-channel frames"))
    }

    @Test func nonFiniteSamples() {
        #expect(reason([0.1, .nan]) == .invalidSamples("sample 1 is nan"))
        #expect(reason([.infinity]) == .invalidSamples("sample 0 is inf"))
    }

    @Test func empty() {
        #expect(reason([]) == .empty)
    }
}
