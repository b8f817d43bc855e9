import FeedbackBus
import FeedbackServices

/// The plays of `org.feedbackservices.SystemSounds1` as they run. `SystemSoundsService`, the
/// interface's adapter, decodes a call and looks its sound up; here the play is numbered within
/// the limits (a `ClientSessions` table, which also keeps every client's token bucket), stopped
/// by its client (`Stop`, `StopAll`), by `StopDetached` or by the service stopping, and ended
/// exactly once: `ended` gets its id, `PlayEnded`'s how and why, and its client — never for a
/// client that left the bus, whose plays run on unannounced (`ClientLeftPolicy.letRun`).
///
/// Thread safety: the bus thread calls it; the state is behind a lock, and the manager's
/// completions are handed to the bus thread, so ends are reported in order there.
final class SystemSoundPlays: Sendable {
    /// How its refusals name plays.
    static let sessionWording = SessionWording(request: "play", verb: "started", running: "plays")

    /// What the service keeps of a play; its client, and whether the client left (then its
    /// `PlayEnded` is not sent), are its session's.
    private struct Play {
        var what: String
        var playback: FeedbackPlayback?
        /// Why it is being stopped, once something asked.
        var stopReason: String?
        /// The `detached` option's group, and the user who started the play (nil when the bus did
        /// not say: then `StopDetached` never reaches it).
        var detached: (group: String, uid: UInt32?)?
    }

    /// A `StopDetached` call waiting for the plays it stopped to end.
    private struct DetachedStop {
        var waiting: Set<UInt32>
        var stopped: [[BusValue]]
        var reply: PendingReply
    }

    private struct State {
        /// The plays, their caps, and every client's play budget, which `Describe` draws on too.
        var plays: ClientSessions<Play>
        var detachedStops: [DetachedStop] = []
    }
    private let state: Lock<State>
    private let limits: SessionLimits
    private let log: @Sendable (String) -> Void
    /// Told of each play's end: its id, how and why, and its client; on the bus thread.
    private let ended: @Sendable (UInt32, SystemSounds1.How, String, String, BusContext) -> Void

    /// Plays within `limits` (`StopDetached` calls waiting at once: at most `limits.total`); `log`
    /// receives one line at a time, `ended` each play's end.
    init(
        limits: SessionLimits, log: @escaping @Sendable (String) -> Void,
        ended: @escaping @Sendable (UInt32, SystemSounds1.How, String, String, BusContext) -> Void
    ) {
        self.limits = limits
        self.log = log
        self.ended = ended
        state = Lock(State(plays: ClientSessions(limits: limits, clientLeftPolicy: .letRun)))
    }

    /// Whether the service is stopping (`stop(bus:)`): later requests are refused.
    var isStopping: Bool { state.withLock { $0.plays.isStopping } }

    /// Takes one of `client`'s play tokens (the rate limit), or refuses.
    func takeToken(_ client: String) throws(BusError) {
        let now = MonotonicClock.now
        do throws(SessionRefusal) {
            try state.withLock { state throws(SessionRefusal) in try state.plays.takeToken(client, now: now) }
        } catch {
            throw sessionRefusal(error, client: client)
        }
    }

    /// A refusal of `client`'s request as the reply says it.
    private func sessionRefusal(_ refusal: SessionRefusal, client: String) -> BusError {
        refusal.busError(client: client, limits: limits, wording: Self.sessionWording)
    }

