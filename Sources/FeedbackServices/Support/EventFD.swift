internal import CFeedbackShims
import Glibc

/// A counter one thread waits on (in `poll`, or as a PulseAudio io event) and other threads add to,
/// to wake it: Linux `eventfd(2)`, non-blocking and close-on-exec. It owns its descriptor and closes
/// it when it goes, so a thread that may still signal must keep it alive.
///
/// Thread safety: `signal` and `drain` may be called from any thread at once; neither blocks.
package struct EventFD: ~Copyable, Sendable {
    /// The descriptor to wait on for `POLLIN`.
    package let descriptor: Int32

    /// - Throws: `Errno` when no descriptor can be made (`EMFILE`, `ENFILE`, `ENOMEM`).
    package init() throws(Errno) {
        descriptor = fbs_eventfd()
        guard descriptor >= 0 else { throw Errno.current }
    }

    deinit {
        close(descriptor)
    }

    /// Wakes the waiter. The counter cannot fill in practice; if it did (`EAGAIN`), a wake-up
    /// would be pending anyway, so no failure is reported.
    package func signal() {
        var one: UInt64 = 1
        _ = try? System.write(descriptor, from: &one, count: 8)
    }

    /// Takes every wake-up pending (resets the counter), so the next wait sleeps until a new one.
    package func drain() {
        var count: UInt64 = 0
        _ = try? System.read(descriptor, into: &count, count: 8)
    }
}
