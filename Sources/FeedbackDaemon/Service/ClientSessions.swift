import FeedbackBus

/// How much one client, and all of them together, may run through one `ClientSessions` table.
/// A value; safe to share across threads.
struct SessionLimits: Sendable, Equatable {
    /// Plays one client may have running at once.
    var perClient: Int
    /// Plays running at once, all clients together.
    var total: Int
    /// Requests a second one client may make, sustained.
    var perSecond: Double
    /// Requests one client may make at once after a quiet spell (the token bucket's size).
    var burst: Double
}

/// What becomes of a client's plays when it leaves the bus. Whatever the policy, the table marks
/// them `clientGone` and forgets the client's token bucket.
enum ClientLeftPolicy: Sendable, Equatable {
    /// Every play is ended, as nobody is left to end it (`Haptic.Vibrate`).
    case endAll
    /// Every play runs to its end: each is short, and a fire-and-forget caller such as
    /// `gdbus call` leaves at once (`SystemSounds1`).
    case letRun
    /// A play that ends by itself runs to its end; one that loops or waits for its timeout is ended,
    /// as nobody is left to end it (`org.sigxcpu.Feedback`).
    case endLooping
}

/// Where the token a new play costs comes from (`ClientSessions.admit`).
enum SessionToken: Sendable, Equatable {
    /// Take it from the client's bucket at `now` (seconds, monotonic), once the caps are met too.
    case take(now: Double)
    /// `ClientSessions.takeToken` took it already, when the request was looked up.
    case alreadyTaken
}

/// Why `ClientSessions` refused a request; `busError` says it in the interface's own words.
enum SessionRefusal: Error, Equatable {
    /// The service is stopping.
    case stopping
    /// The client's token bucket is empty.
    case rate
    /// The client has `running` plays, `SessionLimits.perClient`.
    case perClient(running: Int)
    /// `SessionLimits.total` plays are running.
    case total
}

/// How an interface names what its `ClientSessions` counts, in the messages of its refusals.
/// A value; safe to share across threads.
struct SessionWording: Sendable {
    /// What a client asks for, singular: "trigger", "play".
    var request: String
    /// What a client does with one, in the past tense: "sent", "started".
    var verb: String
    /// What runs at once, plural: "concurrent feedbacks", "plays".
    var running: String
}

extension SessionRefusal {
    /// The refusal as the reply to `client` says it, in `wording`: `LimitsExceeded` naming the
    /// limit of `limits` that was reached, or `Failed` while the service stops.
    func busError(client: String, limits: SessionLimits, wording: SessionWording) -> BusError {
        switch self {
        case .stopping:
            .failed("feedbackservicesd is stopping")
        case .rate:
            .limitsExceeded(
                "\(wording.request) rate: client \(client) \(wording.verb) more than \(Int(limits.perSecond)) "
                    + "\(wording.request)s a second (after a burst of \(Int(limits.burst)))")
        case .perClient(let running):
            .limitsExceeded(
                "\(wording.running) per client: client \(client) has \(running) running, the most one client may have")
        case .total:
            .limitsExceeded("\(wording.running): \(limits.total) are running, the most the service runs")
        }
    }
}

/// The plays of one D-Bus interface's clients, in one place for every interface: each play's ID,
/// its client, the caps on plays at once (per client and in all), each client's token bucket,
/// what becomes of a client's plays when it leaves the bus (`ClientLeftPolicy`), and the service
/// stopping. An interface decodes a request, asks this table, and encodes the answer as its reply
/// and signals; `Play` is what it keeps of a play.
///
/// IDs count up from 1 and skip 0 and every ID in the table: an ID comes back only after 2³² more
/// have been given, and never while its play is in the table. A play leaves the table exactly
/// once: `remove` or `removeAll` hands it over, and afterwards neither finds it.
///
/// Thread safety: a value; its owner keeps it behind its own lock.
struct ClientSessions<Play> {
    /// One play in the table.
    struct Session {
        /// The unique bus name of the client that started it.
        let client: String
        /// Whether it ends by itself (a sound played once), so that it may outlive its client.
        let endsByItself: Bool
        /// Whether its client has left the bus.
        fileprivate(set) var clientGone = false
        /// What the interface keeps of it.
        fileprivate(set) var play: Play
    }

    /// A client's plays when it left the bus, by what the policy does with them, each in ID order.
    struct Departure: Equatable {
        /// Those the interface is to end now.
        var ending: [UInt32] = []
        /// Those that run to their end.
        var runningOn: [UInt32] = []
    }

