/// How often each client may ask for something: a token bucket per client, which refills at `rate`
/// tokens a second up to `burst`, and from which each request takes one. A client with no bucket
/// starts full. Forget a client when it leaves the bus, so that the table is bounded by the bus's
/// clients.
///
/// A value; its owner keeps it behind its own lock.
struct TriggerBudgets {
    /// Tokens a second, sustained.
    let rate: Double
    /// The most tokens a bucket holds: what a client may ask for at once after a quiet spell.
    let burst: Double

    private struct Bucket {
        var tokens: Double
        var time: Double
    }
    private var buckets: [String: Bucket] = [:]

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
    }

    /// Takes a token of `client`'s at `now` (seconds, monotonic) if it has one; returns whether it had.
    mutating func take(_ client: String, now: Double) -> Bool {
        var bucket = buckets[client] ?? Bucket(tokens: burst, time: now)
        bucket.tokens = min(burst, bucket.tokens + (now - bucket.time) * rate)
        bucket.time = now
        let allowed = bucket.tokens >= 1
        if allowed { bucket.tokens -= 1 }
        buckets[client] = bucket
        return allowed
    }

    /// Forgets `client`'s bucket.
    mutating func forget(_ client: String) {
        buckets[client] = nil
    }
}
