import Foundation
import Glibc
import Testing

import FeedbackServices
import FeedbackTestSupport

/// As a hostile user ran it: `feedbackctl play --loop N --output o.wav S` with
/// the built binary. Each exact input ends with its exit code, in bounded time and small memory;
/// a render of the longest legal length streams; SIGTERM stops a render at once.
@Suite struct RenderLimitBinaryTests {
    /// Whether the memory can be measured: always in CI (where a missing tool is a failure).
    static let measurable = runningInCI || access("/usr/bin/time", X_OK) == 0
    /// Memory a render may take at its peak. The process alone is ~16 MB; a render that held the
    /// whole 10-minute mix in memory would need 230 MB more.
    static let memoryBound = 48 << 20

    let directory = TemporaryDirectory()

    /// Runs feedbackctl under GNU time, which reports its peak resident memory. (The test process
    /// cannot: a child it spawns inherits, at exec, the high-water mark of the test process's own
    /// memory, which the recorders of other suites make hundreds of MB.)
    func runMeasured(_ arguments: [String]) throws -> (status: Int32?, errors: String, peakBytes: Int, seconds: Double) {
        let report = directory.file("time-\(UInt64.random(in: 0...UInt64.max))")
        let started = MonotonicClock.now
        let child = try ChildProcess(
            "/usr/bin/time", ["-f", "%M", "-o", report, feedbackctlBinary] + arguments,
            environment: ProcessInfo.processInfo.environment)
        let status = child.wait(timeout: 60)
        let seconds = MonotonicClock.now - started
        let kilobytes = (try? String(contentsOfFile: report, encoding: .utf8))
            .flatMap { Int($0.split(separator: "\n").last ?? "") }
        return (status, child.errors, (kilobytes ?? .max / 1_024) * 1_024, seconds)
    }

    /// One second of a 440 Hz sine, as 16-bit WAV.
    func source() throws -> String {
        let path = directory.file("second.wav")
        let tone = try SoundDecoder().decode(
            samples: (0..<48_000).map { Float(0.25 * sin(2 * .pi * 440 * Double($0) / 48_000)) }, sampleRate: 48_000,
            channelCount: 1)
        try SoundFileWriter.write(tone, to: path, format: .wav16)
        return path
    }

    /// The overflow (was SIGILL), the 23.8 GB one (was SIGABRT), `Int.max` (was exit 0 with an
    /// empty file) and one second over the limit: exit 65 naming the limit, at once, in little memory.
    @Test(.enabled(if: measurable, "GNU time is not installed (scripts/setup)"),
          arguments: ["192153584101141", "100000", "9223372036854775807", "601"])
    func aLoopCountOverTheLimitIsRefused(count: String) throws {
        let output = directory.file("o-\(count).wav")
        let run = try runMeasured(["play", "--loop", count, "--output", output, try source()])
        #expect(run.status == 65, "\(run.errors)")
        #expect(run.seconds < 2)
        #expect(run.errors.contains("more than the 600 s a rendered file may last"), "\(run.errors)")
        #expect(run.peakBytes < Self.memoryBound, "peak \(run.peakBytes) bytes")
        #expect(access(output, F_OK) != 0, "no file is written")
    }

    /// The longest legal render (600 plays of one second: 115 MB) stays in small memory, and the
    /// file holds every play, sample for sample (read back a block at a time).
    @Test(.enabled(if: measurable, "GNU time is not installed (scripts/setup)"))
    func theLongestLegalRenderStreamsAndIsComplete() throws {
        let source = try source()
        let output = directory.file("ten-minutes.wav")
        let run = try runMeasured(["play", "--loop", "600", "--output", output, source])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.peakBytes < Self.memoryBound, "peak \(run.peakBytes) bytes")

        let played = try PCM16File(path: source)
        #expect(played.channels == 1 && played.frames == 48_000)
        let one = try played.read(frames: 48_000)
        let rendered = try PCM16File(path: output)
        #expect(rendered.channels == 2 && rendered.rate == 48_000)
        #expect(rendered.frames == 600 * 48_000)
        var worst: Int32 = 0
        for _ in 0..<600 {
            let block = try rendered.read(frames: 48_000)
            for frame in 0..<48_000 {
                worst = max(worst, abs(Int32(block[2 * frame]) - Int32(one[frame])))
                worst = max(worst, abs(Int32(block[2 * frame + 1]) - Int32(one[frame])))
            }
        }
        #expect(worst <= 1, "largest difference \(worst) LSB")
    }

    /// SIGTERM during a long render (Ogg Vorbis encodes slowly) ends it within a second with 143;
    /// the file that was there stays, and no temporary file is left.
    @Test func sigtermStopsALongRenderAtOnce() throws {
        let source = try source()
        let output = directory.file("kept.ogg")
        _ = FileManager.default.createFile(atPath: output, contents: Data("old".utf8))
        let child = try ChildProcess(
            feedbackctlBinary, ["play", "--loop", "600", "--output", output, source],
            environment: ProcessInfo.processInfo.environment)
        let deadline = MonotonicClock.now + 10
        while temporaryFiles().isEmpty && MonotonicClock.now < deadline { usleep(5_000) }
        #expect(!temporaryFiles().isEmpty, "the render started")
        usleep(200_000)
        let terminated = terminate(child)
        #expect(terminated.status == 143, "\(child.errors)")
        #expect(terminated.seconds < 1)
        #expect(child.errors == "Error: interrupted; the file was not written\n")
        #expect(FileManager.default.contents(atPath: output) == Data("old".utf8))
        #expect(temporaryFiles().isEmpty)
    }

    private func temporaryFiles() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.contains(".tmp-") }
    }
}

/// A 16-bit PCM WAV file read by hand, a block at a time: the check must not need the whole file
/// in memory, nor trust the decoder whose output it checks.
private final class PCM16File {
    let channels: Int
    let rate: Int
    let frames: Int
    private let handle: FileHandle

    init(path: String) throws {
        handle = try #require(FileHandle(forReadingAtPath: path))
        let header = [UInt8](handle.readData(ofLength: 12))
        #expect(header.count == 12 && String(decoding: header[0..<4], as: UTF8.self) == "RIFF")
        #expect(String(decoding: header[8..<12], as: UTF8.self) == "WAVE")
        var channels = 0, rate = 0, bits = 0
        while true {
            let chunk = [UInt8](handle.readData(ofLength: 8))
            guard chunk.count == 8 else { throw CLITestFailure("no data chunk") }
            let size = Int(Self.littleEndian(chunk[4..<8]))
            let name = String(decoding: chunk[0..<4], as: UTF8.self)
            if name == "data" {
                frames = size / max(1, 2 * channels)
                break
            }
            let body = [UInt8](handle.readData(ofLength: size + size % 2))
            if name == "fmt " {
                #expect(Self.littleEndian(body[0..<2]) == 1, "plain PCM")
                channels = Int(Self.littleEndian(body[2..<4]))
                rate = Int(Self.littleEndian(body[4..<8]))
                bits = Int(Self.littleEndian(body[14..<16]))
            }
        }
        #expect(bits == 16)
        self.channels = channels
        self.rate = rate
    }

    /// The next `frames` frames, interleaved.
    func read(frames: Int) throws -> [Int16] {
        let data = handle.readData(ofLength: frames * channels * 2)
        guard data.count == frames * channels * 2 else { throw CLITestFailure("the file ends early") }
        return data.withUnsafeBytes { raw in
            (0..<(frames * channels)).map { Int16(littleEndian: raw.loadUnaligned(fromByteOffset: 2 * $0, as: Int16.self)) }
        }
    }

    private static func littleEndian(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        bytes.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }
}