    /// The limits in force.
    let limits: SessionLimits
    /// What becomes of a client's plays when it leaves.
    let clientLeftPolicy: ClientLeftPolicy
    /// The plays, by ID.
    private(set) var sessions: [UInt32: Session] = [:]
    /// Whether `beginStopping` was called: every later `admit` is refused.
    private(set) var isStopping = false
    private var budgets: TriggerBudgets
    private var nextID: UInt32 = 1

    /// An empty table within `limits`, following `clientLeftPolicy`.
    init(limits: SessionLimits, clientLeftPolicy: ClientLeftPolicy) {
        self.limits = limits
        self.clientLeftPolicy = clientLeftPolicy
        budgets = TriggerBudgets(rate: limits.perSecond, burst: limits.burst)
    }

    /// Whether no play is in the table.
    var isEmpty: Bool { sessions.isEmpty }

    /// The play numbered `id`, if it is in the table. Setting it changes what the table keeps of a
    /// play in the table; setting nil, or a play not in the table, changes nothing (`remove` takes
    /// a play out).
    subscript(id: UInt32) -> Play? {
        get { sessions[id]?.play }
        set {
            guard let newValue, sessions[id] != nil else { return }
            sessions[id]?.play = newValue
        }
    }

    /// The client that started play `id`, if it is in the table.
    func client(of id: UInt32) -> String? {
        sessions[id]?.client
    }

    /// The plays of `client`, in ID order.
    func plays(of client: String) -> [(id: UInt32, session: Session)] {
        sessions.filter { $0.value.client == client }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Takes one of `client`'s tokens at `now` (seconds, monotonic), for a request that starts no
    /// play of the table's or that `admit`s one later with `SessionToken.alreadyTaken`.
    /// - Throws: `SessionRefusal.rate` when its bucket is empty.
    mutating func takeToken(_ client: String, now: Double) throws(SessionRefusal) {
        guard budgets.take(client, now: now) else { throw .rate }
    }

    /// Numbers a new play of `client`'s, once the checks pass in this order: the table is not
    /// stopping, `client` has a token (`token`), it has fewer than `perClient` plays, the table
    /// fewer than `total`. A token to take is taken only when all pass. The play enters the table
    /// with `insert`; until then the number is the caller's, and no later `admit` gives it.
    mutating func admit(_ client: String, token: SessionToken) throws(SessionRefusal) -> UInt32 {
        guard !isStopping else { throw .stopping }
        if case .take(let now) = token, !budgets.refill(client, now: now) { throw .rate }
        let own = sessions.values.lazy.filter { $0.client == client }.count
        guard own < limits.perClient else { throw .perClient(running: own) }
        guard sessions.count < limits.total else { throw .total }
        if case .take = token { budgets.spend(client) }
        var id = nextID
        while id == 0 || sessions[id] != nil { id &+= 1 }
        nextID = id &+ 1
        return id
    }

    /// Puts `play`, numbered `id` by `admit`, in the table as `client`'s.
    mutating func insert(_ play: Play, id: UInt32, client: String, endsByItself: Bool) {
        sessions[id] = Session(client: client, endsByItself: endsByItself, play: play)
    }

    /// `admit`, then `insert`: a play that enters the table as soon as it is numbered.
    mutating func open(_ play: Play, client: String, endsByItself: Bool, token: SessionToken)
        throws(SessionRefusal) -> UInt32
    {
        let id = try admit(client, token: token)
        insert(play, id: id, client: client, endsByItself: endsByItself)
        return id
    }

    /// Takes play `id` out of the table: the play, the first time; nil afterwards.
    mutating func remove(_ id: UInt32) -> Session? {
        sessions.removeValue(forKey: id)
    }

    /// Takes every play out of the table, in ID order.
    mutating func removeAll() -> [(id: UInt32, session: Session)] {
        defer { sessions.removeAll() }
        return sessions.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// `client` left the bus: forgets its token bucket, marks its plays `clientGone`, and says which
    /// of them `clientLeftPolicy` ends. The plays stay in the table until they are removed.
    mutating func clientLeft(_ client: String) -> Departure {
        budgets.forget(client)
        var departure = Departure()
        for (id, session) in plays(of: client) {
            sessions[id]?.clientGone = true
            switch clientLeftPolicy {
            case .endAll: departure.ending.append(id)
            case .letRun: departure.runningOn.append(id)
            case .endLooping where session.endsByItself: departure.runningOn.append(id)
            case .endLooping: departure.ending.append(id)
            }
        }
        return departure
    }

    /// The service stops: later `admit`s are refused. The IDs of the plays to end, in ID order, the
    /// first time; nil on a later call, so that a stop asked twice ends them once.
    mutating func beginStopping() -> [UInt32]? {
        guard !isStopping else { return nil }
        isStopping = true
        return sessions.keys.sorted()
    }
}
