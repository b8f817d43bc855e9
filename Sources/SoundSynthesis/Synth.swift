/// Building blocks for the shipped theme's sounds: mono `Double` samples at 48 kHz.
///
/// Everything here is a pure function of its arguments (noise included: it comes from a seeded
/// generator), so the theme regenerates byte for byte.
public enum Synth {
    /// The rate of every sound, in Hz: the Sound Theme spec's recommended rate and the engine's.
    public static let sampleRate = 48_000

    /// How the loudness of a note evolves.
    public enum Envelope: Sendable {
        /// Full level from the attack to the release: tones, beeps.
        case sustained
        /// Exponential decay with this time constant in seconds (to 1/e): struck sounds.
        case decay(Double)
    }

    /// One sine component of a note: a multiple of the note's frequency, its level, and how much
    /// faster than the note it decays (1 = same rate).
    public struct Partial: Sendable {
        let ratio: Double
        let level: Double
        let decayFactor: Double

        /// Creates a partial.
        public init(_ ratio: Double, _ level: Double, decayFactor: Double = 1) {
            self.ratio = ratio
            self.level = level
            self.decayFactor = decayFactor
        }
    }

    /// The timbres the theme uses.
    public enum Timbre: Sendable {
        /// A sine: telephony tones, DTMF.
        case pure
        /// A struck metal bar: bright, inharmonic overtones that die quickly.
        case bell
        /// A wooden bar: strong fundamental, 4th and 10th partials.
        case marimba
        /// A wine glass: few, clear inharmonic partials.
        case glass
        /// Odd harmonics falling off as 1/n: a soft square wave.
        case reed
        /// Harmonics 1–6: a brass-like chord tone.
        case brass

        var partials: [Partial] {
            switch self {
            case .pure: [Partial(1, 1)]
            case .bell: [Partial(1, 1), Partial(2.0, 0.45, decayFactor: 1.6), Partial(3.0, 0.25, decayFactor: 2.2),
                         Partial(4.16, 0.12, decayFactor: 3), Partial(5.43, 0.07, decayFactor: 4)]
            case .marimba: [Partial(1, 1), Partial(3.93, 0.28, decayFactor: 3), Partial(9.87, 0.06, decayFactor: 6)]
            case .glass: [Partial(1, 1), Partial(2.76, 0.3, decayFactor: 1.8), Partial(5.4, 0.1, decayFactor: 3)]
            case .reed: [Partial(1, 1), Partial(3, 1.0 / 3), Partial(5, 0.2), Partial(7, 1.0 / 7)]
            case .brass: [Partial(1, 1), Partial(2, 0.7), Partial(3, 0.5), Partial(4, 0.32), Partial(5, 0.18),
                          Partial(6, 0.1)]
            }
        }
    }

    /// The number of frames in `seconds`.
    public static func frames(_ seconds: Double) -> Int {
        Int((seconds * Double(sampleRate)).rounded())
    }

    /// `seconds` of silence.
    public static func silence(_ seconds: Double) -> [Double] {
        [Double](repeating: 0, count: frames(seconds))
    }

    /// A note of `frequency` Hz lasting `duration` s, at peak level `level` before the envelope, with
    /// a raised-cosine attack and release so it starts and stops without a click.
    public static func note(
        _ frequency: Double, _ duration: Double, timbre: Timbre = .pure, envelope: Envelope = .sustained,
        level: Double = 1, attack: Double = 0.004, release: Double = 0.012
    ) -> [Double] {
        tone(timbre.partials.map { Partial($0.ratio * frequency, $0.level, decayFactor: $0.decayFactor) },
             duration, envelope: envelope, level: level, attack: attack, release: release)
    }

    /// The sum of sines at absolute frequencies (`Partial.ratio` is in Hz here), shaped like `note`.
    /// Partials at or above 20 kHz are dropped.
    public static func tone(
        _ partials: [Partial], _ duration: Double, envelope: Envelope = .sustained, level: Double = 1,
        attack: Double = 0.004, release: Double = 0.012
    ) -> [Double] {
        let count = frames(duration)
        var output = [Double](repeating: 0, count: count)
        for partial in partials where partial.ratio < 20_000 {
            // A rotating phasor: exact IEEE arithmetic, four multiplications a sample.
            let step = partial.ratio / Double(sampleRate)
            let c = DeterministicMath.cosCycles(step)
            let s = DeterministicMath.sinCycles(step)
            var x = 1.0
            var y = 0.0
            var gain = partial.level
            var decay = 1.0
            if case .decay(let tau) = envelope {
                decay = DeterministicMath.exp(-partial.decayFactor / (tau * Double(sampleRate)))
            }
            for index in 0..<count {
                output[index] += y * gain
                let nextX = x * c - y * s
                y = y * c + x * s
                x = nextX
                gain *= decay
            }
        }
        let total = partials.reduce(0) { $0 + $1.level }
        let scale = total > 0 ? level / total : 0
        for index in 0..<count { output[index] *= scale }
        applyRamps(&output, attack: attack, release: release)
        return output
    }

