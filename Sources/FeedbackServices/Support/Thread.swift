internal import CFeedbackShims
import Dispatch
import Glibc

/// A thread of our own (`pthread_create`), for work that must not wait in Dispatch's shared pool:
/// a stream's feeder, the haptic engine's timing loop, the vibrator monitor.
///
/// Thread safety: the handle may be used from any thread; join or detach it exactly once.
package struct Thread: Sendable {
    private let id: pthread_t

    fileprivate init(id: pthread_t) {
        self.id = id
    }

    /// Whether the calling code runs on this thread.
    package var isCurrent: Bool { pthread_equal(id, pthread_self()) != 0 }

    /// Waits until the thread has ended. Never from the thread itself (it would wait forever).
    package func join() {
        pthread_join(id, nil)
    }

    /// Lets the thread end on its own, without anyone joining it.
    package func detach() {
        pthread_detach(id)
    }
}

/// Starts a thread that runs `body`, named `name` for `top -H` and debuggers (a name longer than
/// the kernel's 15 bytes is not set).
/// - Parameter onAnotherCPU: start the thread on one of the caller's CPUs other than the one the
///   caller runs on now (when it may run on more than one), so that it runs beside the caller from
///   its first instruction rather than taking turns with it: a kernel may queue a new thread on
///   its creator's CPU (this project's 2-vCPU test machine does). Once running, the thread may
///   again run on all of the caller's CPUs, and so may the threads it starts. For work that should
///   overlap the caller's: `feedbackctl fire` opening the output while it looks up its sound.
/// - Returns: the thread, to join or detach.
/// - Throws: `Errno` when the system will not start another thread (`EAGAIN`).
package func startThread(
    name: String, onAnotherCPU: Bool = false, _ body: sending @escaping () -> Void
) throws(Errno) -> Thread {
    // Swift 6 cannot pass a capturing closure as a C function pointer: the work travels through
    // the pointer argument instead, retained until the thread has taken it.
    final class Start: @unchecked Sendable {
        // Handed over whole: made here, used only by the new thread.
        let name: String
        let body: () -> Void
        /// The creator's CPUs, for a thread started on another CPU to take back once it runs.
        var allowed: cpu_set_t?
        init(name: String, body: @escaping () -> Void) {
            self.name = name
            self.body = body
        }
    }
    let work = Start(name: name, body: body)
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    if onAnotherCPU {
        var allowed = cpu_set_t()
        if fbs_attributes_avoid_current_cpu(&attributes, &allowed) != 0 { work.allowed = allowed }
    }
    let start = Unmanaged.passRetained(work).toOpaque()
    var id = pthread_t()
    let status = pthread_create(&id, &attributes, { argument in
        let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
        // Running now, on another CPU than its creator's: the kernel keeps it there while that
        // CPU is free, and what it starts (libpulse's or libpipewire's loop) may run anywhere.
        if var allowed = start.allowed { _ = fbs_set_affinity(&allowed) }
        _ = fbs_set_thread_name(start.name)
        start.body()
        return nil
    }, start)
    guard status == 0 else {
        Unmanaged<Start>.fromOpaque(start).release()
        throw Errno(rawValue: status)
    }
    return Thread(id: id)
}

/// Runs `body` on a thread of its own named `name`, detached; on Dispatch's global queue when the
/// system will not start another thread, so that the work is done either way.
/// `onAnotherCPU`: as for `startThread(name:onAnotherCPU:_:)`.
package func startDetachedThread(name: String, onAnotherCPU: Bool = false, _ body: @escaping @Sendable () -> Void) {
    if (try? startThread(name: name, onAnotherCPU: onAnotherCPU, body).detach()) == nil {
        DispatchQueue.global(qos: .userInitiated).async(execute: body)
    }
}
