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
/// - Returns: the thread, to join or detach.
/// - Throws: `Errno` when the system will not start another thread (`EAGAIN`).
package func startThread(name: String, _ body: sending @escaping () -> Void) throws(Errno) -> Thread {
    // Swift 6 cannot pass a capturing closure as a C function pointer: the work travels through
    // the pointer argument instead, retained until the thread has taken it.
    final class Start: @unchecked Sendable {
        // Handed over whole: made here, used only by the new thread.
        let name: String
        let body: () -> Void
        init(name: String, body: @escaping () -> Void) {
            self.name = name
            self.body = body
        }
    }
    let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
    var id = pthread_t()
    let status = pthread_create(&id, nil, { argument in
        let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
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
package func startDetachedThread(name: String, _ body: @escaping @Sendable () -> Void) {
    if (try? startThread(name: name, body).detach()) == nil {
        DispatchQueue.global(qos: .userInitiated).async(execute: body)
    }
}
