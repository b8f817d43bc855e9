package import Dispatch

/// Where a piece of work is handed to run: a Dispatch queue (what the public API takes), or the
/// loop of a caller that runs its own (the session service hands completions to its bus thread).
///
/// Why not always a queue: on Linux, the first Dispatch worker of a process starts libdispatch's
/// workqueue monitor, a 1 Hz timer on its manager thread for the rest of the process
/// (swift-corelibs-libdispatch, src/event/workqueue.c, `_dispatch_workq_init_once`), with no
/// setting to turn it off. A service that must make no wake-ups while idle never lets a Dispatch
/// worker start, so its completions travel by `Delivery` instead.
///
/// Thread safety: a value; `deliver` may be called from any thread.
package struct Delivery: Sendable {
    private let handOver: @Sendable (@escaping @Sendable () -> Void) -> Void

    /// A delivery that calls `handOver` with each piece of work; `handOver` must not block and must
    /// run the work exactly once, later or at once.
    package init(_ handOver: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.handOver = handOver
    }

    /// Work runs on `queue` (`async`).
    package static func queue(_ queue: DispatchQueue) -> Delivery {
        Delivery { queue.async(execute: $0) }
    }

    /// Work runs at once, on the thread that delivers it (a play's own thread, the engine's or the
    /// vibrator's): only for work that does no more than hand the result to the caller's own loop.
    package static let immediate = Delivery { $0() }

    /// Hands `work` over.
    package func deliver(_ work: @escaping @Sendable () -> Void) {
        handOver(work)
    }
}
