internal import CEbur128

/// EBU R128 integrated loudness (ITU-R BS.1770, gated), measured with libebur128.
enum Loudness {
    /// The integrated loudness of `buffer` in LUFS, or nil when it cannot be measured (silent, or no
    /// 400 ms block above the −70 LUFS gate).
    ///
    /// A mono buffer is measured as dual mono, because the engine plays mono on both speakers at
    /// full level: that is what listeners hear, 3 LU louder than one speaker alone.
    static func integrated(_ buffer: PCMBuffer) -> Double? {
        guard let state = ebur128_init(UInt32(buffer.channelCount), UInt(buffer.sampleRate), Int32(EBUR128_MODE_I.rawValue))
        else { return nil }
        defer {
            var owned: UnsafeMutablePointer<ebur128_state>? = state
            ebur128_destroy(&owned)
        }
        if buffer.channelCount == 1 {
            _ = ebur128_set_channel(state, 0, Int32(EBUR128_DUAL_MONO.rawValue))
        }
        let added = buffer.samples.withUnsafeBufferPointer { samples in
            ebur128_add_frames_float(state, samples.baseAddress, buffer.frameCount)
        }
        var loudness = 0.0
        guard added == EBUR128_SUCCESS.rawValue, ebur128_loudness_global(state, &loudness) == EBUR128_SUCCESS.rawValue,
            loudness.isFinite
        else { return nil }
        return loudness
    }

    /// Why loudness cannot be measured on this machine at all (libebur128 missing), or nil.
    static var unavailableReason: String? {
        OptionalLibrary.ebur128.unavailableReason
    }
}
