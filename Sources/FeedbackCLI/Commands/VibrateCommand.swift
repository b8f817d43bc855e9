import Dispatch
import Synchronization
import FeedbackServices

/// `feedbackctl vibrate`: vibrate once, or a pattern, and wait until it is over.
enum VibrateCommand: Subcommand {
    static let name = "vibrate"
    static let abstract = "Vibrate once or in a pattern"
    static let discussion: [Paragraph] = [
        """
        Plays on the first vibrator (or the one --device names) and returns when the vibration
        is over. Without options it plays the buzz of kSystemSoundID_Vibrate (400 ms).
        """
    ]

    static let duration = Option("--duration", value: "MS", .number, help: "Vibrate once for MS milliseconds (default 400)")
    static let intensity = Option(
        "--intensity", value: "X", .number, help: "Strength 0...1 (default 1); scales a pattern's amplitudes")
    static let pattern = Option(
        "--pattern", value: "MS,...", .number,
        help: """
            Timings as Android's VibrationEffect.createWaveform: without
            --amplitudes they alternate off and on, starting with off
            """)
    static let amplitudes = Option("--amplitudes", value: "A,...", .number, help: "One strength 0...1 per timing; 0 is a pause")
    static let device = Option("--device", value: "PATH|NAME", .file, help: "The device node, or a text its name contains")
    static let inputDirectory = Option(
        "--input-dir", value: "DIR", .directory, help: "Look for devices in DIR instead of /dev/input")
    static let options = [duration, intensity, pattern, amplitudes, device, inputDirectory]
    static let usage: [[UsageItem]] = [
        [.optional([duration, intensity, device])],
        [.required(pattern), .optional([amplitudes, intensity, device])],
    ]

    static let exitStatus: String? = """
        0 when the vibration played to its end; 64 bad options; 69 no vibrator (or it went
        away); 77 the device node may not be opened (add the user to the 'input' group or
        give the device a udev 'uaccess' tag).
        """

    static let examples = [
        "feedbackctl vibrate --duration 150 --intensity 0.5",
        "feedbackctl vibrate --pattern 0,200,100,200",
        "feedbackctl vibrate --pattern 100,50,100 --amplitudes 1,0,0.4 --device /dev/input/event4",
    ]

    static func run(_ parser: inout ArgumentParser, output: inout String) throws(CommandError) {
        let duration = try parser.value(Self.duration).map { text throws(CommandError) in try milliseconds(text, option: Self.duration) }
        let intensity = try parser.value(Self.intensity).map { text throws(CommandError) in try strength(text, option: Self.intensity) } ?? 1
        let timings = try parser.value(Self.pattern).map { text throws(CommandError) in
            try list(text, option: Self.pattern).map { item throws(CommandError) in try milliseconds(item, option: Self.pattern) }
        }
        let amplitudes = try parser.value(Self.amplitudes).map { text throws(CommandError) in
            try list(text, option: Self.amplitudes).map { item throws(CommandError) in try strength(item, option: Self.amplitudes) }
        }
        let device = parser.value(Self.device)
        let directory = parser.value(Self.inputDirectory) ?? Vibration.inputDirectory

        if duration != nil && timings != nil {
            throw CommandError.usage("\(Self.duration.name) and \(Self.pattern.name) exclude each other")
        }
        if amplitudes != nil && timings == nil { throw CommandError.usage("\(Self.amplitudes.name) needs \(Self.pattern.name)") }
        let pattern: VibrationPattern
        do {
            if let timings {
                pattern = try .waveform(timings: timings, amplitudes: amplitudes)
            } else if let duration {
                pattern = try .oneShot(duration: duration)
            } else {
                pattern = .systemVibrate
            }
        } catch {
            throw CommandError.usage(describe(error))
        }

        let selector: VibratorSelector =
            switch device {
            case nil: .first
            case let text? where text.hasPrefix("/"): .path(text)
            case let text?: .name(text)
            }
        let vibration = try Vibration.start(pattern, on: selector, directory: directory, intensity: intensity)
        try vibration.wait()
    }

    private static func list(_ text: String, option: Option) throws(CommandError) -> [String] {
        let items = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingSpaces }
        guard !items.isEmpty, !items.contains("") else { throw CommandError.usage("\(option.name) needs a comma-separated list") }
        return items
    }

    private static func milliseconds(_ text: String, option: Option) throws(CommandError) -> Int {
        guard let value = Int(text), value >= 0, value <= 30_000 else {
            throw CommandError.usage("\(option.name) takes milliseconds 0...30000, not '\(text)'")
        }
        return value
    }

    private static func strength(_ text: String, option: Option) throws(CommandError) -> Double {
        guard let value = Double(text), (0...1).contains(value) else {
            throw CommandError.usage("\(option.name) takes a strength 0...1, not '\(text)'")
        }
        return value
    }

    private static func describe(_ error: VibrationPattern.Invalid) -> String {
        switch error {
        case .empty: "the pattern never vibrates"
        case .negativeDuration(let value): "negative duration \(value)"
        case .amplitudeCountMismatch(let timings, let amplitudes):
            "--pattern has \(timings) timings but --amplitudes has \(amplitudes) values"
        case .intensityOutOfRange(let value): "intensity \(value) is outside 0...1"
        case .repeatIndexOutOfRange(let index): "repeat index \(index) is outside the pattern"
        }
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String { String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()) }
}

/// A vibration a command started and waits for (`vibrate`, `fire --vibrate`).
struct Vibration {
    /// Where vibrators are looked for unless `--input-dir` says otherwise.
    static let inputDirectory = "/dev/input"

    private let engine: HapticEngine
    private let playback: HapticPlayback
    private let done: DispatchSemaphore
    private let result: Result

    /// Opens the vibrator `selector` picks and starts `pattern` on it, unless a signal already
    /// asked the command to stop (`feedbackctl stop` finds it through `ActivePlayers`, which
    /// `FeedbackCommand.main` announced at start).
    static func start(
        _ pattern: VibrationPattern, on selector: VibratorSelector = .first, directory: String = inputDirectory,
        intensity: Double = 1
    ) throws(CommandError) -> Vibration {
        let engine: HapticEngine
        do {
            engine = try HapticEngine(selector, discovery: VibratorDiscovery(directory: directory))
        } catch {
            throw CommandError(hapticsError: error)
        }
        engine.maximumStrength = intensity
        do {
            try Interruption.check()
        } catch {
            engine.shutdown()
            engine.device.close()
            throw error
        }
        let done = DispatchSemaphore(value: 0)
        let result = Result()
        let playback = engine.play(pattern) { completion in
            result.set(completion)
            done.signal()
        }
        return Vibration(engine: engine, playback: playback, done: done, result: result)
    }

    /// Waits until the vibration is over (Ctrl-C stops it first and throws the interruption),
    /// then closes the device.
    func wait() throws(CommandError) {
        defer {
            engine.shutdown()
            engine.device.close()
        }
        try Interruption.wait(for: done) { playback.stop() }
        if case .failed(let error) = result.get() { throw CommandError(hapticsError: error) }
    }

    /// Stops the vibration, waits for it to end and closes the device.
    func stop() {
        playback.stop()
        done.wait()
        done.signal()
        engine.shutdown()
        engine.device.close()
    }

    /// The completion, handed from the engine's thread to the waiting command.
    private final class Result: Sendable {
        private let value = Mutex<HapticCompletion?>(nil)
        func set(_ completion: HapticCompletion) { value.withLock { $0 = completion } }
        func get() -> HapticCompletion? { value.withLock { $0 } }
    }
}