    /// A sine whose frequency moves exponentially from `start` to `end` Hz over `duration` s.
    public static func glide(
        from start: Double, to end: Double, _ duration: Double, level: Double = 1, attack: Double = 0.004,
        release: Double = 0.012
    ) -> [Double] {
        let count = frames(duration)
        var output = [Double](repeating: 0, count: count)
        let ratio = DeterministicMath.exp(logarithm(end / start) / Double(max(count - 1, 1)))
        var frequency = start
        var phase = 0.0
        for index in 0..<count {
            output[index] = level * DeterministicMath.sinCycles(phase)
            phase += frequency / Double(sampleRate)
            phase -= phase.rounded(.down)
            frequency *= ratio
        }
        applyRamps(&output, attack: attack, release: release)
        return output
    }

    /// White noise from a seeded generator, band-passed around `centre` Hz (quality `q`), decaying
    /// with time constant `decay` s.
    public static func noiseBurst(
        seed: UInt64, _ duration: Double, centre: Double, q: Double = 1.5, decay: Double, level: Double = 1
    ) -> [Double] {
        var random = SeededRandom(seed: seed)
        let count = frames(duration)
        var filter = BandPass(centre: centre, q: q)
        let fall = DeterministicMath.exp(-1 / (decay * Double(sampleRate)))
        var gain = 1.0
        var output = [Double](repeating: 0, count: count)
        for index in 0..<count {
            output[index] = filter.process(random.nextSigned()) * gain
            gain *= fall
        }
        let peak = output.reduce(0) { max($0, abs($1)) }
        if peak > 0 { for index in 0..<count { output[index] *= level / peak } }
        applyRamps(&output, attack: 0.0005, release: min(0.004, duration / 4))
        return output
    }

    /// Adds `sound` into `track` starting `offset` s in, scaled by `gain`, growing the track as needed.
    public static func mix(_ sound: [Double], into track: inout [Double], at offset: Double, gain: Double = 1) {
        let start = frames(offset)
        if track.count < start + sound.count {
            track.append(contentsOf: repeatElement(0, count: start + sound.count - track.count))
        }
        for index in sound.indices { track[start + index] += sound[index] * gain }
    }

    /// Sounds laid out at their start times (s).
    public static func sequence(_ parts: [(at: Double, sound: [Double])]) -> [Double] {
        var track: [Double] = []
        for part in parts { mix(part.sound, into: &track, at: part.at) }
        return track
    }

    /// `sound` repeated `count` times, each `period` s after the last: a cadence such as a busy tone.
    public static func cadence(_ sound: [Double], period: Double, count: Int) -> [Double] {
        sequence((0..<count).map { (at: Double($0) * period, sound: sound) })
    }

    /// The finished sound: scaled so its peak is `peakDecibels` dBFS, with a short raised-cosine fade
    /// at each end (so the first and last samples are zero) and `tail` s of silence after.
    public static func finish(_ sound: [Double], peakDecibels: Double, tail: Double = 0) -> [Double] {
        var output = sound + silence(tail)
        let peak = output.reduce(0) { max($0, abs($1)) }
        guard peak > 0 else { return output }
        let gain = DeterministicMath.amplitude(decibels: peakDecibels) / peak
        for index in output.indices { output[index] *= gain }
        applyRamps(&output, attack: 0.001, release: 0.003)
        return output
    }

    /// Raised-cosine ramps: from exactly 0 over `attack` s, and to exactly 0 over `release` s.
    static func applyRamps(_ samples: inout [Double], attack: Double, release: Double) {
        let count = samples.count
        guard count > 1 else { return }
        let rise = min(frames(attack), count / 2)
        let fall = min(frames(release), count / 2)
        for index in 0..<rise {
            samples[index] *= 0.5 - 0.5 * DeterministicMath.cosCycles(Double(index) / Double(2 * rise))
        }
        for index in 0..<fall {
            samples[count - 1 - index] *= 0.5 - 0.5 * DeterministicMath.cosCycles(Double(index) / Double(2 * fall))
        }
    }

    /// ln(x) for x > 0, by Newton's method on `DeterministicMath.exp`.
    static func logarithm(_ x: Double) -> Double {
        var y = 0.0
        for _ in 0..<60 {
            let e = DeterministicMath.exp(y)
            let next = y + 2 * (x - e) / (x + e)
            if next == y { break }
            y = next
        }
        return y
    }
}

/// xorshift64*: a tiny, fully specified generator, so noise is the same on every machine.
struct SeededRandom {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed
    }

    /// Uniform in [-1, 1).
    mutating func nextSigned() -> Double {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        let value = state &* 0x2545_F491_4F6C_DD1D
        return Double(value >> 11) / Double(1 << 52) - 1
    }
}

/// A two-pole band-pass filter (RBJ cookbook, constant 0 dB peak gain).
struct BandPass {
    private let b0, b2, a1, a2: Double
    private var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0

    init(centre: Double, q: Double) {
        let cycles = centre / Double(Synth.sampleRate)
        let alpha = DeterministicMath.sinCycles(cycles) / (2 * q)
        let a0 = 1 + alpha
        b0 = alpha / a0
        b2 = -alpha / a0
        a1 = -2 * DeterministicMath.cosCycles(cycles) / a0
        a2 = (1 - alpha) / a0
    }

    mutating func process(_ x: Double) -> Double {
        let y = b0 * x + b2 * x2 - a1 * y1 - a2 * y2
        x2 = x1
        x1 = x
        y2 = y1
        y1 = y
        return y
    }
}
