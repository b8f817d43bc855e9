/// How much one client, and all of them together, may run through one `ClientSessions` table.
/// A value; safe to share across threads.
package struct SessionLimits: Sendable, Equatable {
    /// Plays one client may have running at once.
    package var perClient: Int
    /// Plays running at once, all clients together.
    package var total: Int
    /// Requests a second one client may make, sustained.
    package var perSecond: Double
    /// Requests one client may make at once after a quiet spell (the token bucket's size).
    package var burst: Double

    /// These limits.
    package init(perClient: Int, total: Int, perSecond: Double, burst: Double) {
        self.perClient = perClient
        self.total = total
        self.perSecond = perSecond
        self.burst = burst
    }
}

/// What becomes of a client's plays when it leaves the bus. Either way the table marks them
/// `clientGone` and forgets the client's token bucket.
package enum ClientLeftPolicy: Sendable, Equatable {
    /// Every play runs to its end: each is short, and a fire-and-forget caller such as
    /// `gdbus call` leaves at once (`SystemSounds1`).
    case letRun
    /// A play that ends by itself runs to its end; one that loops or waits for its timeout is ended,
    /// as nobody is left to end it (`org.sigxcpu.Feedback`).
    case endLooping
}

/// Where the token a new play costs comes from (`ClientSessions.admit`).
package enum SessionToken: Sendable, Equatable {
    /// Take it from the client's bucket at `now` (seconds, monotonic), once the caps are met too.
    case take(now: Double)
    /// `ClientSessions.takeToken` took it already, when the request was looked up.
    case alreadyTaken
}

/// Why `ClientSessions` refused a request. The interface words it for its own clients.
package enum SessionRefusal: Error, Equatable {
    /// The service is stopping.
    case stopping
    /// The client's token bucket is empty.
    case rate
    /// The client has `running` plays, `SessionLimits.perClient`.
    case perClient(running: Int)
    /// `SessionLimits.total` plays are running.
    case total
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
package struct ClientSessions<Play> {
    /// One play in the table.
    package struct Session {
        /// The unique bus name of the client that started it.
        package let client: String
        /// Whether it ends by itself (a sound played once), so that it may outlive its client.
        package let endsByItself: Bool
        /// Whether its client has left the bus.
        package fileprivate(set) var clientGone = false
        /// What the interface keeps of it.
        package fileprivate(set) var play: Play
    }

    /// A client's plays when it left the bus, by what the policy does with them, each in ID order.
    package struct Departure: Equatable {
        /// Those the interface is to end now.
        package var ending: [UInt32] = []
        /// Those that run to their end.
        package var runningOn: [UInt32] = []
    }

    /// The limits in force.
    package let limits: SessionLimits
    /// What becomes of a client's plays when it leaves.
    package let clientLeftPolicy: ClientLeftPolicy
    /// The plays, by ID.
    package private(set) var sessions: [UInt32: Session] = [:]
    /// Whether `beginStopping` was called: every later `admit` is refused.
    package private(set) var isStopping = false
    private var budgets: TriggerBudgets
    private var nextID: UInt32 = 1

    /// An empty table within `limits`, following `clientLeftPolicy`.
    package init(limits: SessionLimits, clientLeftPolicy: ClientLeftPolicy) {
        self.limits = limits
        self.clientLeftPolicy = clientLeftPolicy
        budgets = TriggerBudgets(rate: limits.perSecond, burst: limits.burst)
    }

    /// Whether no play is in the table.
    package var isEmpty: Bool { sessions.isEmpty }

    /// The play numbered `id`, if it is in the table. Setting it changes what the table keeps of a
    /// play in the table; setting nil, or a play not in the table, changes nothing (`remove` takes
    /// a play out).
    package subscript(id: UInt32) -> Play? {
        get { sessions[id]?.play }
        set {
            guard let newValue, sessions[id] != nil else { return }
            sessions[id]?.play = newValue
        }
    }

    /// The client that started play `id`, if it is in the table.
    package func client(of id: UInt32) -> String? {
        sessions[id]?.client
    }

    /// The plays of `client`, in ID order.
    package func plays(of client: String) -> [(id: UInt32, session: Session)] {
        sessions.filter { $0.value.client == client }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Takes one of `client`'s tokens at `now` (seconds, monotonic), for a request that starts no
    /// play of the table's or that `admit`s one later with `SessionToken.alreadyTaken`.
    /// - Throws: `SessionRefusal.rate` when its bucket is empty.
    package mutating func takeToken(_ client: String, now: Double) throws(SessionRefusal) {
        guard budgets.take(client, now: now) else { throw .rate }
    }

    /// Numbers a new play of `client`'s, once the checks pass in this order: the table is not
    /// stopping, `client` has a token (`token`), it has fewer than `perClient` plays, the table
    /// fewer than `total`. A token to take is taken only when all pass. The play enters the table
    /// with `insert`; until then the number is the caller's, and no later `admit` gives it.
    package mutating func admit(_ client: String, token: SessionToken) throws(SessionRefusal) -> UInt32 {
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
    package mutating func insert(_ play: Play, id: UInt32, client: String, endsByItself: Bool) {
        sessions[id] = Session(client: client, endsByItself: endsByItself, play: play)
    }

    /// `admit`, then `insert`: a play that enters the table as soon as it is numbered.
    package mutating func open(_ play: Play, client: String, endsByItself: Bool, token: SessionToken)
        throws(SessionRefusal) -> UInt32
    {
        let id = try admit(client, token: token)
        insert(play, id: id, client: client, endsByItself: endsByItself)
        return id
    }

    /// Takes play `id` out of the table: the play, the first time; nil afterwards.
    package mutating func remove(_ id: UInt32) -> Session? {
        sessions.removeValue(forKey: id)
    }

    /// Takes every play out of the table, in ID order.
    package mutating func removeAll() -> [(id: UInt32, session: Session)] {
        defer { sessions.removeAll() }
        return sessions.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// `client` left the bus: forgets its token bucket, marks its plays `clientGone`, and says which
    /// of them `clientLeftPolicy` ends. The plays stay in the table until they are removed.
    package mutating func clientLeft(_ client: String) -> Departure {
        budgets.forget(client)
        var departure = Departure()
        for (id, session) in plays(of: client) {
            sessions[id]?.clientGone = true
            switch clientLeftPolicy {
            case .letRun: departure.runningOn.append(id)
            case .endLooping where session.endsByItself: departure.runningOn.append(id)
            case .endLooping: departure.ending.append(id)
            }
        }
        return departure
    }

    /// The service stops: later `admit`s are refused. The IDs of the plays to end, in ID order, the
    /// first time; nil on a later call, so that a stop asked twice ends them once.
    package mutating func beginStopping() -> [UInt32]? {
        guard !isStopping else { return nil }
        isStopping = true
        return sessions.keys.sorted()
    }
}
