internal import CSndFile
import Glibc

/// Writes a sound file again at another level, as the source was: its sample rate, channel count,
/// container and encoding, from its original samples.
///
/// The registry keeps a sound at the engine's rate in at most two channels, so a file written
/// from it would not be the source's file at a new level (a 44.1 kHz source became a 48 kHz
/// file). An export therefore reads the source file's own samples again and scales them, the
/// way a WAV volume adjuster does: integer encodings (PCM, FLAC, ALAC, µ-law, A-law) are read as
/// integers and rounded back to the encoding's own bit depth, float ones as floats. At
/// `VolumeAdjustment.unchanged` the samples are written exactly as read, so the exported samples
/// are bit-identical to the source's for every lossless encoding (a lossy one, Vorbis, Opus or
/// MP3, is encoded again, which cannot be). The file is written by `AtomicFile`'s rule (regular
/// files replaced atomically; a FIFO or `/dev/null` written into; nothing else replaced).
public enum SoundExport {
    /// Writes the sound file at `source` to `path` at `volume`, as described above.
    ///
    /// `volume` is applied as the registry applies it (`VolumeAdjustment`): clipped at full scale,
    /// or through the peak limiter, whose 5 ms attack and 50 ms release are timed at the source's
    /// own rate. A source longer than `maximumDuration` seconds is refused, as decoding refuses it.
    /// - Throws: `RegistryError`: `.sound` with the decoder's errors for `source`; `.file` for
    ///   `path` (`FileError`), including a source format libsndfile can read but not write.
    public static func write(
        fileAt source: String, volume: VolumeAdjustment, to path: String,
        maximumDuration: Double? = SoundDecoder.systemSoundDurationLimit
    ) throws(RegistryError) {
        let file: SoundFileReader
        do throws(SoundError) {
            file = try SoundFileReader(path: source)
        } catch {
            throw .sound(error)
        }
        let rate = Int(file.info.samplerate)
        let channels = Int(file.info.channels)
        try RegistryError.decoding { () throws(SoundError) in
            try SoundDecoder.validate(sampleRate: rate, channelCount: channels, source: source)
        }
        let maximumFrames = maximumDuration.map { Int(($0 * Double(rate)).rounded(.down)) }
        let limit = { (frames: Int) -> RegistryError in
            .sound(SoundError(
                .exceedsMaximumDuration(seconds: Double(frames) / Double(rate), limit: maximumDuration ?? 0),
                source: source))
        }
        if let maximumFrames, let declared = file.knownFrameCount, declared > Int64(maximumFrames) {
            throw limit(Int(declared))
        }
        let format = file.format
        if let bits = integerBits(format) {
            var samples: [Int32]
            do throws(SoundError) {
                samples = try readAll(file, maximumFrames: maximumFrames, path: source, sf_readf_int)
            } catch {
                throw .sound(error)
            }
            if let maximumFrames, samples.count / channels > maximumFrames { throw limit(samples.count / channels) }
            if volume != .unchanged { scale(&samples, by: volume, bits: bits, channels: channels, rate: rate) }
            try RegistryError.accessing { () throws(FileError) in
                try encodeAndWrite(samples, format: format, rate: rate, channels: channels, path: path, sf_writef_int)
            }
        } else {
            var samples: [Float]
            do throws(SoundError) {
                samples = try readAll(file, maximumFrames: maximumFrames, path: source, sf_readf_float)
            } catch {
                throw .sound(error)
            }
            if let maximumFrames, samples.count / channels > maximumFrames { throw limit(samples.count / channels) }
            if volume != .unchanged {
                samples = volume.scale(samples, channelCount: channels, sampleRate: rate)
            }
            try RegistryError.accessing { () throws(FileError) in
                try encodeAndWrite(samples, format: format, rate: rate, channels: channels, path: path, sf_writef_float)
            }
        }
    }

