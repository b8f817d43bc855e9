internal import CALSA
import Glibc

/// An ALSA call that failed: the call's name and the error number libasound returned (positive).
struct ALSAError: Error, Equatable, CustomStringConvertible {
    /// The errno value (`EBUSY`, `ENODEV`, …), positive.
    var code: Int32
    /// The libasound function that returned it.
    var call: String

    var description: String { "\(call): \(String(cString: snd_strerror(-code)))" }

    /// Checks a libasound result: a negative one is an error.
    static func check(_ result: Int32, _ call: String) throws(ALSAError) {
        if result < 0 { throw ALSAError(code: -result, call: call) }
    }
}

extension PlaybackError {
    /// The play-facing form of an ALSA failure on `device`: a device another program holds is
    /// `.deviceBusy`; one that is not there is `.deviceUnavailable` when opening and `.deviceLost`
    /// once it was playing (unplugged, its driver unbound); anything else is `.deviceUnavailable`.
    init(_ error: ALSAError, device: String, opening: Bool) {
        let reason: Reason =
            switch error.code {
            case EBUSY: .deviceBusy
            default: opening ? .deviceUnavailable : .deviceLost
            }
        self.init(reason, detail: "ALSA PCM \(device): \(error)")
    }
}

/// One open ALSA playback PCM (`snd_pcm_t`), non-blocking, interleaved stereo at the engine rate in
/// the first of float, 32-bit or 16-bit integer samples the device takes; the engine's float mix
/// is converted on the way in.
///
/// Thread safety: none. It belongs to the ALSA output's thread, which opens, uses and closes it.
final class ALSAPCM {
    /// Sample formats in the order they are tried: float needs no conversion, and 32 bits keep
    /// more of the mix than 16 where a device offers both.
    enum SampleFormat: String, CaseIterable {
        case float32 = "FLOAT_LE"
        case int32 = "S32_LE"
        case int16 = "S16_LE"

        var alsa: snd_pcm_format_t {
            switch self {
            case .float32: SND_PCM_FORMAT_FLOAT_LE
            case .int32: SND_PCM_FORMAT_S32_LE
            case .int16: SND_PCM_FORMAT_S16_LE
            }
        }

        var bytesPerSample: Int { self == .int16 ? 2 : 4 }
    }

    /// libasound prints every error it returns to stderr; ours are reported as typed errors, so
    /// its messages are turned off, once, when the process first uses ALSA (for the whole process).
    static let silenceLibraryMessages: Void = fbs_alsa_silence_errors()

    let name: String
    let format: SampleFormat
    let rate: Int
    /// The ring's length and the unit the device moves in, as the device granted them.
    let bufferFrames: Int
    let periodFrames: Int
    /// Whether dmix, which mixes several programs into one device, is anywhere in the PCM's chain:
    /// the PCM itself, or a slave of it (`plug` → `dmix`, as `default` often is). Rewinding it is
    /// not to be trusted (in the VM a sound played after a rewind was, now and then, never heard),
    /// also through a plug, which passes its rewinds down to dmix.
    let isSharedMixer: Bool
    private let pcm: OpaquePointer
    /// The mix converted to the device's format; `maximumWriteFrames` frames.
    private let converted: UnsafeMutableRawPointer
    private let maximumWriteFrames: Int

    /// Opens `name` (`default`, `hw:0,0`, `plughw:Loopback,0`, `dmix`, …) for playback.
    /// - Parameters:
    ///   - bufferDuration, periodDuration: the ring and period asked for, in seconds (the device
    ///     grants the nearest it can).
    ///   - maximumWriteFrames: the most frames one `write` passes.
    /// - Throws: `ALSAError`: `EBUSY` when another program holds a device that has no mixing,
    ///   `ENOENT`/`ENODEV` when there is no such PCM, `EINVAL` when it cannot play stereo at `rate`.
    init(name: String, rate: Int, bufferDuration: Double, periodDuration: Double, maximumWriteFrames: Int) throws(ALSAError) {
        ALSAPCM.silenceLibraryMessages
        var handle: OpaquePointer?
        // Non-blocking: a busy device answers EBUSY at once instead of blocking the open.
        try ALSAError.check(snd_pcm_open(&handle, name, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK), "snd_pcm_open")
        guard let handle else { throw ALSAError(code: ENOMEM, call: "snd_pcm_open") }
        do {
            let granted = try Self.configure(
                handle, rate: rate, bufferFrames: Int(bufferDuration * Double(rate)),
                periodFrames: max(16, Int(periodDuration * Double(rate))))
            (format, bufferFrames, periodFrames) = granted
        } catch {
            snd_pcm_close(handle)
            throw error
        }
        self.name = name
        self.rate = rate
        isSharedMixer = Self.chainIncludesDmix(handle)
        pcm = handle
        self.maximumWriteFrames = maximumWriteFrames
        converted = .allocate(byteCount: maximumWriteFrames * 2 * 4, alignment: 16)
    }

