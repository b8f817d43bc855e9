import FeedbackServices
import Glibc
import Synchronization

/// Collects the completions of plays, to wait for them and to check each came exactly once.
final class Completions: Sendable {
    private let received = Lock<[Int: [HapticCompletion]]>([:])
    private let times = Lock<[Int: Int64]>([:])

    func handler(_ key: Int) -> @Sendable (HapticCompletion) -> Void {
        { completion in
            let now = monotonicMicroseconds()
            self.received.withLock { $0[key, default: []].append(completion) }
            self.times.withLock { $0[key] = $0[key] ?? now }
        }
    }

    /// Waits up to `timeout` ms for the completion of `key`.
    func wait(_ key: Int, timeout: Int = 5000) throws(CaseFailure) -> HapticCompletion {
        let deadline = monotonicMicroseconds() + Int64(timeout) * 1000
        while monotonicMicroseconds() < deadline {
            if let first = received.withLock({ $0[key]?.first }) { return first }
            usleep(1000)
        }
        throw CaseFailure("no completion for play \(key) within \(timeout) ms")
    }

    func all(_ key: Int) -> [HapticCompletion] { received.withLock { $0[key] ?? [] } }
    func time(_ key: Int) -> Int64? { times.withLock { $0[key] } }
}

/// The monotonic clock in microseconds, the unit of the device program's log stamps.
func monotonicMicroseconds() -> Int64 {
    Int64(MonotonicClock.nanoseconds / 1_000)
}

func sleepMilliseconds(_ milliseconds: Int) { usleep(UInt32(milliseconds * 1000)) }

/// The CPU time this process's threads have used (user and system), in milliseconds.
func processCPUMilliseconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let milliseconds = { (time: timeval) in Double(time.tv_sec) * 1000 + Double(time.tv_usec) / 1000 }
    return milliseconds(usage.ru_utime) + milliseconds(usage.ru_stime)
}

func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws(CaseFailure) {
    if !condition { throw CaseFailure(message()) }
}

/// The start of every played step, from the log: a PLAY's stamp plus the delay of the effect
/// version that was uploaded last before it.
struct StepStart {
    var time: Int64
    var upload: DeviceProgram.Record
}

func stepStarts(_ records: [DeviceProgram.Record]) -> [StepStart] {
    var current: [Int: DeviceProgram.Record] = [:]
    var starts: [StepStart] = []
    for record in records {
        switch record.kind {
        case "UPLOAD": current[record.id] = record
        case "PLAY":
            if let upload = current[record.id] {
                starts.append(StepStart(time: record.time + Int64(upload.int("delay")) * 1000, upload: upload))
            }
        default: break
        }
    }
    return starts.sorted { $0.time < $1.time }
}

/// Checks the steps started at `offsets` (ms) from the first, within ±`tolerance` ms; returns the
/// largest error and every step's error, in ms.
func checkSchedule(_ starts: [StepStart], offsets: [Int], tolerance: Double = 3) throws -> Timing {
    try expect(starts.count == offsets.count, "expected \(offsets.count) step starts, got \(starts.count)")
    let origin = starts[0].time
    var worst = 0.0
    var errors: [Double] = []
    for (start, offset) in zip(starts, offsets) {
        let error = Double(start.time - origin) / 1000 - Double(offset)
        worst = max(worst, abs(error))
        errors.append(error)
        let all = starts.map { Double($0.time - origin) / 1000 }
        if abs(error) > tolerance {
            throw TimingMiss(description: "step at \(offset) ms started \(format(error)) ms off schedule (starts: \(all.map(format)))")
        }
    }
    return Timing(worst: worst, errors: errors)
}

/// How far the steps started from their schedule, in ms.
struct Timing: CustomStringConvertible {
    var worst: Double
    var errors: [Double]
    var description: String {
        "max step error \(format(worst)) ms (steps: \(errors.map(format).joined(separator: ", ")))"
    }
}

func format(_ milliseconds: Double) -> String { "\((milliseconds * 1000).rounded() / 1000)" }

/// A step outside its ±3 ms window. Under TCG the host's scheduler can hold a virtual CPU for
/// several milliseconds when the machine is busy, so a case that misses only this is run again
/// (and the miss reported); any other failure is final.
struct TimingMiss: Error, CustomStringConvertible {
    var description: String
}
