public import Dispatch
import Synchronization

/// Renders plays into a sound file instead of a sound server: the same engine core, timeline and
/// mixer as the live outputs, run as fast as the CPU allows.
///
/// Plays start at the output's cursor (0 s at first; `advance(by:)` moves it), so plays issued one
/// after another without advancing overlap, as they would on a server; stops, fades and level
/// changes also take effect at the cursor. `finish()` renders until the last sound has ended,
/// writes the file atomically, and completes every play: `.finished`, or `.stopped` for a sound
/// that repeats forever (it is cut where the file ends) or was stopped.
///
/// Bounds. A file lasts at most `maximumDuration` (10 minutes); `finish()` refuses a longer one
/// before rendering anything. The render streams: it mixes 4,096 frames at a time and hands each
/// block to the file (`SoundFileStreamWriter`), so its memory does not grow with the file's length,
/// and `finish(stoppingWhen:)` can stop it between two blocks.
///
/// A play is queued, placed and ended by the engine core's rules, as on every engine output
/// (`EngineCore`): the core holds the plays in progress and ends each exactly once; the file's
/// timeline is placed at the cursor instead of a device's read position, and retired when the file
/// has been rendered, with no clock (nothing is held back: every frame was rendered).
///
/// Thread safety: every method may be called from any thread.
public final class FileOutput: AudioOutput, TimelineControl {
    /// The longest file a `FileOutput` writes, in seconds: 10 minutes. Sounds last at most 30 s
    /// (the system-sound limit), and the longest thing rendered from them — an alarm or a ringtone
    /// repeated until someone answers — is silenced by phones after about that long (Android's
    /// alarm stops after 10 minutes). At 48 kHz that is 115 MB of 16-bit WAV, 230 MB of float.
    public static let maximumDuration: Double = 600

    public let name: String
    /// Where `finish()` writes.
    public let path: String
    /// The file's format.
    public let format: SoundFileFormat
    /// The rate sounds must have and the file gets.
    public let sampleRate: Int
    /// `maximumDuration` in frames at `sampleRate`.
    private let maximumFrames: Int64
    /// Frames mixed and written at a time.
    private static let blockFrames = 4_096

    private struct State {
        var cursor: Int64 = 0
        var timeline: Timeline
        /// The commands taken from the core, kept for their capacity.
        var commands: [Timeline.Command] = []
    }

    /// The plays in progress and their ends.
    private let core = EngineCore()
    /// The cursor and the timeline; taken before the core's lock, never after it.
    private let state: Lock<State>

    /// Creates an output that will write `path` in `format` (16-bit WAV by default) at `sampleRate`
    /// (one of `SoundDecoder.supportedSampleRates`).
    public init(path: String, format: SoundFileFormat = .wav16, sampleRate: Int = 48_000) {
        precondition(SoundDecoder.supportedSampleRates.contains(sampleRate), "unsupported file sample rate")
        self.path = path
        self.format = format
        self.sampleRate = sampleRate
        maximumFrames = Int64(Self.maximumDuration * Double(sampleRate))
        name = "file \(path)"
        // The whole timeline is rendered at the end, so no envelope point may be forgotten.
        state = Lock(State(timeline: Timeline(sampleRate: sampleRate, history: nil)))
    }

    /// The file's rate: a buffer at another rate fails `.unsupportedSound`.
    public var requiredSampleRate: Int? { sampleRate }

