/// Sine and exponential computed with IEEE-754 `Double` arithmetic only.
///
/// The shipped theme must come out byte-identical on every machine that regenerates it. The C
/// library's `sin` and `exp` may differ in the last bit between glibc versions and CPUs, and a
/// one-bit difference can flip a rounded 16-bit sample; these polynomials cannot. Their error
/// (below 1e-15 relative) is far under the 16-bit quantisation step (3e-5).
enum DeterministicMath {
    static let twoPi = 6.283185307179586

    /// sin(2π·`cycles`), for any finite `cycles`.
    static func sinCycles(_ cycles: Double) -> Double {
        // Reduce to r ∈ [-0.5, 0.5) cycles, then to |r| ≤ 0.25 by symmetry, so the series converges fast.
        var r = cycles - (cycles + 0.5).rounded(.down)
        if r > 0.25 { r = 0.5 - r } else if r < -0.25 { r = -0.5 - r }
        return sinSeries(r * twoPi)
    }

    /// cos(2π·`cycles`).
    static func cosCycles(_ cycles: Double) -> Double {
        sinCycles(cycles + 0.25)
    }

    /// eˣ for |x| up to a few hundred.
    static func exp(_ x: Double) -> Double {
        // eˣ = 2ᵏ·eʳ with |r| ≤ ln2/2; the Taylor series of eʳ then needs 18 terms for full precision.
        let ln2 = 0.6931471805599453
        let k = (x / ln2).rounded()
        let r = x - k * ln2
        var term = 1.0
        var sum = 1.0
        for n in 1...18 {
            term = term * r / Double(n)
            sum += term
        }
        var scale = 1.0
        let two: Double = k >= 0 ? 2 : 0.5
        for _ in 0..<Int(abs(k)) { scale *= two }
        return sum * scale
    }

    /// 10^(decibels / 20): the amplitude ratio of a level in dB.
    static func amplitude(decibels: Double) -> Double {
        exp(decibels / 20 * 2.302585092994046)
    }

    /// Taylor series of sin(x) for |x| ≤ π/2, 12 terms (the last term is below 1e-22).
    private static func sinSeries(_ x: Double) -> Double {
        let x2 = x * x
        var term = x
        var sum = x
        var n = 1.0
        for _ in 0..<12 {
            term = -term * x2 / ((n + 1) * (n + 2))
            sum += term
            n += 2
        }
        return sum
    }
}
