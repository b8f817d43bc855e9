import Synchronization

/// Decoded sounds kept for reuse, within a byte budget; the least recently used go first.
///
/// Each value is stored with the `FileStamp` of the file it was decoded from, and is only returned
/// for the same stamp, so a file edited or replaced since is decoded again. Used for the persistent
/// registry's sounds (`SoundRegistry`) and for theme and file sounds (`FeedbackManager`): without a
/// budget, a long-lived process that plays many different files would keep all of them.
///
/// Thread safety: every method may be called from any thread; the table is behind a lock that is
/// never held while decoding.
final class DecodedSoundCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// The most bytes of samples kept (one value larger than this is not kept at all).
    let byteLimit: Int

    private struct Entry {
        var value: Value
        var stamp: FileStamp
        var bytes: Int
        var lastUse: UInt64
    }

    private struct Table {
        var entries: [Key: Entry] = [:]
        var bytes = 0
        var clock: UInt64 = 0
    }

    private let table = Lock(Table())

    /// A cache keeping at most `byteLimit` bytes.
    init(byteLimit: Int) {
        self.byteLimit = byteLimit
    }

    /// The value stored for `key`, if it was decoded from the file version `stamp`.
    func value(for key: Key, stamp: FileStamp?) -> Value? {
        guard let stamp else { return nil }
        return table.withLock { table -> Value? in
            guard let entry = table.entries[key], entry.stamp == stamp else { return nil }
            table.clock += 1
            table.entries[key]?.lastUse = table.clock
            return entry.value
        }
    }

    /// Keeps `value` (`bytes` of samples, decoded from the file version `stamp`) under `key`,
    /// dropping the least recently used values while the total exceeds the budget.
    func insert(_ value: Value, for key: Key, stamp: FileStamp?, bytes: Int) {
        guard let stamp, bytes <= byteLimit else { return }
        table.withLock { table in
            table.clock += 1
            if let old = table.entries.updateValue(
                Entry(value: value, stamp: stamp, bytes: bytes, lastUse: table.clock), forKey: key)
            {
                table.bytes -= old.bytes
            }
            table.bytes += bytes
            while table.bytes > byteLimit, let oldest = table.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                table.bytes -= oldest.value.bytes
                table.entries[oldest.key] = nil
            }
        }
    }

    /// Forgets `key`.
    func remove(_ key: Key) {
        table.withLock { table in
            if let old = table.entries.removeValue(forKey: key) { table.bytes -= old.bytes }
        }
    }

    /// Forgets everything.
    func removeAll() {
        table.withLock { $0 = Table() }
    }

    /// The bytes kept now.
    var byteCount: Int { table.withLock { $0.bytes } }
}
