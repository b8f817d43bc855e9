public import Dispatch
import Synchronization

/// Renders plays into a sound file instead of a sound server: the same mixer as the engine, run
/// as fast as the CPU allows.
///
/// Plays start at the output's cursor (0 s at first; `advance(by:)` moves it), so plays issued one
/// after another without advancing overlap, as they would on a server. `finish()` renders until the
/// last sound has ended, writes the file atomically, and completes every play: `.finished`, or
/// `.stopped` for a sound that repeats forever (it is cut where the file ends) or was stopped.
///
/// Thread safety: every method may be called from any thread.
public final class FileOutput: AudioOutput, PlaybackControl {
    public let name: String
    /// Where `finish()` writes.
    public let path: String
    /// The file's format.
    public let format: SoundFileFormat
    /// The rate sounds must have and the file gets.
    public let sampleRate: Int

    private struct State {
        var cursor: Int64 = 0
        var voices: [Voice] = []
        var handles: [UInt64: PlaybackHandle] = [:]
        /// Plays fading out to a stop: they end `.stopped`, not `.finished`.
        var stopping: Set<UInt64> = []
        var finished = false
    }

    private let state = Mutex(State())

    /// Creates an output that will write `path` in `format` (16-bit WAV by default) at `sampleRate`.
    public init(path: String, format: SoundFileFormat = .wav16, sampleRate: Int = 48_000) {
        self.path = path
        self.format = format
        self.sampleRate = sampleRate
        name = "file \(path)"
    }

    /// Moves the cursor: plays after this start `seconds` later.
    public func advance(by seconds: Double) {
        state.withLock { $0.cursor += Int64(seconds * Double(sampleRate)) }
    }

    @discardableResult
    public func play(
        _ buffer: PCMBuffer, options: PlaybackOptions = PlaybackOptions(), queue: DispatchQueue = .global(),
        completion: (@Sendable (PlaybackEnd) -> Void)? = nil
    ) -> PlaybackHandle {
        let handle = PlaybackHandle(id: nextPlaybackID(), control: self, queue: queue, completion: completion)
        guard buffer.sampleRate == sampleRate, buffer.frameCount > 0 else {
            handle.end(.failed(PlaybackError(.unsupportedSound, detail: "the file is \(sampleRate) Hz; the sound \(buffer.sampleRate) Hz")))
            return handle
        }
        let accepted = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            let start = state.cursor
            var gain = Envelope(options.fadeIn > 0 ? 0 : options.volume)
            let fadeFrames = Int64(options.fadeIn * Double(sampleRate))
            if options.fadeIn > 0 { gain.ramp(at: start, to: options.volume, over: fadeFrames, curve: options.fadeCurve) }
            if let replaced = options.replacing, let index = state.voices.firstIndex(where: { $0.id == replaced }) {
                state.voices[index].stop(at: start, ramp: fadeFrames, curve: options.fadeCurve)
                state.stopping.insert(replaced)
            }
            state.voices.append(
                Voice(id: handle.id, buffer: buffer, start: start, playCount: options.playCount, gain: gain,
                      pan: Envelope(min(1, max(-1, options.pan)))))
            state.handles[handle.id] = handle
            return true
        }
        if !accepted { handle.end(.failed(PlaybackError(.outputClosed, detail: "the file was already written"))) }
        return handle
    }

    func stop(_ id: UInt64) {
        modify(id) { voice, cursor, rate in voice.stop(at: cursor, ramp: Int64(0.0025 * rate)) }
    }

    func setVolume(_ id: UInt64, _ volume: Float, ramp: Double, curve: Envelope.Curve) {
        // A voice fading out to a stop keeps its ramp: a level change would undo the fade and
        // leave a cut where it was to end.
        guard !state.withLock({ $0.stopping.contains(id) }) else { return }
        modify(id) { voice, cursor, rate in
            voice.gain.ramp(at: cursor, to: volume, over: Int64(ramp * rate), curve: curve)
        }
    }

    func fadeOut(_ id: UInt64, duration: Double, curve: Envelope.Curve) {
        modify(id) { voice, cursor, rate in voice.stop(at: cursor, ramp: Int64(duration * rate), curve: curve) }
        state.withLock { _ = $0.stopping.insert(id) }
    }

    func setPan(_ id: UInt64, _ pan: Float, ramp: Double) {
        modify(id) { voice, cursor, rate in voice.pan.ramp(at: cursor, to: pan, over: Int64(ramp * rate)) }
    }

    private func modify(_ id: UInt64, _ change: (inout Voice, Int64, Double) -> Void) {
        let rate = Double(sampleRate)
        state.withLock { state in
            guard let index = state.voices.firstIndex(where: { $0.id == id }) else { return }
            change(&state.voices[index], state.cursor, rate)
        }
    }

    /// Renders everything played so far and writes the file.
    /// - Returns: the file's length in seconds.
    /// - Throws: `FileError` if the file cannot be written; every play then ends `.failed`.
    @discardableResult
    public func finish() throws(FileError) -> Double {
        let (voices, handles, cursor, stopping) = state.withLock { state in
            state.finished = true
            defer { state.handles.removeAll() }
            return (state.voices, state.handles, state.cursor, state.stopping)
        }
        let finiteEnds = voices.map(\.end).filter { $0 != .max }
        let length = Int(max(cursor, finiteEnds.max() ?? 0))
        var samples = [Float](repeating: 0, count: length * 2)
        samples.withUnsafeMutableBufferPointer { output in
            voices.withUnsafeBufferPointer { voices in
                let block = 4_096
                var frame = 0
                while frame < length {
                    let count = min(block, length - frame)
                    Mixer.render(voices, from: Int64(frame), frameCount: count, into: output.baseAddress! + frame * 2)
                    frame += count
                }
            }
        }
        do {
            let buffer = PCMBuffer(validSamples: samples, channelCount: 2, sampleRate: sampleRate)
            try SoundFileWriter.write(buffer, to: path, format: format)
        } catch {
            for handle in handles.values { handle.end(.failed(PlaybackError(.outputClosed, detail: error.description))) }
            throw error
        }
        for voice in voices {
            handles[voice.id]?.end(voice.end == .max || stopping.contains(voice.id) ? .stopped : .finished)
        }
        return Double(length) / Double(sampleRate)
    }
}
