import CFeedbackShims
import Dispatch
import Glibc
import Synchronization
import Testing

@testable import FeedbackServices

/// Signals the interrupting handler has taken (a lock-free counter: safe in a signal handler).
private let signalsTaken = Atomic<Int>(0)

/// The platform layer: one EINTR policy, threads, the clock, the eventfd wake.
@Suite(.serialized) struct SupportTests {
    /// What a thread hands back to the test.
    final class Outcome: Sendable {
        let thread = Atomic<UInt>(0)
        let value = Lock<Result<Int, Errno>?>(nil)

        var finished: Bool { value.withLock { $0 != nil } }
    }

    /// Installs a handler for `SIGURG` without `SA_RESTART`, so that a blocking call the signal
    /// lands in fails with `EINTR` instead of being restarted by the kernel. (`SIGURG` is ignored by
    /// default: one that arrives elsewhere does nothing.)
    func interruptWithoutRestart() {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in signalsTaken.add(1, ordering: .relaxed) }
        action.sa_flags = 0
        sigemptyset(&action.sa_mask)
        sigaction(SIGURG, &action, nil)
    }

    /// Records the calling thread in `outcome` and lets `SIGURG` reach it (a thread inherits the
    /// signal mask of the one that started it, and the test runner's threads block most signals).
    static func becomeInterruptible(_ outcome: Outcome) {
        var urgent = sigset_t()
        sigemptyset(&urgent)
        sigaddset(&urgent, SIGURG)
        pthread_sigmask(SIG_UNBLOCK, &urgent, nil)
        outcome.thread.store(pthread_self(), ordering: .releasing)
    }

    /// Signals the thread recorded in `outcome` every 2 ms until it has finished or `limit` passed.
    func interrupt(_ outcome: Outcome, for limit: Double) {
        while outcome.thread.load(ordering: .acquiring) == 0 { usleep(1_000) }
        let deadline = MonotonicClock.now + limit
        while !outcome.finished && MonotonicClock.now < deadline {
            pthread_kill(outcome.thread.load(ordering: .acquiring), SIGURG)
            usleep(2_000)
        }
    }

    @Test func aSignalDoesNotFailABlockingRead() throws {
        interruptWithoutRestart()
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { fds.forEach { close($0) } }
        let outcome = Outcome()
        let before = signalsTaken.load(ordering: .relaxed)
        let reader = try startThread(name: "fbs-test-read") { [fds] in
            Self.becomeInterruptible(outcome)
            var byte: UInt8 = 0
            let got = Result { () throws(Errno) in try System.read(fds[0], into: &byte, count: 1) }
            outcome.value.withLock { $0 = got.map { _ in Int(byte) } }
        }
        interrupt(outcome, for: 0.1)
        var byte: UInt8 = 42
        #expect(write(fds[1], &byte, 1) == 1)
        reader.join()
        #expect(signalsTaken.load(ordering: .relaxed) > before, "the reader was interrupted")
        #expect(outcome.value.withLock { $0 } == .success(42), "the read went on after EINTR")
    }

    @Test func aSignalEndsAPollEarlyAsATimeoutWould() throws {
        interruptWithoutRestart()
        let wake = try EventFD()
        let descriptor = wake.descriptor
        let outcome = Outcome()
        let poller = try startThread(name: "fbs-test-poll") {
            Self.becomeInterruptible(outcome)
            var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
            let got = Result { () throws(Errno) in try System.poll(&fds, timeout: nil) }
            outcome.value.withLock { $0 = got }
        }
        interrupt(outcome, for: 1)
        // Were the signal retried like a read, only this would end the wait.
        wake.signal()
        poller.join()
        #expect(outcome.value.withLock { $0 } == .success(0))
    }

    @Test func writeAllWritesEverythingThroughAPipe() throws {
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let sent = (0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let received = Lock<[UInt8]>([])
        let reader = try startThread(name: "fbs-test-drain") { [fds] in
            var chunk = [UInt8](repeating: 0, count: 4_096)
            while let count = try? System.read(fds[0], into: &chunk, count: chunk.count), count > 0 {
                received.withLock { $0 += chunk[0..<count] }
            }
        }
        try sent.withUnsafeBytes { bytes in try Result { () throws(Errno) in try System.writeAll(fds[1], bytes) }.get() }
        close(fds[1])
        reader.join()
        #expect(received.withLock { $0 } == sent)
    }

    @Test func failuresCarryTheirErrnoAndMessage() {
        #expect(throws: Errno.noSuchFile) { try System.open("/nonexistent/file", O_RDONLY) }
        #expect(Errno.noSuchFile.description == "No such file or directory")
        #expect(throws: Errno(rawValue: EBADF)) { try System.read(-1, into: UnsafeMutableRawPointer(bitPattern: 8)!, count: 0) }
    }

    @Test func anEventFDWakesOnceForManySignals() throws {
        let wake = try EventFD()
        var fds = [pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0)]
        #expect(try System.poll(&fds, timeout: 0) == 0)
        wake.signal()
        wake.signal()
        #expect(try System.poll(&fds, timeout: 0) == 1)
        wake.drain()
        #expect(try System.poll(&fds, timeout: 1_000_000) == 0, "one drain takes every pending wake-up")
    }

    @Test func aThreadRunsNamedAndIsJoined() throws {
        let seen = Lock<(name: String, isCurrent: Bool)?>(nil)
        let handle = Lock<Thread?>(nil)
        // The thread asks for its handle once it is stored (a sleep, before, lost to a creator
        // preempted for longer).
        let stored = DispatchSemaphore(value: 0)
        let thread = try startThread(name: "fbs-test-name") {
            var comm = [UInt8](repeating: 0, count: 32)
            let fd = try? System.open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
            let count = fd.flatMap { try? System.read($0, into: &comm, count: comm.count) } ?? 0
            fd.map { _ = close($0) }
            let name = String(decoding: comm[0..<count], as: UTF8.self)
            stored.wait()
            seen.withLock { $0 = (name, handle.withLock { $0?.isCurrent } ?? false) }
        }
        handle.withLock { $0 = thread }
        stored.signal()
        thread.join()
        #expect(seen.withLock { $0?.name } == "fbs-test-name\n")
        #expect(seen.withLock { $0?.isCurrent } == true)
        #expect(!thread.isCurrent)
    }

    /// `fire`'s library loading: a thread started on another CPU is kept off the CPU
    /// its creator runs on until it runs, then may use all of the creator's CPUs again, as may the
    /// threads it starts.
    @Test func aThreadStartedOnAnotherCPUAvoidsTheCallersThenMayRunAnywhere() throws {
        func cpus(_ set: cpu_set_t) -> [Int] {
            withUnsafeBytes(of: set) { bytes in (0..<bytes.count * 8).filter { bytes[$0 / 8] & (1 << ($0 % 8)) != 0 } }
        }
        var callers = cpu_set_t()
        #expect(fbs_get_affinity(&callers) == 0)
        try #require(cpus(callers).count >= 2, "needs a machine with two CPUs (CI's has two)")

        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        var allowed = cpu_set_t()
        #expect(fbs_attributes_avoid_current_cpu(&attributes, &allowed) == 1)
        var chosen = cpu_set_t()
        #expect(fbs_attributes_affinity(&attributes, &chosen) == 0)
        #expect(cpus(allowed) == cpus(callers), "the caller's whole set, to take back")
        // All but one (the one the caller ran on: it may have moved since, so which is not checked).
        #expect(Set(cpus(chosen)).isSubset(of: cpus(callers)) && cpus(chosen).count == cpus(callers).count - 1)

        let seen = Lock<[Int]?>(nil)
        let thread = try startThread(name: "fbs-test-cpu", onAnotherCPU: true) {
            var running = cpu_set_t()
            guard fbs_get_affinity(&running) == 0 else { return }
            seen.withLock { $0 = cpus(running) }
        }
        thread.join()
        #expect(seen.withLock { $0 } == cpus(callers))
    }

    @Test func theClockMovesForwardInBothUnits() {
        let before = MonotonicClock.nanoseconds
        let seconds = MonotonicClock.now
        let after = MonotonicClock.nanoseconds
        usleep(2_000)
        #expect(MonotonicClock.now - seconds >= 0.002)
        // One clock: the seconds lie between the nanoseconds read around them (to a microsecond,
        // for the two conversions' rounding).
        #expect(Double(before) * 1e-9 - 1e-6 <= seconds && seconds <= Double(after) * 1e-9 + 1e-6, "\(before) \(seconds) \(after)")
    }

    @Test func waitpidReportsAChildsExitStatus() throws {
        var pid: Int32 = 0
        let arguments: [String] = ["/bin/sh", "-c", "exit 3"]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        try #require(posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0)
        let (child, status) = try System.waitpid(pid)
        #expect(child == pid)
        #expect((status >> 8) & 0xff == 3)
    }
}