    /// Numbers a play of `what` for `client` within the limits (its token taken already, by
    /// `takeToken`), and starts it with `begin`, which hands the manager's result to the
    /// completion it is given. A play of a `detached` group keeps the user `user` gives, asked
    /// after the play has started (a round trip to the bus) so that it does not delay it; the play
    /// cannot end meanwhile, as its end comes on this (the bus) thread.
    func start(
        _ what: String, client: String, detached group: String?, user: () -> UInt32?, bus: BusContext,
        _ begin: (@escaping @Sendable (FeedbackResult) -> Void) -> FeedbackPlayback
    ) throws(BusError) -> UInt32 {
        let id: UInt32
        do throws(SessionRefusal) {
            id = try state.withLock { state throws(SessionRefusal) in
                try state.plays.open(Play(what: what), client: client, endsByItself: true, token: .alreadyTaken)
            }
        } catch {
            throw sessionRefusal(error, client: client)
        }
        let connection = bus.connection
        let playback = begin { [self] result in
            connection.perform { [self] bus in finished(id, result: result, bus: bus) }
        }
        let detached = group.map { (group: $0, uid: user()) }
        state.withLock { state in
            state.plays[id]?.playback = playback
            state.plays[id]?.detached = detached
        }
        return id
    }

    /// `Stop`: stops `client`'s `play`; one that already ended is not an error, as a stop may
    /// cross its `PlayEnded`.
    /// - Throws: `BusError.accessDenied` when it is another client's.
    func stop(_ play: UInt32, client: String) throws(BusError) {
        let playback = try state.withLock { state throws(BusError) -> FeedbackPlayback? in
            guard let running = state.plays[play] else { return nil }
            guard state.plays.client(of: play) == client else { throw .accessDenied("play \(play) belongs to another client") }
            guard running.stopReason == nil else { return nil }
            state.plays[play]?.stopReason = SystemSounds1.Why.stopCalled
            return running.playback
        }
        playback?.stop()
    }

    /// `StopAll`: stops every play of `client`'s, and says how many it stopped.
    func stopAll(client: String) -> UInt32 {
        let playbacks = state.withLock { state in
            var playbacks: [FeedbackPlayback] = []
            for (id, session) in state.plays.plays(of: client) where session.play.stopReason == nil {
                state.plays[id]?.stopReason = SystemSounds1.Why.stopCalled
                if let playback = session.play.playback { playbacks.append(playback) }
            }
            return playbacks
        }
        for playback in playbacks { playback.stop() }
        return UInt32(playbacks.count)
    }

    /// `StopDetached`: stops `group`'s detached plays that user `uid` started, and answers `reply`
    /// once every one of them has ended (those another stop had already asked to end included).
    /// - Throws: `BusError.limitsExceeded` when `limits.total` such calls wait already (each
    ///   waits only for its plays' fades, but a flood of calls must not pile up).
    func stopDetached(_ group: String, uid: UInt32, reply: () -> PendingReply) throws(BusError) {
        guard state.withLock({ $0.detachedStops.count }) < limits.total else {
            throw .limitsExceeded("detached stops: \(limits.total) are waiting for their plays to end, the most the service keeps")
        }
        let reply = reply()
        let (playbacks, answer) = state.withLock { state -> ([FeedbackPlayback], [BusValue]?) in
            var stop = DetachedStop(waiting: [], stopped: [], reply: reply)
            var playbacks: [FeedbackPlayback] = []
            for (id, play) in state.plays.sessions.mapValues(\.play).sorted(by: { $0.key < $1.key })
            where play.detached?.group == group && play.detached?.uid == uid {
                stop.waiting.insert(id)
                guard play.stopReason == nil else { continue }
                state.plays[id]?.stopReason = SystemSounds1.Why.stopCalled
                stop.stopped.append([.uint32(id), .string(play.what)])
                if let playback = play.playback { playbacks.append(playback) }
            }
            if stop.waiting.isEmpty { return ([], [Self.stoppedList(stop.stopped)]) }
            state.detachedStops.append(stop)
            return (playbacks, nil)
        }
        if let answer { reply.send(.success(answer)) }
        for playback in playbacks { playback.stop() }
    }

    private static func stoppedList(_ rows: [[BusValue]]) -> BusValue { .structures(signature: "us", rows) }

