import Dispatch
import Synchronization
import FeedbackServices

/// `feedbackctl vibrate`: vibrate once, or a pattern, and wait until it is over (or leave it
/// running with `--no-wait`).
enum VibrateCommand: Subcommand {
    static let name = "vibrate"
    static let abstract = "Vibrate once or in a pattern"
    static let discussion: [Paragraph] = [
        """
        Plays on the first vibrator (or the one --device names) and returns when the vibration
        is over, unless --no-wait is given. Without options it plays the buzz of
        kSystemSoundID_Vibrate (400 ms). Ctrl-C (or 'feedbackctl stop') stops it, then exits
        with 130 (143). The feedback profile does not apply: this command is asked for by hand.
        """,
        """
        When feedbackservicesd runs, it vibrates (not with --device or --input-dir, which name a
        vibrator of their own, nor in the silent profile, which the service obeys): on the
        vibrator it holds open, and --no-wait needs no background process. Output and exit
        status are the same either way; what the service cannot play (no vibrator, a pattern
        over its bounds: 64 steps, 10 s a step, 60 s in all) is played here. --no-daemon (or
        FEEDBACKCTL_NO_DAEMON=1) always plays here.
        """,
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
    static let primitive = Option(
        "--primitive", value: "NAME", .oneOf(HapticPrimitive.allCases.map(\.rawValue)),
        help: """
            A named effect: click, double-click, heavy-click, tick, thud,
            quick-rise, slow-rise, quick-fall (--intensity scales it)
            """)
    static let device = Option("--device", value: "PATH|NAME", .file, help: "The device node, or a text its name contains")
    static let inputDirectory = Option(
        "--input-dir", value: "DIR", .directory, help: "Look for devices in DIR instead of /dev/input")
    static let noWait = SoundArguments.noWait.described(
        """
        Return at once; the vibration runs to its end (its errors
        after the start are not reported)
        """)
    static let options = [duration, intensity, pattern, amplitudes, primitive, device, inputDirectory, noWait, DaemonRoute.noDaemon]
    static let usage: [[UsageItem]] = [
        [.optional([duration, intensity, device])],
        [.required(pattern), .optional([amplitudes, intensity, device])],
        [.required(primitive), .optional([intensity, device])],
    ]

    static let exitStatus: String? = """
        0 when the vibration played to its end (or started, with --no-wait); 64 bad options;
        69 no vibrator (or it went away); 77 the device node may not be opened (add the user
        to the 'input' group or give the device a udev 'uaccess' tag); 130/143 stopped by
        Ctrl-C or 'feedbackctl stop'.
        """

    static let examples = [
        "feedbackctl vibrate --duration 150 --intensity 0.5",
        "feedbackctl vibrate --pattern 0,200,100,200",
        "feedbackctl vibrate --pattern 100,50,100 --amplitudes 1,0,0.4 --device /dev/input/event4",
        "feedbackctl vibrate --primitive double-click --intensity 0.7",
        "feedbackctl vibrate --duration 5000 --no-wait && sleep 1 && feedbackctl stop",
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
        let chosenDirectory = parser.value(Self.inputDirectory)
        let directory = chosenDirectory ?? Vibration.inputDirectory
        let noWait = parser.flag(Self.noWait)

        let named = parser.value(Self.primitive)
        if duration != nil && timings != nil {
            throw CommandError.usage("\(Self.duration.name) and \(Self.pattern.name) exclude each other")
        }
        if named != nil && (duration != nil || timings != nil) {
            throw CommandError.usage("\(Self.primitive.name) excludes \(Self.duration.name) and \(Self.pattern.name)")
        }
        if amplitudes != nil && timings == nil { throw CommandError.usage("\(Self.amplitudes.name) needs \(Self.pattern.name)") }
        let primitive = try named.map { name throws(CommandError) in
            guard let primitive = HapticPrimitive(rawValue: name) else {
                throw CommandError.usage(
                    "'\(name.prefix(64))' is not a primitive: \(HapticPrimitive.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return primitive
        }
        let pattern: VibrationPattern
        do {
            if let primitive {
                pattern = try .primitive(primitive, intensity: 1)
            } else if let timings {
                pattern = try .waveform(timings: timings, amplitudes: amplitudes)
            } else if let duration {
                pattern = try .oneShot(duration: duration)
            } else {
                pattern = .systemVibrate
            }
        } catch {
            throw CommandError.usage(describe(error))
        }

        // The service plays on its own vibrator (the first it found), so a chosen one stays here;
        // and it obeys the profile, which this command does not.
        if device == nil, chosenDirectory == nil,
            FeedbackSettings(environment: parser.environment).profile.allowsVibration,
            DaemonRoute.mayUse(environment: parser.environment, forcedOff: parser.flag(DaemonRoute.noDaemon)),
            let route = DaemonRoute(environment: parser.environment),
            let play = route.vibrate(pattern, intensity: intensity, detached: noWait)
        {
            if noWait { return }
            switch try route.wait(for: play) {
            case .finished(let name) where name != "silenced": return
            case .stopped: return
            // The profile became silent meanwhile, or the vibrator failed: played here, this
            // reports what it reports in process.
            case .finished, .failed: break
            case .brokeOff(let why):
                throw CommandError(message: "feedbackservicesd vibrated, then: \(why)", exitCode: .unavailable)
            }
        }

        let selector = Vibration.selector(device)
        if noWait {
            // A vibrator that is missing or may not be opened is reported here, as a waiting run
            // reports it; the detached player then opens it again.
            Vibration.close(try Vibration.open(selector, directory: directory))
            _ = try Detach.relaunch()
            return
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
    /// Without the spaces at either end (by index: `reversed()` views build generic metadata at
    /// run time, a cost paid on the command's path).
    fileprivate var trimmingSpaces: String {
        guard let first = firstIndex(where: { $0 != " " }), let last = lastIndex(where: { $0 != " " }) else { return "" }
        return String(self[first...last])
    }
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
    /// `FeedbackCommand.main` announced at start). A `held` one is made ready and starts at
    /// `release(at:)`.
    static func start(
        _ pattern: VibrationPattern, on selector: VibratorSelector = .first, directory: String = inputDirectory,
        intensity: Double = 1, held: Bool = false
    ) throws(CommandError) -> Vibration {
        let engine = try open(selector, directory: directory)
        engine.maximumStrength = intensity
        do {
            try Interruption.check()
        } catch {
            close(engine)
            throw error
        }
        let done = DispatchSemaphore(value: 0)
        let result = Result()
        let playback = engine.play(pattern, priority: .normal, held: held) { completion in
            result.set(completion)
            done.signal()
        }
        return Vibration(engine: engine, playback: playback, done: done, result: result)
    }

    /// The vibrator a `--device` value names: a device node (a path), a text its name contains,
    /// or (none given) the first.
    static func selector(_ device: String?) -> VibratorSelector {
        switch device {
        case nil: .first
        case let text? where text.hasPrefix("/"): .path(text)
        case let text?: .name(text)
        }
    }

    /// Opens the vibrator `selector` picks in `directory`, with an engine on it.
    static func open(_ selector: VibratorSelector, directory: String) throws(CommandError) -> HapticEngine {
        do {
            return try HapticEngine(selector, discovery: VibratorDiscovery(directory: directory))
        } catch {
            throw CommandError(error)
        }
    }

    /// Stops `engine`'s thread and closes its device.
    static func close(_ engine: HapticEngine) {
        engine.shutdown()
        engine.device.close()
    }

    /// Starts a held vibration at `time` (CLOCK_MONOTONIC seconds; nil or past: at once).
    func release(at time: Double?) { playback.release(at: time) }

    /// Waits until the vibration is over (Ctrl-C stops it first and throws the interruption),
    /// then closes the device.
    func wait() throws(CommandError) {
        defer { Self.close(engine) }
        try Interruption.wait(for: done) { playback.stop() }
        if case .failed(let error) = result.get() { throw CommandError(error) }
    }

    /// Stops the vibration, waits for it to end and closes the device.
    func stop() {
        playback.stop()
        done.wait()
        done.signal()
        Self.close(engine)
    }

    /// The completion, handed from the engine's thread to the waiting command.
    private final class Result: Sendable {
        private let value = Lock<HapticCompletion?>(nil)
        func set(_ completion: HapticCompletion) { value.withLock { $0 = completion } }
        func get() -> HapticCompletion? { value.withLock { $0 } }
    }
}