    /// Moves the cursor: plays after this start `seconds` later. A negative or NaN step moves
    /// nothing; the cursor stops just past `maximumDuration` (`finish()` then refuses the file).
    public func advance(by seconds: Double) {
        let limit = maximumFrames + 1
        let step = Int64(min(max(0, seconds.isNaN ? 0 : seconds * Double(sampleRate)), Double(limit)))
        state.withLock { $0.cursor = min($0.cursor + step, limit) }
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
            return PlaybackHandle.failed(error, delivery: .queue(queue), completion: completion)
        }
        let handle = PlaybackHandle(id: nextPlaybackID(), control: self, delivery: .queue(queue), completion: completion)
        let start = Timeline.Command.start(id: handle.id, samples: voice.samples, offset: voice.offset, options: options)
        let accepted = state.withLock { state -> Bool in
            guard core.requests.enqueue(handle.id, handle, start) else { return false }
            placeQueued(&state)
            return true
        }
        if !accepted {
            start.discard()
            handle.end(.failed(PlaybackError(.outputClosed, detail: "the file was already written")))
        }
        return handle
    }

    func send(_ command: Timeline.Command) {
        state.withLock { state in
            core.requests.send(command, wake: {})
            placeQueued(&state)
        }
    }

    /// Places what the core has queued at the cursor. Offline, a start has no moment it is heard.
    private func placeQueued(_ state: inout State) {
        core.requests.takeCommands(into: &state.commands)
        core.place(state.commands, on: &state.timeline, at: state.cursor, time: .nan, heard: { .nan })
        state.commands.removeAll(keepingCapacity: true)
    }

    /// Renders everything played so far and writes the file.
    /// - Returns: the file's length in seconds.
    /// - Throws: `FileError` if the file cannot be written, or `.tooLong` if it would last more
    ///   than `maximumDuration`; every play then ends `.failed`.
    @discardableResult
    public func finish() throws(FileError) -> Double {
        // Never nil: nothing asks it to stop.
        try finish(stoppingWhen: { false })!
    }

    /// Renders everything played so far and writes the file, asking `shouldStop` between blocks
    /// (every 4,096 frames, a few milliseconds of work at most): once it says yes, the render stops,
    /// the file is not written (whatever was at `path` stays as it was) and every play ends
    /// `.cancelled`. A command that must honour Ctrl-C during a long render passes its signal check.
    /// - Returns: the file's length in seconds; nil when `shouldStop` stopped it.
    /// - Throws: `FileError` if the file cannot be written, or `.tooLong` if it would last more
    ///   than `maximumDuration`; every play then ends `.failed`.
    public func finish(stoppingWhen shouldStop: () -> Bool) throws(FileError) -> Double? {
        // Nothing is queued after this: a later play fails at once.
        var (timeline, cursor) = state.withLock { state in
            core.closed(with: nil, closing: true)
            return (state.timeline, state.cursor)
        }
        let length: Int64
        do {
            length = try self.length(of: timeline, cursor: cursor)
            var writer = try SoundFileStreamWriter(path: path, format: format, sampleRate: sampleRate, channelCount: 2)
            guard try render(timeline, frames: length, into: &writer, stoppingWhen: shouldStop) else {
                for id in timeline.removeAll() { core.requests.voiceEnded(id, .cancelled) }
                return nil
            }
            try writer.commit()
        } catch {
            timeline.removeAll()
            core.closed(with: PlaybackError(.outputClosed, detail: error.description), closing: true)
            throw error
        }
        // Every frame was rendered; what has not ended where the file ends (a sound repeating
        // forever) is cut there.
        core.retire(on: &timeline, playedUpTo: length, at: .nan)
        for id in timeline.removeAll() { core.requests.voiceEnded(id, .stopped) }
        return Double(length) / Double(sampleRate)
    }

    /// The file's length in frames: to the cursor or to where the last sound ends, whichever is
    /// later; a sound repeating forever and never stopped does not count (it is cut where the file
    /// ends). The one place `maximumDuration` is enforced.
    /// - Throws: `FileError` `.tooLong`, naming the length asked for and the limit.
    private func length(of timeline: Timeline, cursor: Int64) throws(FileError) -> Int64 {
        var length = cursor
        // In seconds as well, for the message: a play count can make a length no `Int64` holds.
        var seconds = Double(cursor) / Double(sampleRate)
        for voice in timeline.voices {
            if voice.end != .max {
                length = max(length, voice.end)
                seconds = max(seconds, Double(voice.end) / Double(sampleRate))
            } else if voice.playCount != PlaybackOptions.forever {
                // A count of plays so large that its last frame cannot be numbered (see `Voice`).
                length = .max
                let frames = Double(voice.start) + Double(voice.source.frameCount) * Double(voice.playCount)
                seconds = max(seconds, frames / Double(sampleRate))
            }
        }
        guard length <= maximumFrames else {
            throw FileError(.tooLong(seconds: seconds, limit: Self.maximumDuration), path: path)
        }
        return length
    }

    /// Mixes `frames` frames a block at a time into `writer`, asking `shouldStop` before each.
    /// - Returns: false if it stopped.
    private func render(
        _ timeline: Timeline, frames length: Int64, into writer: inout SoundFileStreamWriter,
        stoppingWhen shouldStop: () -> Bool
    ) throws(FileError) -> Bool {
        let block = UnsafeMutablePointer<Float>.allocate(capacity: Self.blockFrames * 2)
        defer { block.deallocate() }
        var frame: Int64 = 0
        while frame < length {
            if shouldStop() { return false }
            let count = Int(min(Int64(Self.blockFrames), length - frame))
            timeline.render(from: frame, frames: count, into: block)
            try writer.write(block, frameCount: count)
            frame += Int64(count)
        }
        return true
    }
}
