/// The 64-bit FNV-1a hash, fed one 64-bit value at a time: names for content (libcanberra's cache
/// of written sounds, the decoded-sound store's entries) and the store's checksum of its samples.
/// Fast and well spread, not collision-resistant: never for what an adversary chooses to collide.
struct FNV1a {
    /// The hash of what was mixed in so far.
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    /// Mixes in `word`.
    mutating func mix(_ word: UInt64) {
        value = (value ^ word) &* 0x0000_0100_0000_01b3
    }
}
