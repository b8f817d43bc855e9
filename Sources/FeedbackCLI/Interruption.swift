import Dispatch
import Glibc
import Synchronization

/// Ctrl-C and SIGTERM for the commands that play or vibrate: the signal is recorded, the command
/// stops its sound or vibration, and then exits with 130 or 143.
///
/// The handler is installed when the process starts (`FeedbackCommand.main`), before anything
/// plays, so no signal is lost between starting a sound and being ready to stop it, and an
/// inherited "ignored" disposition or blocked mask does not swallow it. A signal handler may only do async-signal-safe
/// work, so it just stores the number in a lock-free atomic that the waiting command polls.
enum Interruption {
    private static let received = Atomic<Int32>(0)

    /// Installs the handler for SIGINT and SIGTERM, and unblocks them: a process started from a
    /// thread that blocks signals (as thread pools do) inherits that mask, and would never see them.
    static func install() {
        var unblock = sigset_t()
        sigemptyset(&unblock)
        for number in [SIGINT, SIGTERM] {
            signal(number) { number in Interruption.received.store(number, ordering: .relaxed) }
            sigaddset(&unblock, number)
        }
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    }

    /// The signal received so far, if any.
    static var receivedSignal: Int32? {
        let number = received.load(ordering: .relaxed)
        return number == 0 ? nil : number
    }

    /// Throws the interruption, saying `message`, if a signal has already arrived (checked before
    /// a sound or a vibration starts, so that one stopped while it was being prepared never starts;
    /// and after a render that a signal stopped).
    static func check(_ message: String = "interrupted before the sound or vibration started") throws(CommandError) {
        guard let number = receivedSignal else { return }
        throw CommandError(message: message, exitCode: number == SIGINT ? .interrupted : .terminated)
    }

    /// How long a stopped sound or vibration may take to report its end before the command exits
    /// without it: the signal is honoured within a second in every state. (Exiting ends it anyway:
    /// the sound server drops the process's stream, the kernel erases its force-feedback effects.)
    static let stopConfirmation = 0.8

    /// Waits for `done`; if a signal arrives first, calls `stop`, waits up to `stopConfirmation`
    /// seconds for `done` after all, and throws the interruption.
    static func wait(for done: DispatchSemaphore, stop: () -> Void) throws(CommandError) {
        while done.wait(timeout: .now() + .milliseconds(10)) == .timedOut {
            guard let number = receivedSignal else { continue }
            stop()
            let confirmed = done.wait(timeout: .now() + stopConfirmation) == .success
            throw CommandError(
                message: confirmed
                    ? "interrupted; the sound or vibration was stopped"
                    : "interrupted; the sound or vibration did not confirm its stop within \(stopConfirmation) s, "
                        + "and ends as the process exits",
                exitCode: number == SIGINT ? .interrupted : .terminated)
        }
    }
}
