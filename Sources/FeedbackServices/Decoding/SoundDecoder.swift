public import FoundationEssentials

/// A decoded sound file: the PCM ready for the engine and what the file was.
public struct DecodedSound: Sendable {
    /// The samples, down-mixed to mono or stereo and resampled to the decoder's rate.
    public let buffer: PCMBuffer
    /// The file's container and encoding.
    public let sourceFormat: SoundFileFormat
    /// The file's own sample rate.
    public let sourceSampleRate: Int
    /// The file's own channel count, before any down-mix.
    public let sourceChannelCount: Int
}

/// Turns sound files and in-memory samples into `PCMBuffer`s at one engine rate.
///
/// Every format libsndfile reads here is accepted: WAV, RF64, AIFF, CAF (with ALAC), FLAC, Ogg
/// Vorbis, Ogg Opus, MP3, and the rest of libsndfile's list. Decoding happens once: the result is
/// 32-bit float, mono or stereo (more channels are down-mixed, see below), resampled with libsoxr.
///
/// More than two channels are down-mixed to stereo by speaker position: front left/right at full
/// level, centre and surrounds at −3 dB, rear centre at −6 dB, LFE dropped, each side normalised so
/// the mix cannot exceed full scale. At most 8 channels (7.1) are accepted.
///
/// What decoding costs: the file's samples at its own rate, down-mixed to stereo while they are
/// read (a chunk at a time), then a second copy while libsoxr converts each channel, then the
/// result at the decoder's rate — about 16 bytes per second of sound per Hz of the file's rate.
/// The worst case the limits allow, 30 s at 384 kHz (in any channel count), costs about 300 MB and
/// 1.6 s, from a file that can be 100 KB (silence compresses); a 30 s 44.1 kHz stereo sound about
/// 80 MB and 0.7 s; a typical alert of a second or two, a few MB and milliseconds. No sound longer
/// than `maximumDuration` is ever held: reading stops one frame past it.
///
/// A decoder is a value; decoding is safe from any thread.
public struct SoundDecoder: Sendable {
    /// The sample rates a sound may have, in Hz: up to 384 kHz, the highest rate PulseAudio runs
    /// at (`PA_RATE_MAX`) and twice DXD's, the highest any recording format uses. A higher rate
    /// would only make decoding dearer (see above) for content no one can hear.
    public static let supportedSampleRates: ClosedRange<Int> = 1_000...384_000
    /// The most channels a sound may have.
    public static let maximumChannelCount = Downmix.maximumChannelCount
    /// The longest a system sound may be, in seconds (AudioServices' limit).
    public static let systemSoundDurationLimit: Double = 30

    /// The rate every decoded buffer is converted to, in Hz.
    public var sampleRate: Int
    /// Sounds longer than this many seconds are refused with `.exceedsMaximumDuration`; nil for no limit.
    public var maximumDuration: Double?

    /// Creates a decoder producing `sampleRate` Hz buffers (48 kHz by default) and refusing sounds
    /// longer than `maximumDuration` seconds (30 s by default, the system-sound limit).
    public init(sampleRate: Int = 48_000, maximumDuration: Double? = SoundDecoder.systemSoundDurationLimit) {
        precondition(Self.supportedSampleRates.contains(sampleRate), "unsupported engine sample rate")
        self.sampleRate = sampleRate
        self.maximumDuration = maximumDuration
    }

    /// Decodes the file at `path`.
    ///
    /// A sound over `maximumDuration` is refused from its header before its audio is read, and again
    /// while reading if the header understated it.
    /// - Throws: `SoundError` naming the file and the cause.
    public func decode(fileAt path: String) throws(SoundError) -> DecodedSound {
        let file = try SoundFileReader(path: path)
        let rate = Int(file.info.samplerate)
        let channels = Int(file.info.channels)
        let format = file.format
        try Self.validate(sampleRate: rate, channelCount: channels, source: path)
        let maximumFrames = maximumDuration.map { Int(($0 * Double(rate)).rounded(.down)) }
        if let maximumFrames, let declared = file.knownFrameCount, declared > Int64(maximumFrames) {
            throw durationError(frames: Int(declared), rate: rate, source: path)
        }
        let map = channels > 2 ? file.channelMap() : nil
        let samples = try file.readAll(maximumFrames: maximumFrames, downmixMap: map)
        let readChannels = min(channels, 2)
        let frames = samples.count / readChannels
        guard frames > 0 else { throw SoundError(.empty, source: path, detail: "zero frames") }
        if let maximumFrames, frames > maximumFrames {
            throw durationError(frames: frames, rate: rate, source: path)
        }
        // Non-finite samples survive the down-mix (its weights are ≥ 0 and ∞·0 is NaN), so they
        // are caught after it as well as before.
        let buffer = try makeBuffer(
            samples, sampleRate: rate, channelCount: readChannels, map: nil, source: path,
            mayHoldNonFinite: format.mayHoldNonFinite)
        return DecodedSound(
            buffer: buffer, sourceFormat: format, sourceSampleRate: rate, sourceChannelCount: channels)
    }

