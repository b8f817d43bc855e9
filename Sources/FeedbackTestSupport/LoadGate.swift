import Glibc

/// Keeps the tests that load the machine hardest (the daemon suite's floods: thousands of D-Bus
/// calls, 4 MiB messages, a hundred clients at once) from running while another suite records a
/// sound to compare it with what was played. Recordings through pipewire-pulse glitched beside them
/// with no underflow of our stream (a CI run: correlation 0.9899 with 0 underflows, just as the
/// bad-input flood started; whole runs here: 0.28 and a level 0.13 off, at the same moments): the
/// gap is in the server's graph or the recorder, not in what is tested.
///
/// Measurements share the gate (`whileMeasuring`), a flood holds it alone (`asHeavyLoad`), and a
/// waiting flood goes before measurements that come after it. Neither side waits for the other
/// inside its body, so the gate cannot deadlock; a flood makes measurements wait for at most its
/// own length (the longest, 16 s).
private final class LoadGate: @unchecked Sendable {
    // Locking rule: the rwlock is only used through pthread_rwlock_* calls, from any thread.
    let lock: UnsafeMutablePointer<pthread_rwlock_t> = {
        let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
        return lock
    }()

    static let shared = LoadGate()
}

/// Runs `body`, which records a sound to compare, while no heavy-load test runs.
public func whileMeasuring<Result>(_ body: () throws -> Result) rethrows -> Result {
    pthread_rwlock_rdlock(LoadGate.shared.lock)
    defer { pthread_rwlock_unlock(LoadGate.shared.lock) }
    return try body()
}

/// Runs `body`, a test that loads the machine hard, while no sound is being recorded to compare.
public func asHeavyLoad<Result>(_ body: () throws -> Result) rethrows -> Result {
    pthread_rwlock_wrlock(LoadGate.shared.lock)
    defer { pthread_rwlock_unlock(LoadGate.shared.lock) }
    return try body()
}