    deinit {
        snd_pcm_drop(pcm)
        snd_pcm_close(pcm)
        converted.deallocate()
    }

    /// Whether `pcm` is dmix or has dmix among its slaves. libasound has no public call that walks
    /// a PCM's slaves, but `snd_pcm_dump` describes the whole chain, each plugin naming its slave
    /// after "Slave: " (`plug` its current one), and dmix calls itself "Direct Stream Mixing PCM"
    /// (pcm_dmix.c, unchanged since 2003). Called once the hardware parameters are set: until
    /// then `plug` has not built its chain.
    private static func chainIncludesDmix(_ pcm: OpaquePointer) -> Bool {
        if snd_pcm_type(pcm) == SND_PCM_TYPE_DMIX { return true }
        var output: OpaquePointer?
        guard snd_output_buffer_open(&output) == 0, let output else { return false }
        defer { snd_output_close(output) }
        guard snd_pcm_dump(pcm, output) == 0 else { return false }
        var text: UnsafeMutablePointer<CChar>?
        let length = snd_output_buffer_string(output, &text)
        guard let text, length > 0 else { return false }
        // Compared byte by byte, not with `String.contains`: that one's searcher cost the first
        // open ~350,000 instructions (a Character table, its generic metadata), on `fire`'s path.
        let dump = UnsafeRawBufferPointer(start: text, count: length)
        let needle = Array("Direct Stream Mixing PCM".utf8)
        guard dump.count >= needle.count else { return false }
        return (0...(dump.count - needle.count)).contains { start in
            dump[start] == needle[0] && (1..<needle.count).allSatisfy { dump[start + $0] == needle[$0] }
        }
    }

