/// What a voice plays: a decoded buffer, or a sound file streamed from disk while it plays.
///
/// `AudioOutput.play(_:from:options:queue:completion:)` starts one at an offset. The engine plays a
/// buffer from the offset without copying it, and streams a file through a feeder thread in fixed
/// memory. Outputs with no streaming voice decode a streamed file whole first: a file output places
/// it on its timeline; libcanberra gets a copy from the offset.
public struct VoiceSource: Sendable {
    package enum Content: Sendable {
        case buffer(PCMBuffer)
        case file(path: String)
    }

    package let content: Content
    /// Told the ring a streaming output decodes the file into, once its feeder has started (the
    /// player's tests read its high-water mark from it).
    package var streamStarted: (@Sendable (StreamingSource) -> Void)?

    private init(_ content: Content) {
        self.content = content
    }

    /// A decoded sound held in memory.
    public static func buffer(_ buffer: PCMBuffer) -> VoiceSource {
        VoiceSource(.buffer(buffer))
    }

    /// The sound file at `path`, read from disk as it plays: for sounds too long to hold (music).
    public static func streamed(fileAt path: String) -> VoiceSource {
        VoiceSource(.file(path: path))
    }

    /// Seconds of a streamed file decoded before its voice starts, so its first frames are there
    /// and the engine never waits for them.
    static let streamPrefill = 0.5

    /// The whole sound as a buffer: a buffer as it is, a file decoded at `sampleRate` (48 kHz if
    /// nil).
    /// - Throws: `PlaybackError` `.unsupportedSound`: a buffer at another rate than `sampleRate`,
    ///   an empty one, or a file that cannot be decoded.
    func decoded(at sampleRate: Int?) throws(PlaybackError) -> PCMBuffer {
        switch content {
        case .buffer(let buffer):
            if let sampleRate, buffer.sampleRate != sampleRate {
                throw PlaybackError(
                    .unsupportedSound, detail: "the output plays \(sampleRate) Hz sounds; this one is \(buffer.sampleRate) Hz")
            }
            guard buffer.frameCount > 0 else { throw PlaybackError(.unsupportedSound, detail: "the sound is empty") }
            return buffer
        case .file(let path):
            do {
                return try SoundDecoder(sampleRate: sampleRate ?? 48_000, maximumDuration: nil).decode(fileAt: path).buffer
            } catch {
                throw PlaybackError(.unsupportedSound, detail: error.description)
            }
        }
    }

    /// What a voice on a timeline at `sampleRate` plays, and the frame of it heard first.
    /// - Parameters:
    ///   - offset: seconds into the sound.
    ///   - looping: whether the voice repeats (a stream's feeder then wraps to the file's start).
    ///   - streaming: whether a file may be streamed (the output renders as it plays); otherwise it
    ///     is decoded whole.
    /// - Throws: `PlaybackError` `.unsupportedSound`, as `decoded(at:)`, or when the file cannot be
    ///   opened for streaming.
    func samples(
        at sampleRate: Int, from offset: Double, looping: Bool, streaming: Bool
    ) throws(PlaybackError) -> (samples: VoiceSamples, offset: Int64) {
        let frames = Int64((max(0, offset) * Double(sampleRate)).rounded())
        guard streaming, case .file(let path) = content else { return (.buffer(try decoded(at: sampleRate)), frames) }
        do {
            let feeder = try StreamFeeder(path: path, engineRate: sampleRate, offset: frames, looping: looping)
            feeder.prefill(seconds: Self.streamPrefill, engineRate: sampleRate)
            feeder.start()
            streamStarted?(feeder.source)
            return (.stream(feeder.source), 0)
        } catch {
            throw PlaybackError(.unsupportedSound, detail: error.description)
        }
    }
}
