import FoundationEssentials
import Glibc
import Synchronization

@_exported import FeedbackTestSupport
@testable import FeedbackServices

/// Test signals.
enum Signal {
    /// `seconds` of a sine per channel (frequencies in Hz, amplitude 0…1), interleaved.
    static func sines(_ frequencies: [Double], amplitude: Double = 0.5, seconds: Double, rate: Int) -> [Float] {
        let frames = Int((seconds * Double(rate)).rounded())
        let channels = frequencies.count
        var samples = [Float](repeating: 0, count: frames * channels)
        for frame in 0..<frames {
            let t = Double(frame) / Double(rate)
            for (channel, frequency) in frequencies.enumerated() {
                samples[frame * channels + channel] = Float(amplitude * sin(2 * .pi * frequency * t))
            }
        }
        return samples
    }

    /// One channel of interleaved samples.
    static func channel(_ channel: Int, of samples: [Float], channels: Int) -> [Float] {
        stride(from: channel, to: samples.count, by: channels).map { samples[$0] }
    }

    /// A PCM buffer holding `samples` as they are (no resampling).
    static func buffer(_ samples: [Float], channels: Int, rate: Int) -> PCMBuffer {
        PCMBuffer(validSamples: samples, channelCount: channels, sampleRate: rate)
    }
}

/// Measurements on signals.
enum Analysis {
    /// The frequency of a sine, from its zero crossings (rising, linearly interpolated) over the
    /// middle of the signal: precise to far below 0.01 Hz over a second.
    static func frequency(of samples: [Float], rate: Int) -> Double {
        let start = samples.count / 10
        let end = samples.count - samples.count / 10
        var crossings: [Double] = []
        for index in start..<(end - 1) where samples[index] < 0 && samples[index + 1] >= 0 {
            let a = Double(samples[index])
            let b = Double(samples[index + 1])
            crossings.append(Double(index) + a / (a - b))
        }
        guard let first = crossings.first, let last = crossings.last, crossings.count > 1 else { return 0 }
        return Double(crossings.count - 1) / ((last - first) / Double(rate))
    }

    /// Root mean square over the middle 80 % of the signal.
    static func rms(_ samples: [Float]) -> Double {
        let middle = samples[(samples.count / 10)..<(samples.count - samples.count / 10)]
        let sum = middle.reduce(0.0) { $0 + Double($1) * Double($1) }
        return (sum / Double(middle.count)).squareRoot()
    }

    /// The amplitude of one frequency (Goertzel): a sine of amplitude A at that frequency gives ≈ A.
    static func amplitude(of frequency: Double, in samples: [Float], rate: Int) -> Double {
        let omega = 2 * .pi * frequency / Double(rate)
        let coefficient = 2 * cos(omega)
        var s1 = 0.0
        var s2 = 0.0
        for sample in samples {
            let s0 = Double(sample) + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
        return 2 * power.squareRoot() / Double(samples.count)
    }

    /// The best normalised cross-correlation of `b` against `a` over lags in `lags`, and that lag.
    static func bestCorrelation(_ a: [Float], _ b: [Float], lags: ClosedRange<Int>) -> (value: Double, lag: Int) {
        var best = (value: -2.0, lag: 0)
        for lag in lags {
            var dot = 0.0, energyA = 0.0, energyB = 0.0
            for index in 0..<a.count {
                let other = index + lag
                guard other >= 0, other < b.count else { continue }
                let x = Double(a[index]), y = Double(b[other])
                dot += x * y
                energyA += x * x
                energyB += y * y
            }
            let value = energyA > 0 && energyB > 0 ? dot / (energyA * energyB).squareRoot() : 0
            if value > best.value { best = (value, lag) }
        }
        return best
    }

    /// The largest absolute difference between two equally long signals.
    static func maximumDifference(_ a: [Float], _ b: [Float]) -> Float {
        zip(a, b).reduce(0) { max($0, abs($1.0 - $1.1)) }
    }
}


/// Runs `body(index)` on `count` new POSIX threads at once and waits for all of them: real
/// threads, unlike `concurrentPerform`, which caps concurrency at the core count.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let threads = (0..<count).map { index in
        do {
            return try startThread(name: "test-\(index)") { body(index) }
        } catch {
            preconditionFailure("cannot start a thread: \(error)")
        }
    }
    for thread in threads { thread.join() }
}

/// The bytes of a file.
func bytes(of path: String) -> [UInt8] {
    FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? []
}

/// The offset of the first occurrence of an ASCII chunk tag in a RIFF/AIFF file.
func offset(of tag: String, in data: [UInt8]) -> Int? {
    let needle = Array(tag.utf8)
    return data.indices.dropLast(needle.count).first { Array(data[$0..<($0 + needle.count)]) == needle }
}

/// Stores a little-endian integer of `size` bytes at `offset`.
func patch(_ data: inout [UInt8], at offset: Int, littleEndian value: UInt32, size: Int) {
    for byte in 0..<size { data[offset + byte] = UInt8((value >> (8 * UInt32(byte))) & 0xff) }
}

/// Runs `write`, which writes into the FIFO at `path`, while another thread reads the FIFO to its
/// end. A FIFO nobody reads is refused (`ENXIO`), so `write` is tried again until the reader has
/// opened its end.
/// - Returns: the bytes the reader got, and what `write` threw, if anything.
func readingFIFO(
    _ path: String, while write: @escaping @Sendable () throws(FileError) -> Void
) -> (bytes: [UInt8], error: FileError?) {
    let received = Lock<[UInt8]>([])
    let failure = Lock<FileError?>(nil)
    onThreads(2) { thread in
        if thread == 0 {
            let fd = open(path, O_RDONLY)
            defer { close(fd) }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let got = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if got <= 0 { return }
                received.withLock { $0 += chunk[..<got] }
            }
        }
        for attempt in 0... {
            do throws(FileError) {
                try write()
                return
            } catch let error where error.errno == ENXIO && attempt < 500 {
                usleep(2_000)
            } catch {
                failure.withLock { $0 = error }
                return
            }
        }
    }
    return (received.withLock { $0 }, failure.withLock { $0 })
}
