import Glibc

/// The one clock for timeouts, deadlines and latency measurements: `CLOCK_MONOTONIC`, which never
/// jumps with the wall clock and is the clock of the kernel's input event stamps.
///
/// Thread safety: reading it is safe from any thread, including the audio thread.
package enum MonotonicClock {
    /// Seconds since an arbitrary fixed point (boot).
    package static var now: Double {
        let time = current()
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }

    /// Nanoseconds since the same point as `now`.
    package static var nanoseconds: UInt64 {
        let time = current()
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    private static func current() -> timespec {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return time
    }
}
