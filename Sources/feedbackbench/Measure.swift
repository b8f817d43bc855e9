import FeedbackServices
import FeedbackTestSupport
import FoundationEssentials
import Glibc

/// The seconds `body` takes, once.
func measure(_ body: () throws -> Void) rethrows -> Double {
    let start = MonotonicClock.now
    try body()
    return MonotonicClock.now - start
}

/// Summary statistics of a set of timings.
struct Timings {
    var samples: [Double]

    var median: Double { percentile(0.5) }
    var p90: Double { percentile(0.9) }
    var p99: Double { percentile(0.99) }
    var maximum: Double { samples.max() ?? .nan }

    /// "median 4.1 ms  p90 4.9 ms  p99 6.0 ms  max 7.2 ms": a median alone hides modes.
    var summary: String {
        "median \(milliseconds(median))  p90 \(milliseconds(p90))  p99 \(milliseconds(p99))  max \(milliseconds(maximum))"
    }

    func percentile(_ fraction: Double) -> Double {
        let sorted = samples.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))
        return sorted[index]
    }
}

/// Runs `body` `count` times, interleaved with nothing else, and returns every timing.
func repeatMeasure(_ count: Int, _ body: () throws -> Void) rethrows -> Timings {
    var samples: [Double] = []
    for _ in 0..<count { samples.append(try measure(body)) }
    return Timings(samples: samples)
}

/// Runs a program to completion, its output discarded, in this process's environment or in
/// `environment` (`NAME=value` entries); returns -1 if it cannot be run.
func runProgram(_ path: String, _ arguments: [String], environment: [String]? = nil) -> Int32 {
    guard let pid = spawnProgram(path, arguments, environment: environment),
        let (_, status) = try? System.waitpid(pid)
    else { return -1 }
    return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
}

/// Starts a program (found on PATH) with its standard output and error to /dev/null, in this
/// process's environment or in `environment` (`NAME=value` entries); its process ID, or nil if
/// it could not be started. The caller waits for it.
func spawnProgram(_ path: String, _ arguments: [String], environment: [String]? = nil) -> pid_t? {
    var pid: pid_t = 0
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    defer { posix_spawn_file_actions_destroy(&actions) }
    let envp = environment.map { $0.map { strdup($0) } + [nil] }
    defer { envp?.forEach { free($0) } }
    let spawned = envp.map { posix_spawnp(&pid, path, &actions, nil, argv, $0) } ?? posix_spawnp(&pid, path, &actions, nil, argv, environ)
    return spawned == 0 ? pid : nil
}

/// Whether a program is on PATH.
func programExists(_ name: String) -> Bool {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").contains { access("\($0)/\(name)", X_OK) == 0 }
}

func makeTemporaryDirectory() -> String {
    var template = Array("/tmp/feedbackbench-XXXXXX".utf8CString)
    guard let path = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        fatalError("mkdtemp failed: \(Errno.current)")
    }
    return String(cString: path)
}

func removeTree(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

/// Milliseconds with two decimals.
/// median, p90, p99 and max in microseconds, for the calls that take a few.
func microsecondSummary(_ timings: Timings) -> String {
    "median \(microseconds(timings.median))  p90 \(microseconds(timings.p90))  p99 \(microseconds(timings.p99))  max \(microseconds(timings.maximum))"
}

func milliseconds(_ seconds: Double) -> String {
    let value = (seconds * 100_000).rounded() / 100
    return "\(value) ms"
}

/// A ratio with two decimals.
func ratio(_ ours: Double, _ reference: Double) -> String {
    "\((ours / reference * 100).rounded() / 100)×"
}

/// One figure: ours beside the reference, the ratio, and the target it is held to.
func report(_ title: String, ours: (String, Timings), reference: (String, Timings), target: Double) {
    let value = ours.1.median / reference.1.median
    let verdict = value <= target ? "meets" : "MISSES"
    print(title)
    print("  \(padded(ours.0)) median \(milliseconds(ours.1.median))")
    print("  \(padded(reference.0)) median \(milliseconds(reference.1.median))")
    print("  ratio \(ratio(ours.1.median, reference.1.median)) (target ≤ \(target)×: \(verdict))")
}

/// `text` padded with spaces to a column of 44.
func padded(_ text: String, to width: Int = 44) -> String {
    text + String(repeating: " ", count: max(0, width - text.count))
}

/// Writes 30 s of 16-bit stereo at `rate`: left a 440 Hz tone plus a slow sweep, right 660 Hz,
/// at the given peak levels (left tone, sweep, right tone).
func writeTwoTones(to path: String, rate: Int, levels: (Double, Double, Double)) {
    let frames = 30 * rate
    var samples = [Float](repeating: 0, count: frames * 2)
    for frame in 0..<frames {
        let t = Double(frame) / Double(rate)
        samples[frame * 2] = Float(levels.0 * sin(2 * .pi * 440 * t) + levels.1 * sin(2 * .pi * (200 + 50 * t) * t))
        samples[frame * 2 + 1] = Float(levels.2 * sin(2 * .pi * 660 * t))
    }
    do {
        let buffer = try SoundDecoder(sampleRate: rate, maximumDuration: nil)
            .decode(samples: samples, sampleRate: rate, channelCount: 2)
        try SoundFileWriter.write(buffer, to: path, format: .wav16)
    } catch {
        fatalError("cannot write the test signal: \(error)")
    }
}

/// Times `sox` with `arguments`, or prints that it is missing (naming `figure` and our median)
/// and returns nil: without the reference there is no ratio to give.
func soxTimings(_ arguments: [String], iterations: Int, figure: String, ours: Timings) -> Timings? {
    guard programExists("sox") else {
        print("\(figure): ours median \(milliseconds(ours.median)); sox is not installed, no ratio")
        return nil
    }
    return repeatMeasure(iterations) {
        guard runProgram("sox", arguments) == 0 else { fatalError("sox failed") }
    }
}

/// The benchmarks' private PulseAudio server (null sink, one recorder on its monitor for the whole
/// run), with `PULSE_SERVER` pointing at it so that libcanberra, paplay and feedbackctl use it too;
/// nil, after saying why under `figure`, when none can be started.
func benchmarkServer(for figure: String) -> PulseAudioTestServer? {
    do {
        let server = try PulseAudioTestServer.shared(named: "bench")
        setenv("PULSE_SERVER", server.server, 1)
        return server
    } catch {
        print("\(figure): no PulseAudio server could be started (\(error)); run scripts/setup")
        return nil
    }
}

/// 40 ms at 1 kHz that starts at full level, so its first sample is its onset.
func makeBeep() -> PCMBuffer {
    let samples = (0..<1_920).map { Float(0.5 * cos(2 * Double.pi * 1_000 * Double($0) / 48_000)) }
    do {
        return try SoundDecoder().decode(samples: samples, sampleRate: 48_000, channelCount: 1)
    } catch {
        fatalError("\(error)")
    }
}