    /// The manager's result for `play`, on the bus thread: its one end.
    private func finished(_ play: UInt32, result: FeedbackResult, bus: BusContext) {
        // Nil: the service stopping reported it already.
        let (removed, answered) = state.withLock { state -> (ClientSessions<Play>.Session?, [DetachedStop]) in
            guard let removed = state.plays.remove(play) else { return (nil, []) }
            for index in state.detachedStops.indices { state.detachedStops[index].waiting.remove(play) }
            let answered = state.detachedStops.filter(\.waiting.isEmpty)
            state.detachedStops.removeAll { $0.waiting.isEmpty }
            return (removed, answered)
        }
        for stop in answered { stop.reply.send(.success([Self.stoppedList(stop.stopped)])) }
        guard let session = removed else { return }
        let (how, why) = Self.outcome(result, stopReason: session.play.stopReason)
        if how == .failed { log("play \(play) of \(session.play.what) (client \(session.client)) failed: \(why)") }
        if session.clientGone { return }
        ended(play, how, why, session.client, bus)
    }

    /// `PlayEnded`'s `how` and `why` for a result.
    static func outcome(_ result: FeedbackResult, stopReason: String?) -> (how: SystemSounds1.How, why: String) {
        switch result.sound {
        case .noAudioOutput(let error): return (.failed, "\(SystemSounds1.Why.noAudioOutput): \(error)")
        case .failed(.playback(let error)) where error.endedAPlayInProgress:
            return (.failed, "\(SystemSounds1.Why.brokeOff): \(error)")
        case .failed(let error): return (.failed, "\(SystemSounds1.Why.error): \(error)")
        case .stopped: return (.stopped, stopReason ?? SystemSounds1.Why.stopCalled)
        case .played: break
        case .silencedByProfile(let profile):
            if !result.vibration.didVibrate { return (.finished, "\(SystemSounds1.Why.silenced): profile \(profile.rawValue)") }
        case .disabledByTheme: return (.finished, SystemSounds1.Why.disabled)
        case .notRequested: break
        }
        switch result.vibration {
        case .stopped where result.sound == .notRequested: return (.stopped, stopReason ?? SystemSounds1.Why.stopCalled)
        case .noVibrator(let error) where result.sound == .notRequested:
            return (.failed, "\(SystemSounds1.Why.noVibrator): \(error)")
        case .failed(let error) where result.sound == .notRequested: return (.failed, "\(SystemSounds1.Why.error): \(error)")
        case .silencedByProfile(let profile) where result.sound == .notRequested:
            return (.finished, "\(SystemSounds1.Why.silenced): profile \(profile.rawValue)")
        case .vibrated where result.sound == .notRequested: return (.finished, SystemSounds1.Why.vibrated)
        // Neither part (a pattern of lights alone), stopped: its lights were.
        case .notRequested where result.sound == .notRequested && stopReason != nil: return (.stopped, stopReason!)
        default: return (.finished, SystemSounds1.Why.played)
        }
    }

    /// A client left: its plays run on, unannounced (`ClientLeftPolicy.letRun`): every play is one
    /// sound of at most 30 s, and a fire-and-forget caller such as `gdbus call` leaves at once.
    func clientLeft(_ client: String) {
        state.withLock { _ = $0.plays.clientLeft(client) }
    }

    /// Stops every play and reports each one's end (stopped, `service-stopping`) now, before the
    /// name is released; waiting `StopDetached` calls are answered. Later requests are refused, and
    /// a later stop does nothing.
    func stop(bus: BusContext) {
        let stopping = state.withLock { state in
            state.plays.beginStopping().map { _ in
                defer { state.detachedStops.removeAll() }
                return (plays: state.plays.removeAll(), detachedStops: state.detachedStops)
            }
        }
        guard let (plays, detachedStops) = stopping else { return }
        for stop in detachedStops { stop.reply.send(.success([Self.stoppedList(stop.stopped)])) }
        for (id, session) in plays {
            session.play.playback?.stop()
            if session.clientGone { continue }
            ended(id, .stopped, SystemSounds1.Why.serviceStopping, session.client, bus)
        }
    }
}
