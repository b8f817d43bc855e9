public import Dispatch
import Synchronization

/// Renders plays into a sound file instead of a sound server: the same timeline and mixer as the
/// engine, run as fast as the CPU allows.
///
/// Plays start at the output's cursor (0 s at first; `advance(by:)` moves it), so plays issued one
/// after another without advancing overlap, as they would on a server; stops, fades and level
/// changes also take effect at the cursor. `finish()` renders until the last sound has ended,
/// writes the file atomically, and completes every play: `.finished`, or `.stopped` for a sound
/// that repeats forever (it is cut where the file ends) or was stopped.
///
/// Thread safety: every method may be called from any thread.
public final class FileOutput: AudioOutput, TimelineControl {
    public let name: String
    /// Where `finish()` writes.
    public let path: String
    /// The file's format.
    public let format: SoundFileFormat
    /// The rate sounds must have and the file gets.
    public let sampleRate: Int

    private struct State {
        var cursor: Int64 = 0
        var timeline: Timeline
        var handles: [UInt64: PlaybackHandle] = [:]
        var finished = false
    }

    private let state: Mutex<State>

    /// Creates an output that will write `path` in `format` (16-bit WAV by default) at `sampleRate`.
    public init(path: String, format: SoundFileFormat = .wav16, sampleRate: Int = 48_000) {
        self.path = path
        self.format = format
        self.sampleRate = sampleRate
        name = "file \(path)"
        // The whole timeline is rendered at the end, so no envelope point may be forgotten.
        state = Mutex(State(timeline: Timeline(sampleRate: sampleRate, history: nil)))
    }

    /// The file's rate: a buffer at another rate fails `.unsupportedSound`.
    public var requiredSampleRate: Int? { sampleRate }

    /// Moves the cursor: plays after this start `seconds` later.
    public func advance(by seconds: Double) {
        state.withLock { $0.cursor += Int64(seconds * Double(sampleRate)) }
    }

    @discardableResult
    public func play(
        _ buffer: PCMBuffer, options: PlaybackOptions = PlaybackOptions(), queue: DispatchQueue = .global(),
        completion: (@Sendable (PlaybackEnd) -> Void)? = nil
    ) -> PlaybackHandle {
        play(.buffer(buffer), from: 0, options: options, queue: queue, completion: completion)
    }

    /// Places `source` on the timeline at the cursor, `offset` seconds in. A streamed file is
    /// decoded whole first (the file is rendered faster than a stream could be read).
    @discardableResult
    public func play(
        _ source: VoiceSource, from offset: Double, options: PlaybackOptions = PlaybackOptions(),
        queue: DispatchQueue = .global(), completion: (@Sendable (PlaybackEnd) -> Void)? = nil
    ) -> PlaybackHandle {
        let voice: (samples: VoiceSamples, offset: Int64)
        do {
            voice = try source.samples(at: sampleRate, from: offset, looping: options.playCount != 1, streaming: false)
        } catch {
            return PlaybackHandle.failed(error, queue: queue, completion: completion)
        }
        let handle = PlaybackHandle(id: nextPlaybackID(), control: self, queue: queue, completion: completion)
        let accepted = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.timeline.apply(
                .start(id: handle.id, samples: voice.samples, offset: voice.offset, options: options), at: state.cursor)
            state.handles[handle.id] = handle
            return true
        }
        if !accepted { handle.end(.failed(PlaybackError(.outputClosed, detail: "the file was already written"))) }
        return handle
    }

    func send(_ command: Timeline.Command) {
        state.withLock { $0.timeline.apply(command, at: $0.cursor) }
    }

    /// Renders everything played so far and writes the file.
    /// - Returns: the file's length in seconds.
    /// - Throws: `SoundError` if the file cannot be written; every play then ends `.failed`.
    @discardableResult
    public func finish() throws(SoundError) -> Double {
        var (timeline, handles, cursor) = state.withLock { state in
            state.finished = true
            defer { state.handles.removeAll() }
            return (state.timeline, state.handles, state.cursor)
        }
        let lastEnd = timeline.voices.lazy.map(\.end).filter { $0 != .max }.max() ?? 0
        let length = Int(max(cursor, lastEnd))
        var samples = [Float](repeating: 0, count: length * 2)
        samples.withUnsafeMutableBufferPointer { output in
            let block = 4_096
            var frame = 0
            while frame < length {
                let count = min(block, length - frame)
                timeline.render(from: Int64(frame), frames: count, into: output.baseAddress! + frame * 2)
                frame += count
            }
        }
        do {
            let buffer = PCMBuffer(validSamples: samples, channelCount: 2, sampleRate: sampleRate)
            try SoundFileWriter.write(buffer, to: path, format: format)
        } catch {
            for handle in handles.values { handle.end(.failed(PlaybackError(.outputClosed, detail: error.description))) }
            throw error
        }
        // What has not ended where the file ends (a sound repeating forever) is cut there.
        let ends = timeline.retire(playedUpTo: Int64(length)) + timeline.removeAll().map { ($0, PlaybackEnd.stopped) }
        for (id, end) in ends { handles[id]?.end(end) }
        return Double(length) / Double(sampleRate)
    }
}