    /// Decodes the file a `file:` URL names.
    /// - Throws: `SoundError`; a URL that is not a file URL is `.notFound`.
    public func decode(contentsOf url: URL) throws(SoundError) -> DecodedSound {
        guard url.isFileURL else {
            throw SoundError(.notFound, source: url.absoluteString, detail: "only file URLs can be read")
        }
        return try decode(fileAt: url.path(percentEncoded: false))
    }

    /// Converts in-memory interleaved samples at `sampleRate` with `channelCount` channels.
    ///
    /// `name` stands for the sound in errors. The samples must be a whole number of frames and finite.
    public func decode(
        samples: [Float], sampleRate: Int, channelCount: Int, name: String = "in-memory sound"
    ) throws(SoundError) -> PCMBuffer {
        try Self.validate(sampleRate: sampleRate, channelCount: channelCount, source: name)
        guard samples.count % channelCount == 0 else {
            throw SoundError(
                .invalidSamples("\(samples.count) samples are not a whole number of \(channelCount)-channel frames"),
                source: name)
        }
        let frames = samples.count / channelCount
        guard frames > 0 else { throw SoundError(.empty, source: name, detail: "zero frames") }
        if let maximumDuration, Double(frames) > maximumDuration * Double(sampleRate) {
            throw durationError(frames: frames, rate: sampleRate, source: name)
        }
        return try makeBuffer(
            samples, sampleRate: sampleRate, channelCount: channelCount, map: nil, source: name, mayHoldNonFinite: true)
    }

    /// Refuses a rate outside `supportedSampleRates` and a channel count outside 1…`maximumChannelCount`.
    static func validate(sampleRate: Int, channelCount: Int, source: String) throws(SoundError) {
        guard Self.supportedSampleRates.contains(sampleRate) else {
            throw SoundError(.invalidSampleRate(sampleRate, supported: Self.supportedSampleRates), source: source)
        }
        guard channelCount >= 1 else {
            throw SoundError(.invalidSamples("\(channelCount) channels"), source: source)
        }
        guard channelCount <= Self.maximumChannelCount else {
            throw SoundError(.tooManyChannels(channelCount, limit: Self.maximumChannelCount), source: source)
        }
    }

    private func durationError(frames: Int, rate: Int, source: String) -> SoundError {
        SoundError(
            .exceedsMaximumDuration(seconds: Double(frames) / Double(rate), limit: maximumDuration ?? 0),
            source: source)
    }

    /// Down-mixes and resamples; refuses NaN and infinity, which only float data can hold.
    private func makeBuffer(
        _ samples: [Float], sampleRate rate: Int, channelCount: Int, map: [Int32]?, source: String,
        mayHoldNonFinite: Bool
    ) throws(SoundError) -> PCMBuffer {
        if mayHoldNonFinite, let bad = samples.firstIndex(where: { !$0.isFinite }) {
            throw SoundError(.invalidSamples("sample \(bad) is \(samples[bad])"), source: source)
        }
        let stereo = Downmix.toStereo(samples, channels: channelCount, map: map)
        let channels = min(channelCount, 2)
        let resampled = try Resampler.resample(stereo, channels: channels, from: rate, to: sampleRate, source: source)
        // Finite float samples near ±3.4e38 can still overflow in the down-mix or the resampler's
        // filter (found by fuzzing: a float WAV of garbage values); a buffer is always finite.
        if mayHoldNonFinite, let bad = resampled.firstIndex(where: { !$0.isFinite }) {
            throw SoundError(
                .invalidSamples("sample values too large to convert (sample \(bad) of the result is \(resampled[bad]))"),
                source: source)
        }
        // A few frames at a high rate can convert to none at the decoder's (found by fuzzing).
        guard resampled.count >= channels else {
            throw SoundError(.empty, source: source, detail: "shorter than one frame at \(sampleRate) Hz")
        }
        return PCMBuffer(validSamples: resampled, channelCount: channels, sampleRate: sampleRate)
    }
}
