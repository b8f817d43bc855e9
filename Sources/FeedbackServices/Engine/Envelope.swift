/// A value over the engine's timeline: piecewise linear between breakpoints at absolute frames,
/// constant before the first and after the last.
///
/// Gain, pan and fades are envelopes rather than state that changes as audio is rendered, so the
/// mix is a pure function of the timeline: rendering a range again gives the same samples, which is
/// what lets the engine rewrite audio the server has queued but not yet played.
struct Envelope: Sendable, Equatable {
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

    /// From `frame` on, moves linearly to `target` over `duration` frames, then stays there.
    /// What the envelope did before `frame` is kept, so earlier audio renders as before.
    mutating func ramp(at frame: Int64, to target: Float, over duration: Int64) {
        let current = value(at: frame)
        points.removeAll { $0.frame >= frame }
        // Points long past are no longer needed once a newer one precedes `frame`.
        if points.count > 4 { points.removeFirst(points.count - 4) }
        points.append(Point(frame: frame, value: current))
        points.append(Point(frame: frame + max(1, duration), value: target))
    }

    /// The value the envelope settles at.
    var finalValue: Float { points[points.count - 1].value }
}
