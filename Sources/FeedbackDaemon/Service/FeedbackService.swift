import Dispatch
package import FeedbackBus
package import FeedbackServices
import Synchronization

/// Why a feedback ended, as `FeedbackEnded` reports it: libfeedback's `LfbEventEndReason`.
package enum FeedbackEndReason: UInt32, Sendable {
    /// It ran its course: the sound played once (timeout −1), or it could not play (the log says
    /// why: no sound server, a sound the sound theme lacks). A failure ends this way because it is
    /// the reason feedbackd gives one and libfeedback's clients expect nothing else.
    case natural = 0
    /// Its timeout (N > 0 seconds) ran out.
    case expired = 1
    /// It was ended: `EndFeedback`, its client left the bus, or the service stopped.
    case explicit = 2
    /// The theme has no feedback for the event at this profile (libfeedback's −1, sent as `u`).
    case notFound = 0xFFFF_FFFF
}

/// feedbackd's `org.sigxcpu.Feedback` on our engine: events become feedback through a
/// `FeedbackTheme` and play through the one `FeedbackManager`.
///
/// `TriggerFeedback(s app_id, s event, a{sv} hints, i timeout) → u id` looks the event up at the
/// current profile, starts its sound (a sound theme event) and vibration, and returns at once;
/// timeout −1 plays once, 0 loops until ended, N > 0 repeats for N seconds. `FeedbackEnded(u id,
/// u reason)` follows the reply exactly once per id (`FeedbackEndReason`), also for an event with
/// no feedback, which ends at once. `EndFeedback(u id)` ends a feedback of the caller's own
/// (another client's: `AccessDenied`; an id that already ended: nothing). When a client leaves the
/// bus its looping and timed feedbacks (timeout 0 or N) end at once, reason 2, and their sound
/// stops (feedbackd lets them run on); a play-once feedback (−1) still plays to its end, so that a
/// fire-and-forget caller such as `gdbus call` is heard. `app_id` is the client's own claim: it is
/// used in logs, never for permission. `Profile` is `FeedbackSettings`' profile, the one
/// `feedbackctl profile` sets; writing it stores it there and emits `PropertiesChanged`.
///
/// Clients are not trusted, so each is bounded (`Limits`): feedbacks running at once, and triggers
/// a second (a token bucket). A trigger over a limit is refused with
/// `org.freedesktop.DBus.Error.LimitsExceeded`, whose message names the limit; so is one over the
/// service's total, so that the service never grows without bound whatever the number of clients.
///
/// One line goes to the log for every feedback that did not play as asked: the event, the client,
/// the app id and why.
///
/// Thread safety: the bus thread calls the handler methods; the state is behind a Mutex, and the
/// manager's completions are handed to the bus thread, so signals go out in order there.
package final class FeedbackService: BusObjectHandler, Sendable {
    /// The bus name feedbackd's clients call.
    package static let busName = "org.sigxcpu.Feedback"
    /// The object they call.
    package static let objectPath = "/org/sigxcpu/Feedback"
    /// The interface, as `/usr/share/dbus-1/interfaces/org.sigxcpu.Feedback.xml` defines it.
    package static let interface = "org.sigxcpu.Feedback"
    /// Its members.
    package static let members: [BusMember] = [
        .method(
            "TriggerFeedback", signature: "ssa{sv}i", result: "u", names: ["app_id", "event", "hints", "timeout", "id"]),
        .method("EndFeedback", signature: "u", result: "", names: ["id"]),
        .signal("FeedbackEnded", signature: "uu", names: ["id", "reason"]),
        .property("Profile", signature: "s", writable: true, emitsChange: true),
    ]

    /// The longest app id or event name accepted, in bytes.
    package static let maximumNameLength = 255
    /// The most hints a call may carry.
    package static let maximumHints = 32
    /// How long a stop (SIGTERM, a lost name) waits for the feedbacks' sounds to end before it
    /// reports them ended anyway.
    static let shutdownGrace = 0.5

    /// How much one client, and all of them together, may ask for. A value; safe to share across threads.
    package struct Limits: Sendable, Equatable {
        /// Feedbacks one client may have running at once.
        package var feedbacksPerClient = 16
        /// Feedbacks running at once, all clients together.
        package var feedbacks = 256
        /// Triggers a second one client may send, sustained.
        package var triggersPerSecond = 20.0
        /// Triggers one client may send at once after a quiet spell (the bucket's size).
        package var triggerBurst = 40.0

        /// The defaults.
        package init() {}
    }

    /// Where every feedback plays.
    package let manager: FeedbackManager
    /// The limits in force.
    package let limits: Limits
    private let log: @Sendable (String) -> Void
    private let completions = DispatchQueue(label: "FeedbackService.completions")

    private struct Ongoing {
        var client: String
        var appID: String
        var event: String
        /// Timeout −1: it ends by itself, so it may outlive its client.
        var once: Bool
        var playback: FeedbackPlayback?
        /// Why it is being ended, once something asked; nil while it runs its course.
        var reason: FeedbackEndReason?
    }

    /// A client's trigger budget: tokens refill at `triggersPerSecond` up to `triggerBurst`.
    private struct Bucket {
        var tokens: Double
        var time: Double
    }

    private struct State {
        var theme: FeedbackTheme
        var feedbacks: [UInt32: Ongoing] = [:]
        /// By unique name; removed when the client leaves the bus, so bounded by the bus's clients.
        var buckets: [String: Bucket] = [:]
        var nextID: UInt32 = 1
        var stopping = false
        var stopped = false
        var reportedNoVibrator = false
    }
    private let state: Mutex<State>

    /// A service giving `theme`'s feedback through `manager` within `limits`; `log` receives one
    /// line at a time.
    package init(
        manager: FeedbackManager, theme: FeedbackTheme, limits: Limits = Limits(),
        log: @escaping @Sendable (String) -> Void
    ) {
        self.manager = manager
        self.limits = limits
        self.log = log
        state = Mutex(State(theme: theme))
    }

    /// Serves the interface on `bus` and follows clients leaving the bus.
    package func export(on bus: BusContext) throws(BusError) {
        try bus.export(path: Self.objectPath, interface: Self.interface, members: Self.members, handler: self)
        try bus.onClientLeft { [self] name, bus in clientLeft(name, bus: bus) }
    }

    // MARK: - BusObjectHandler

    /// `TriggerFeedback` and `EndFeedback`.
    package func call(_ message: BusMessage, bus: BusContext) throws(BusError) -> [BusValue] {
        switch message.member {
        case "TriggerFeedback":
            let appID = try message.readString()
            let event = try message.readString()
            _ = try message.readVariantDictionary(limit: Self.maximumHints)
            let timeout = try message.readInt32()
            return [.uint32(try trigger(appID: appID, event: event, timeout: timeout, client: message.sender, bus: bus))]
        case "EndFeedback":
            try endFeedback(try message.readUInt32(), client: message.sender, bus: bus)
            return []
        default:
            throw .failed("no method \(message.member)")
        }
    }

    /// `Profile`: the profile the next feedback obeys.
    package func get(_ name: String, bus: BusContext) throws(BusError) -> BusValue {
        guard name == "Profile" else { throw .invalidArgs("no property \(name)") }
        return .string(manager.profile.rawValue)
    }

    /// `Profile`: stored in the settings file, then announced with `PropertiesChanged`.
    package func set(_ name: String, to value: BusValue, bus: BusContext) throws(BusError) {
        guard name == "Profile" else { throw .invalidArgs("no property \(name)") }
        guard let text = value.string, let profile = FeedbackProfile(rawValue: text) else {
            throw .invalidArgs("'\(value.string?.prefix(Self.maximumNameLength) ?? "")' is not a profile: full, quiet or silent")
        }
        if let fixed = manager.settings.environmentProfile {
            throw .failed("the profile is fixed at \(fixed.rawValue) by \(FeedbackSettings.environmentVariable) in the service's environment")
        }
        do {
            try manager.settings.store(profile)
        } catch {
            throw .failed("cannot store the profile: \(error)")
        }
        try bus.emitPropertiesChanged(path: Self.objectPath, interface: Self.interface, properties: ["Profile"])
    }

    // MARK: - Feedback

    private func trigger(appID: String, event: String, timeout: Int32, client: String, bus: BusContext) throws(BusError)
        -> UInt32
    {
        guard appID.utf8.count <= Self.maximumNameLength, event.utf8.count <= Self.maximumNameLength else {
            throw .invalidArgs("app_id and event may have at most \(Self.maximumNameLength) bytes")
        }
        guard timeout >= -1 else {
            throw .invalidArgs("timeout \(timeout): −1 plays once, 0 until ended, N > 0 for N seconds")
        }
        let profile = manager.profile
        let now = MonotonicClock.now
        let lookup = state.withLock { state -> Result<(id: UInt32, feedbacks: [ThemeFeedback]), BusError> in
            guard !state.stopping else { return .failure(.failed("feedbackservicesd is stopping")) }
            if let refusal = admit(client, now: now, state: &state) { return .failure(refusal) }
            var id = state.nextID
            while id == 0 || state.feedbacks[id] != nil { id &+= 1 }
            state.nextID = id &+ 1
            return .success((id, state.theme.feedbacks(for: event, profile: profile)))
        }
        let (id, feedbacks) = try lookup.get()
        let who = "client \(client), app id '\(appID)'"
        let effect = feedbacks.lazy.compactMap { feedback -> String? in
            if case .sound(let effect) = feedback { effect } else { nil }
        }.first
        let vibrates = feedbacks.contains { if case .vibration = $0 { true } else { false } }
        guard effect != nil || vibrates else {
            let leds = feedbacks.isEmpty ? "" : " but LEDs, which are not driven yet"
            log("feedback \(id) for event '\(event)' (\(who)): the theme has no feedback for it at profile \(profile.rawValue)\(leds)")
            let connection = bus.connection
            // After the reply, which the bus thread sends when this handler returns.
            connection.perform { [self] bus in emitEnded(id, .notFound, bus: bus) }
            return id
        }
        let type: FeedbackType = effect == nil ? .vibrateOnly : vibrates ? .audioAndVibrate : .audioOnly
        let options = PlaybackOptions(playCount: timeout == -1 ? 1 : PlaybackOptions.forever)
        state.withLock { $0.feedbacks[id] = Ongoing(client: client, appID: appID, event: event, once: timeout == -1) }
        let connection = bus.connection
        let playback = manager.play(.event(effect ?? event), type: type, options: options, queue: completions) {
            [self] result in
            connection.perform { [self] bus in finished(id, result: result, bus: bus) }
        }
        state.withLock { $0.feedbacks[id]?.playback = playback }
        if timeout > 0 {
            DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(Int(timeout))) { [self] in
                connection.perform { [self] _ in end(id, reason: .expired) }
            }
        }
        return id
    }

    /// Why `client` may not trigger now, if it may not: a limit it reached. Takes a token when it may.
    private func admit(_ client: String, now: Double, state: inout State) -> BusError? {
        var bucket = state.buckets[client] ?? Bucket(tokens: limits.triggerBurst, time: now)
        bucket.tokens = min(limits.triggerBurst, bucket.tokens + (now - bucket.time) * limits.triggersPerSecond)
        bucket.time = now
        defer { state.buckets[client] = bucket }
        guard bucket.tokens >= 1 else {
            return .limitsExceeded(
                "trigger rate: client \(client) sent more than \(Int(limits.triggersPerSecond)) triggers a second "
                    + "(after a burst of \(Int(limits.triggerBurst)))")
        }
        let own = state.feedbacks.values.lazy.filter { $0.client == client }.count
        guard own < limits.feedbacksPerClient else {
            return .limitsExceeded(
                "concurrent feedbacks per client: client \(client) has \(own) running, the most one client may have")
        }
        guard state.feedbacks.count < limits.feedbacks else {
            return .limitsExceeded("concurrent feedbacks: \(limits.feedbacks) are running, the most the service runs")
        }
        bucket.tokens -= 1
        return nil
    }

    private func endFeedback(_ id: UInt32, client: String, bus: BusContext) throws(BusError) {
        // An id that already ended is not an error: a client's EndFeedback may cross its FeedbackEnded.
        guard let owner = state.withLock({ $0.feedbacks[id]?.client }) else { return }
        guard owner == client else { throw .accessDenied("feedback \(id) belongs to another client") }
        end(id, reason: .explicit)
    }

    /// Stops feedback `id` if it still runs; `FeedbackEnded` follows when its parts have ended.
    private func end(_ id: UInt32, reason: FeedbackEndReason) {
        let playback = state.withLock { state -> FeedbackPlayback? in
            guard state.feedbacks[id] != nil, state.feedbacks[id]?.reason == nil else { return nil }
            state.feedbacks[id]?.reason = reason
            return state.feedbacks[id]?.playback
        }
        playback?.stop()
    }

    private func clientLeft(_ name: String, bus: BusContext) {
        let ids = state.withLock { state in
            state.buckets[name] = nil
            return state.feedbacks.filter { $0.value.client == name && !$0.value.once }.map(\.key)
        }
        for id in ids { end(id, reason: .explicit) }
    }

    /// The manager's result for `id`, on the bus thread.
    private func finished(_ id: UInt32, result: FeedbackResult, bus: BusContext) {
        let (ended, firstNoVibrator, lastToStop) = state.withLock { state in
            let ended = state.feedbacks.removeValue(forKey: id)
            var firstNoVibrator = false
            if case .noVibrator = result.vibration, !state.reportedNoVibrator {
                state.reportedNoVibrator = true
                firstNoVibrator = true
            }
            return (ended, firstNoVibrator, state.stopping && state.feedbacks.isEmpty)
        }
        // Nil: a stop that could not wait any longer has reported it already.
        if let ended {
            let who = "event '\(ended.event)' (client \(ended.client), app id '\(ended.appID)')"
            if let problem = Self.problem(result) {
                log("feedback \(id) for \(who) did not play as asked: \(problem)")
            }
            if firstNoVibrator, case .noVibrator(let error) = result.vibration {
                log("no vibrator, so feedbacks give no vibration (said once): \(error)")
            }
            emitEnded(id, ended.reason ?? .natural, bus: bus)
        }
        if lastToStop { finishStopping(bus: bus) }
    }

    /// What went wrong, if the sound or the vibration failed. A missing vibrator is said once per
    /// run, not per feedback: most desktops have none.
    private static func problem(_ result: FeedbackResult) -> String? {
        var problems: [String] = []
        switch result.sound {
        case .failed(let error): problems.append("its sound failed: \(error)")
        case .noAudioOutput(let error): problems.append("no audio output: \(error)")
        default: break
        }
        if case .failed(let error) = result.vibration { problems.append("its vibration failed: \(error)") }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    private func emitEnded(_ id: UInt32, _ reason: FeedbackEndReason, bus: BusContext) {
        do {
            try bus.emitSignal(
                path: Self.objectPath, interface: Self.interface, member: "FeedbackEnded",
                [.uint32(id), .uint32(reason.rawValue)])
        } catch {
            log("cannot send FeedbackEnded for feedback \(id): \(error)")
        }
    }

    // MARK: - Stopping

    /// Ends every feedback (reason 2), sends their `FeedbackEnded` once their sound stopped (or
    /// after `shutdownGrace`), gives the name back and ends the loop. Later triggers are refused.
    package func stop(bus: BusContext) {
        let (ids, already) = state.withLock { state in
            defer { state.stopping = true }
            return (Array(state.feedbacks.keys), state.stopping)
        }
        guard !already else { return }
        for id in ids { end(id, reason: .explicit) }
        if ids.isEmpty { return finishStopping(bus: bus) }
        let connection = bus.connection
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.shutdownGrace) { [self] in
            connection.perform { [self] bus in
                let late = state.withLock { state in
                    defer { state.feedbacks.removeAll() }
                    return state.feedbacks.map { ($0.key, $0.value.reason ?? .explicit) }
                }
                for (id, reason) in late {
                    log("feedback \(id) did not stop within \(Self.shutdownGrace) s; reported ended")
                    emitEnded(id, reason, bus: bus)
                }
                finishStopping(bus: bus)
            }
        }
    }

    private func finishStopping(bus: BusContext) {
        guard state.withLock({ state in
            defer { state.stopped = true }
            return !state.stopped
        }) else { return }
        bus.releaseName(Self.busName)
        bus.exit()
    }
}