    private static func configure(
        _ pcm: OpaquePointer, rate: Int, bufferFrames: Int, periodFrames: Int
    ) throws(ALSAError) -> (SampleFormat, Int, Int) {
        var hw: OpaquePointer?
        try ALSAError.check(snd_pcm_hw_params_malloc(&hw), "snd_pcm_hw_params_malloc")
        defer { snd_pcm_hw_params_free(hw) }
        try ALSAError.check(snd_pcm_hw_params_any(pcm, hw), "snd_pcm_hw_params_any")
        try ALSAError.check(
            snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "snd_pcm_hw_params_set_access")
        guard let format = SampleFormat.allCases.first(where: { snd_pcm_hw_params_test_format(pcm, hw, $0.alsa) == 0 })
        else { throw ALSAError(code: EINVAL, call: "snd_pcm_hw_params_set_format (none of FLOAT_LE, S32_LE, S16_LE)") }
        try ALSAError.check(snd_pcm_hw_params_set_format(pcm, hw, format.alsa), "snd_pcm_hw_params_set_format")
        try ALSAError.check(snd_pcm_hw_params_set_channels(pcm, hw, 2), "snd_pcm_hw_params_set_channels (2)")
        try ALSAError.check(snd_pcm_hw_params_set_rate(pcm, hw, UInt32(rate), 0), "snd_pcm_hw_params_set_rate (\(rate))")
        var period = snd_pcm_uframes_t(periodFrames)
        var direction: Int32 = 0
        try ALSAError.check(
            snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, &direction), "snd_pcm_hw_params_set_period_size_near")
        var buffer = snd_pcm_uframes_t(max(bufferFrames, 2 * Int(period)))
        try ALSAError.check(
            snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer), "snd_pcm_hw_params_set_buffer_size_near")
        try ALSAError.check(snd_pcm_hw_params(pcm, hw), "snd_pcm_hw_params")
        snd_pcm_hw_params_get_period_size(hw, &period, &direction)
        snd_pcm_hw_params_get_buffer_size(hw, &buffer)

        var sw: OpaquePointer?
        try ALSAError.check(snd_pcm_sw_params_malloc(&sw), "snd_pcm_sw_params_malloc")
        defer { snd_pcm_sw_params_free(sw) }
        try ALSAError.check(snd_pcm_sw_params_current(pcm, sw), "snd_pcm_sw_params_current")
        // The device starts with the first frame written: a sound into an idle PCM is not held
        // back until a threshold fills.
        try ALSAError.check(snd_pcm_sw_params_set_start_threshold(pcm, sw, 1), "snd_pcm_sw_params_set_start_threshold")
        try ALSAError.check(snd_pcm_sw_params_set_avail_min(pcm, sw, period), "snd_pcm_sw_params_set_avail_min")
        try ALSAError.check(snd_pcm_sw_params(pcm, sw), "snd_pcm_sw_params")
        return (format, Int(buffer), Int(period))
    }

    // MARK: The real-time path: results as libasound gives them (frames, or a negative errno).

    /// Frames free in the ring (`snd_pcm_avail_update`), or a negative errno (`-EPIPE` after an
    /// underrun, `-ESTRPIPE` when suspended, `-ENODEV` when the device is gone).
    func available() -> Int { Int(snd_pcm_avail_update(pcm)) }

    /// Frames between the next frame written and the one being heard (`snd_pcm_delay`), or a
    /// negative errno.
    func delay() -> Int {
        var frames: snd_pcm_sframes_t = 0
        let result = snd_pcm_delay(pcm, &frames)
        return result < 0 ? Int(result) : Int(frames)
    }

    /// Frames that may be taken back (`snd_pcm_rewindable`), or a negative errno.
    func rewindable() -> Int { Int(snd_pcm_rewindable(pcm)) }

    /// Takes back up to `frames` written frames (`snd_pcm_rewind`): the frames taken back, or a
    /// negative errno.
    func rewind(_ frames: Int) -> Int { Int(snd_pcm_rewind(pcm, snd_pcm_uframes_t(frames))) }

    /// Recovers from an underrun or a suspend (`snd_pcm_recover`): 0, or the error it could not
    /// recover from.
    func recover(_ error: Int) -> Int { Int(snd_pcm_recover(pcm, Int32(error), 1)) }

    /// Writes `frames` (at most `maximumWriteFrames`) interleaved stereo floats: frames written,
    /// or a negative errno (`-EAGAIN` when the ring is full).
    func write(_ samples: UnsafePointer<Float>, frames: Int) -> Int {
        let count = frames * 2
        switch format {
        case .float32:
            return Int(snd_pcm_writei(pcm, samples, snd_pcm_uframes_t(frames)))
        case .int32:
            let out = converted.assumingMemoryBound(to: Int32.self)
            for index in 0..<count { out[index] = Int32((min(max(Double(samples[index]), -1), 1) * 2_147_483_647).rounded()) }
        case .int16:
            let out = converted.assumingMemoryBound(to: Int16.self)
            for index in 0..<count { out[index] = Int16((min(max(samples[index], -1), 1) * 32_767).rounded()) }
        }
        return Int(snd_pcm_writei(pcm, converted, snd_pcm_uframes_t(frames)))
    }

    /// The descriptors to poll (`snd_pcm_poll_descriptors`), written to `descriptors`.
    /// - Returns: how many were written (at most `capacity`).
    func pollDescriptors(_ descriptors: UnsafeMutablePointer<pollfd>, capacity: Int) -> Int {
        Int(snd_pcm_poll_descriptors(pcm, descriptors, UInt32(capacity)))
    }

    /// What the polled descriptors mean for the PCM (`snd_pcm_poll_descriptors_revents`): `POLLOUT`
    /// when it takes frames, `POLLERR` on an error (a disconnection).
    func events(_ descriptors: UnsafeMutablePointer<pollfd>, count: Int) -> Int16 {
        var events: UInt16 = 0
        guard snd_pcm_poll_descriptors_revents(pcm, descriptors, UInt32(count), &events) == 0 else { return Int16(POLLERR) }
        return Int16(bitPattern: events)
    }
}