    /// The bit depth of an encoding libsndfile reads and writes as integers without loss; nil
    /// for float and lossy encodings.
    private static func integerBits(_ format: SoundFileFormat) -> Int? {
        switch Int(format.rawValue) & Int(SF_FORMAT_SUBMASK) {
        case SF_FORMAT_PCM_S8, SF_FORMAT_PCM_U8: 8
        case SF_FORMAT_PCM_16, SF_FORMAT_ALAC_16, SF_FORMAT_ULAW, SF_FORMAT_ALAW: 16
        case SF_FORMAT_ALAC_20: 20
        case SF_FORMAT_PCM_24, SF_FORMAT_ALAC_24: 24
        case SF_FORMAT_PCM_32, SF_FORMAT_ALAC_32: 32
        default: nil
        }
    }

    /// Every frame (one past `maximumFrames` at most), through libsndfile's reader for `Sample`.
    private static func readAll<Sample: Numeric>(
        _ file: borrowing SoundFileReader, maximumFrames: Int?, path: String,
        _ read: (OpaquePointer?, UnsafeMutablePointer<Sample>?, sf_count_t) -> sf_count_t
    ) throws(SoundError) -> [Sample] {
        let channels = Int(file.info.channels)
        let chunk = 4_096
        var samples: [Sample] = []
        samples.reserveCapacity(Int(clamping: min(file.knownFrameCount ?? 0, Int64(maximumFrames ?? .max - 1) + 1)) * channels)
        var buffer = [Sample](repeating: 0, count: chunk * channels)
        while true {
            let got = try buffer.withUnsafeMutableBufferPointer { pointer throws(SoundError) in
                try file.read(into: pointer.baseAddress!, frameCount: chunk, read)
            }
            if got == 0 { break }
            samples += buffer[..<(got * channels)]
            if let maximumFrames, samples.count / channels > maximumFrames { break }
        }
        return samples
    }

    /// Scales left-justified 32-bit samples of a `bits`-bit encoding, rounding to that depth and
    /// clamping to its range (or limiting, as `volume` says).
    private static func scale(_ samples: inout [Int32], by volume: VolumeAdjustment, bits: Int, channels: Int, rate: Int) {
        let step = Double(Int64(1) << (32 - bits))
        let lowest = Double(Int32.min)
        let highest = Double(Int32.max) - step + 1
        let fullScale = Double(1 << 31 as Int64)
        // The limiter measures peaks on a float view; the scaling itself stays in integers.
        let gains: [Float]? =
            if case .peakLimiter = volume.limiting {
                volume.limiterGains(samples.map { Float(Double($0) / fullScale) }, channelCount: channels, sampleRate: rate)
            } else {
                nil
            }
        let ceiling = Double(volume.ceiling) * fullScale
        samples.withUnsafeMutableBufferPointer { samples in
            for frame in 0..<(samples.count / channels) {
                let gain = gains.map { Double($0[frame]) } ?? Double(volume.multiplier)
                for channel in 0..<channels {
                    let index = frame * channels + channel
                    let scaled = min(ceiling, max(-ceiling, Double(samples[index]) * gain))
                    samples[index] = Int32(min(highest, max(lowest, (scaled / step).rounded() * step)))
                }
            }
        }
    }

    private static func encodeAndWrite<Sample>(
        _ samples: [Sample], format: SoundFileFormat, rate: Int, channels: Int, path: String,
        _ write: (OpaquePointer?, UnsafePointer<Sample>?, sf_count_t) -> sf_count_t
    ) throws(FileError) {
        let frames = samples.count / channels
        let bytes = try SoundFileWriter.encode(path: path, format: format, sampleRate: rate, channelCount: channels) {
            handle throws(FileError) in
            let written = samples.withUnsafeBufferPointer { write(handle, $0.baseAddress, sf_count_t(frames)) }
            guard written == frames else {
                throw FileError(.cannotWrite, path: path, detail: String(cString: sf_strerror(handle)))
            }
        }
        try AtomicFile.write(bytes, to: path, permissions: .keepingExisting(new: 0o644), streams: .writeInto)
    }
}
