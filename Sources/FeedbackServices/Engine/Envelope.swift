import Glibc

/// A value over the engine's timeline: piecewise linear between breakpoints at absolute frames,
/// constant before the first and after the last.
///
/// Gain, pan and fades are envelopes rather than state that changes as audio is rendered, so the
/// mix is a pure function of the timeline: rendering a range again gives the same samples, which is
/// what lets the engine rewrite audio the server has queued but not yet played.
package struct Envelope: Sendable, Equatable {
    struct Point: Sendable, Equatable {
        var frame: Int64
        var value: Float
    }

    private(set) var points: [Point]

    init(_ value: Float) {
        points = [Point(frame: 0, value: value)]
        points.reserveCapacity(8)
    }

    /// The value at `frame`.
    func value(at frame: Int64) -> Float {
        guard let next = points.firstIndex(where: { $0.frame > frame }) else { return points[points.count - 1].value }
        guard next > 0 else { return points[0].value }
        let a = points[next - 1]
        let b = points[next]
        let fraction = Float(Double(frame - a.frame) / Double(b.frame - a.frame))
        return a.value + (b.value - a.value) * fraction
    }

    /// The value at `frame`, its change per frame, and the first frame after `frame` at which the
    /// slope changes (`Int64.max` if never).
    func segment(at frame: Int64) -> (value: Float, slope: Float, until: Int64) {
        if points.count == 1 { return (points[0].value, 0, .max) }
        guard let next = points.firstIndex(where: { $0.frame > frame }) else {
            return (points[points.count - 1].value, 0, .max)
        }
        guard next > 0 else { return (points[0].value, 0, points[0].frame) }
        let a = points[next - 1]
        let b = points[next]
        let slope = (b.value - a.value) / Float(b.frame - a.frame)
        return (a.value + slope * Float(frame - a.frame), slope, b.frame)
    }

    /// How a ramp moves from its start value to its target.
    package enum Curve: Sendable, Equatable {
        /// A straight line: the level changes by the same amount every frame.
        case linear
        /// A quarter sine: rising as sin(t·π/2), falling as cos(t·π/2) (relative to the ramp's span),
        /// so a fade-out and a fade-in of the same length sum to constant power.
        case equalPower
    }

    /// Segments an equal-power ramp is drawn with. With 32 chords the quarter sine is off by at
    /// most 0.12 % of the span (−0.01 dB), far inside what a crossfade may deviate, and the render
    /// path stays the same piecewise-linear walk.
    static let equalPowerSegments = 32

    /// From `frame` on, moves to `target` over `duration` frames along `curve`, then stays there.
    /// What the envelope did before `frame` is kept, so earlier audio renders as before.
    mutating func ramp(at frame: Int64, to target: Float, over duration: Int64, curve: Curve = .linear) {
        let current = value(at: frame)
        points.removeAll { $0.frame >= frame }
        points.append(Point(frame: frame, value: current))
        let length = max(1, duration)
        if curve == .equalPower && length >= Int64(Self.equalPowerSegments) {
            let segments = Self.equalPowerSegments
            let rising = target > current
            for step in 1..<segments {
                let t = Double(step) / Double(segments)
                let shape = rising ? sin(t * .pi / 2) : 1 - cos(t * .pi / 2)
                points.append(Point(frame: frame + length * Int64(step) / Int64(segments),
                                    value: current + (target - current) * Float(shape)))
            }
        }
        points.append(Point(frame: frame + length, value: target))
    }

    /// Drops the points that only shape frames before `frame`, which will never be rendered again
    /// (the engine renders from its read position on); values from `frame` on are unchanged.
    /// An offline renderer that renders the whole timeline at the end must not call this.
    mutating func forget(before frame: Int64) {
        guard let last = points.lastIndex(where: { $0.frame <= frame }), last > 0 else { return }
        points.removeFirst(last)
    }

    /// The value the envelope settles at.
    var finalValue: Float { points[points.count - 1].value }
}
