package import Synchronization

/// The lock every module of this package uses: `Synchronization.Mutex`, or in a ThreadSanitizer
/// build (`scripts/tsan`, `-D FEEDBACKSERVICES_TSAN`) `TSanMutex`, the same lock annotated for TSan.
/// Declared once, here, under a name of its own: a `package` alias named `Mutex` would be ambiguous
/// beside Synchronization's in every module that imports both.
#if FEEDBACKSERVICES_TSAN
    package typealias Lock<Value: ~Copyable> = TSanMutex<Value>
#else
    package typealias Lock<Value: ~Copyable> = Synchronization.Mutex<Value>
#endif

#if FEEDBACKSERVICES_TSAN
import CFeedbackShims

/// `Synchronization.Mutex` as ThreadSanitizer sees it, for the builds `scripts/tsan` makes (with
/// `-D FEEDBACKSERVICES_TSAN`); other builds do not contain it.
///
/// Swift 6.3's `Mutex` locks with a futex TSan does not model, so it reports every access made under
/// the lock as a race. This keeps the real lock and tells TSan what it orders: taking the lock is an
/// acquire, releasing it a release, at the address of the guarded value. Every module locks with
/// `Lock`, which is this type under the same flag, so its code is tested unchanged.
///
/// Thread safety: that of `Synchronization.Mutex`.
package struct TSanMutex<Value: ~Copyable>: ~Copyable, Sendable {
    private let base: Synchronization.Mutex<Value>

    /// A lock guarding `initialValue`, like `Synchronization.Mutex.init(_:)`.
    package init(_ initialValue: consuming sending Value) {
        base = Synchronization.Mutex(initialValue)
    }

    /// Runs `body` with the value under the lock, like `Synchronization.Mutex.withLock(_:)`.
    package borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        // A Mutex is never moved while borrowed, so this address names the lock for as long as it
        // exists. Not the value's: taking that is itself an access TSan would see before the acquire.
        let address = withUnsafePointer(to: self) { UnsafeMutableRawPointer(mutating: $0) }
        return try base.withLock { (value: inout sending Value) throws(E) -> sending Result in
            fbs_tsan_acquire(address)
            defer { fbs_tsan_release(address) }
            return try body(&value)
        }
    }
}

extension TSanMutex where Value: ~Copyable {
    /// Runs `body` with the value under the lock if it is free, without waiting, like
    /// `Synchronization.Mutex.withLockIfAvailable(_:)`; nil when another thread holds it.
    package borrowing func withLockIfAvailable<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
        let address = withUnsafePointer(to: self) { UnsafeMutableRawPointer(mutating: $0) }
        return try base.withLockIfAvailable { (value: inout sending Value) throws(E) -> sending Result in
            fbs_tsan_acquire(address)
            defer { fbs_tsan_release(address) }
            return try body(&value)
        }
    }
}

#endif
