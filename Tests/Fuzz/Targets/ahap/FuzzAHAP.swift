// libFuzzer target: pattern bytes (AHAP or our own form) → HapticPattern, checked against the bounds a pattern promises:
// refused with an error, or read with every event and curve point inside them. Built and run by
// scripts/fuzz.
import FeedbackServices
import FuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAHAP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let pattern = try? HapticPattern(bytes: bytes, path: "/fuzz/pattern.ahap", directory: "/fuzz") else { return 0 }
    let limit = HapticPattern.Limits.duration
    precondition(pattern.events.count <= HapticPattern.Limits.entries)
    precondition(zip(pattern.events, pattern.events.dropFirst()).allSatisfy { $0.time <= $1.time })
    for event in pattern.events {
        switch event {
        case .transient(let time, let intensity, let sharpness):
            precondition((0...limit).contains(time) && (0...1).contains(intensity) && (0...1).contains(sharpness))
        case .continuous(let time, let duration, let intensity, let sharpness, _):
            precondition(time + duration <= limit && (0...1).contains(intensity) && (0...1).contains(sharpness))
        case .sound(let time, let sound, let volume, let pan, let duration):
            precondition(time + (duration ?? 0) <= limit && (0...1).contains(volume) && (-1...1).contains(pan))
            switch sound {
            case .file(let path): precondition(path.hasPrefix("/") && path.utf8.count <= HapticPattern.Limits.textLength + 6)
            case .event(let name): precondition(!name.isEmpty && name.utf8.count <= HapticPattern.Limits.textLength)
            case .id: break
            }
        case .light(let time, let duration, _, let brightness, let frequency):
            precondition(time + duration <= limit && brightness > 0 && brightness <= 1)
            precondition(frequency == 0 || LEDBlinkPattern.frequencyRange.contains(frequency))
        }
    }
    precondition(pattern.curves.reduce(0) { $0 + $1.points.count } <= HapticPattern.Limits.totalCurvePoints)
    for curve in pattern.curves {
        precondition(!curve.points.isEmpty && curve.points.count <= HapticPattern.Limits.curvePoints)
        precondition(zip(curve.points, curve.points.dropFirst()).allSatisfy { $0.time <= $1.time && $1.time <= limit })
        precondition(curve.points.allSatisfy { (-1...1).contains($0.value) })
    }
    precondition(pattern.duration <= limit + HapticPattern.transientDuration)
    // The haptic lane as motor steps: every intensity 0…1 (VibrationPattern refuses any other),
    // no longer than the pattern.
    if let steps = pattern.vibrationPattern?.steps {
        precondition(steps.reduce(0) { $0 + $1.duration } <= Int((pattern.duration * 1000).rounded(.up)) + 1_000)
    }
    for level in pattern.levels(at: [0, pattern.duration / 2, pattern.duration]) {
        precondition(level.intensity.map { (0...1).contains($0) } ?? true && level.sharpness.map { (0...1).contains($0) } ?? true)
    }
    return 0
}

/// The program's entry (SwiftPM names an executable's `main` `MODULE_main`): libFuzzer's driver.
@_cdecl("fuzz_ahap_main")
func fuzzMain(_ argc: CInt, _ argv: ArgumentVector) -> CInt { runFuzzer(argc, argv, fuzzAHAP) }
