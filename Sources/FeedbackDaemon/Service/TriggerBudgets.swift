/// How often each client may ask for something: a token bucket per client, which refills at `rate`
/// tokens a second up to `burst`, and from which each request takes one. A client with no bucket
/// starts full. Forget a client when it leaves the bus, so that the table is bounded by the bus's
/// clients.
///
/// Thread safety: a value; its owner keeps it behind its own lock.
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

    /// Buckets refilling at `rate` tokens a second up to `burst`.
    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
    }

    /// Takes a token of `client`'s at `now` (seconds, monotonic) if it has one; returns whether it had.
    mutating func take(_ client: String, now: Double) -> Bool {
        let allowed = refill(client, now: now)
        if allowed { spend(client) }
        return allowed
    }

    /// Refills `client`'s bucket for the time up to `now` (seconds, monotonic) and returns whether
    /// it holds a token, without taking it: for a request that has other checks to pass first.
    mutating func refill(_ client: String, now: Double) -> Bool {
        var bucket = buckets[client] ?? Bucket(tokens: burst, time: now)
        bucket.tokens = min(burst, bucket.tokens + (now - bucket.time) * rate)
        bucket.time = now
        buckets[client] = bucket
        return bucket.tokens >= 1
    }

    /// Takes the token `refill` found in `client`'s bucket.
    mutating func spend(_ client: String) {
        buckets[client]?.tokens -= 1
    }

    /// Forgets `client`'s bucket.
    mutating func forget(_ client: String) {
        buckets[client] = nil
    }
}
