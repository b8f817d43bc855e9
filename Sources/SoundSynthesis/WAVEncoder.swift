/// Encodes samples as a plain 16-bit PCM WAV file (`WAVE_FORMAT_PCM`, 44-byte header, no other chunks).
///
/// Written by hand rather than with libsndfile so that the bytes depend on nothing but the samples:
/// no library version can add a chunk or change a header field, and the rounding is specified here
/// (nearest, ties to even). Plain 16-bit PCM is also the one WAV flavour libcanberra reads.
public enum WAVEncoder {
    /// The file's bytes for interleaved `samples` (nominally −1…1; beyond that they clip) with
    /// `channelCount` channels at `sampleRate` Hz.
    public static func encode(_ samples: [Double], channelCount: Int = 1, sampleRate: Int = Synth.sampleRate) -> [UInt8] {
        let dataSize = samples.count * 2
        var bytes: [UInt8] = []
        bytes.reserveCapacity(44 + dataSize)
        func text(_ string: String) { bytes += Array(string.utf8) }
        func u32(_ value: Int) { for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8((value >> shift) & 0xFF)) } }
        func u16(_ value: Int) { bytes.append(UInt8(value & 0xFF)); bytes.append(UInt8((value >> 8) & 0xFF)) }
        text("RIFF")
        u32(36 + dataSize)
        text("WAVE")
        text("fmt ")
        u32(16)
        u16(1)
        u16(channelCount)
        u32(sampleRate)
        u32(sampleRate * channelCount * 2)
        u16(channelCount * 2)
        u16(16)
        text("data")
        u32(dataSize)
        for sample in samples {
            let value = Int16(clamping: Int((sample * 32767).rounded(.toNearestOrEven)))
            u16(Int(UInt16(bitPattern: value)))
        }
        return bytes
    }
}
