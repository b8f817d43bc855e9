import Synchronization

/// A bounded ring of decoded frames that a feeder thread fills ahead of the mixer, for sounds too
/// long to hold whole (music).
///
/// Frames are numbered from 0, the first frame the voice plays; the feeder writes them in order and
/// the mixer reads them by number. The ring keeps `history` frames behind the furthest frame the
/// mixer has asked for, so that re-rendering the region the server has queued (the engine's
/// rewrite-on-change, at most its buffer duration back) reads the very samples it read the first
/// time: the mix stays a pure function of the timeline. Memory is fixed at `capacity` frames,
/// whatever the length of the sound.
///
/// Threads: one feeder writes (`write`, `finish`), one mixer reads (`readableRun`, `noteDemand`).
/// They share only the atomics below; a slot is rewritten only once the mixer can no longer ask
/// for the frame it held (it lies more than `history` frames behind the demand).
package final class StreamingSource: @unchecked Sendable {
    // Locking rule: `storage` is written only by the feeder, at slots for frames >= `decoded` and
    // < `writableLimit`, and read only by the mixer at slots for frames < `decoded` (acquire) and
    // within `capacity - history` of the demand; the atomics order the two. No lock is needed.

    /// Samples per frame: 1 or 2.
    let channelCount: Int
    /// Frames in one pass through the sound at the engine rate (as the file's header tells).
    let frameCount: Int64
    /// Frames the ring holds.
    let capacity: Int
    /// Frames kept behind the mixer's demand for rewrites.
    let history: Int
    private let storage: UnsafeMutablePointer<Float>
    /// Frames written so far (the next frame the feeder writes).
    private let decoded = Atomic<Int64>(0)
    /// One past the furthest frame the mixer has asked for.
    private let demand = Atomic<Int64>(0)
    /// The most frames ever held ahead of the demand, for tests and diagnostics.
    private let aheadHighWater = Atomic<Int64>(0)
    /// Set when the feeder should stop (the voice ended or was dropped).
    private let cancelled = Atomic<Bool>(false)
    /// Times the mixer asked for a frame that was not decoded yet.
    private let starvedRuns = Atomic<Int>(0)

    init(channelCount: Int, frameCount: Int64, capacity: Int, history: Int) {
        precondition(channelCount == 1 || channelCount == 2)
        precondition(history < capacity)
        self.channelCount = channelCount
        self.frameCount = frameCount
        self.capacity = capacity
        self.history = history
        storage = .allocate(capacity: capacity * channelCount)
        storage.initialize(repeating: 0, count: capacity * channelCount)
    }

    deinit { storage.deallocate() }

    // MARK: Mixer side (real-time: no allocation, no lock)

    /// Records that the mixer needs frames up to `frame`, so the feeder may recycle older slots.
    func noteDemand(upTo frame: Int64) {
        demand.max(frame, ordering: .releasing)
    }

    /// The longest run of contiguous decoded samples from `index` on, at most `limit` frames; nil
    /// samples for a run that must be rendered silent (not decoded yet, or before the start).
    func readableRun(at index: Int64, limit: Int64) -> (samples: UnsafePointer<Float>?, count: Int64) {
        if index < 0 { return (nil, min(limit, -index)) }
        let available = decoded.load(ordering: .acquiring)
        guard index < available else {
            starvedRuns.add(1, ordering: .relaxed)
            return (nil, limit)
        }
        guard index >= available - Int64(capacity) else { return (nil, min(limit, available - index)) }
        let slot = Int(index % Int64(capacity))
        let count = min(limit, available - index, Int64(capacity - slot))
        return (UnsafePointer(storage + slot * channelCount), count)
    }

    // MARK: Feeder side

    /// How many frames the feeder may write now without overwriting anything the mixer may still
    /// read.
    var writableFrames: Int {
        let floor = max(0, demand.load(ordering: .acquiring) - Int64(history))
        return Int(max(0, floor + Int64(capacity) - decoded.load(ordering: .relaxed)))
    }

    /// Appends `frameCount` frames (interleaved, `channelCount` per frame); the caller checked
    /// `writableFrames`.
    func write(_ samples: UnsafePointer<Float>, frameCount: Int) {
        var written = 0
        let first = decoded.load(ordering: .relaxed)
        while written < frameCount {
            let slot = Int((first + Int64(written)) % Int64(capacity))
            let run = min(frameCount - written, capacity - slot)
            (storage + slot * channelCount).update(from: samples + written * channelCount, count: run * channelCount)
            written += run
        }
        let total = first + Int64(frameCount)
        decoded.store(total, ordering: .releasing)
        aheadHighWater.max(total - demand.load(ordering: .relaxed), ordering: .relaxed)
    }

    /// Frames written so far.
    var decodedFrames: Int64 { decoded.load(ordering: .acquiring) }

    /// Tells the feeder to stop; called by the engine when the voice is gone.
    func cancel() { cancelled.store(true, ordering: .releasing) }

    /// Whether the feeder should stop.
    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// The most frames ever decoded ahead of what the mixer had asked for.
    var highWaterMark: Int64 { aheadHighWater.load(ordering: .relaxed) }

    /// How often the mixer found a frame not decoded yet.
    var starvations: Int { starvedRuns.load(ordering: .relaxed) }
}
