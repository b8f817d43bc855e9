import FeedbackBus
@testable import FeedbackDaemon
import Testing

/// `ClientSessions` on its own: caps, budgets, IDs, clients leaving and stopping, with no bus.
@Suite struct ClientSessionsTests {
    private static func table(
        perClient: Int = 2, total: Int = 3, perSecond: Double = 10, burst: Double = 100,
        policy: ClientLeftPolicy = .letRun
    ) -> ClientSessions<String> {
        ClientSessions(
            limits: SessionLimits(perClient: perClient, total: total, perSecond: perSecond, burst: burst),
            clientLeftPolicy: policy)
    }

    @Test func capsPerClientAndInAllRefuseWithoutSpendingAToken() throws {
        var table = Self.table(burst: 4)
        _ = try table.start("a1", by: ":1.1")
        _ = try table.start("a2", by: ":1.1")
        #expect(throws: SessionRefusal.perClient(running: 2)) {
            try table.start("a3", by: ":1.1")
        }
        _ = try table.start("b1", by: ":1.2")
        #expect(throws: SessionRefusal.total) { try table.start("c1", by: ":1.3") }
        // Neither refusal took a token: :1.3 still has its whole burst of 4 once there is room.
        _ = table.removeAll()
        for index in 0..<2 { _ = try table.start("c\(index)", by: ":1.3") }
        _ = table.removeAll()
        for index in 2..<4 { _ = try table.start("c\(index)", by: ":1.3") }
        _ = table.removeAll()
        #expect(throws: SessionRefusal.rate) { try table.start("c4", by: ":1.3") }
    }

    @Test func theBudgetRefillsAtItsRateUpToTheBurst() throws {
        var table = Self.table(perClient: 100, total: 100, perSecond: 10, burst: 3)
        for _ in 0..<3 { try table.takeToken(":1.1", now: 0) }
        #expect(throws: SessionRefusal.rate) { try table.takeToken(":1.1", now: 0) }
        #expect(throws: SessionRefusal.rate) { try table.takeToken(":1.1", now: 0.05) }
        try table.takeToken(":1.1", now: 0.15)
        // A token taken before `admit` with `.alreadyTaken` is the only one the play costs.
        _ = try table.open("a", client: ":1.2", endsByItself: true, token: .alreadyTaken)
        for _ in 0..<3 { try table.takeToken(":1.2", now: 0) }
        #expect(throws: SessionRefusal.rate) { try table.takeToken(":1.2", now: 0) }
        // A long quiet spell refills to the burst, not beyond.
        for _ in 0..<3 { _ = try table.admit(":1.1", token: .take(now: 100)) }
        #expect(throws: SessionRefusal.rate) { try table.admit(":1.1", token: .take(now: 100)) }
    }

    @Test func anIDIsNeverGivenTwice() throws {
        var table = Self.table(perClient: 100, total: 100)
        var given: Set<UInt32> = []
        for index in 0..<50 {
            let id = try table.start("p\(index)", by: ":1.1", at: Double(index))
            #expect(id != 0)
            #expect(given.insert(id).inserted, "ID \(id) given twice")
            // Ending a play does not free its ID for the next one.
            if index % 2 == 0 { #expect(table.remove(id)?.play == "p\(index)") }
        }
        // A number taken by `admit` and never inserted is not given again either.
        let reserved = try table.admit(":1.2", token: .take(now: 0))
        #expect(!given.contains(reserved))
        #expect(try table.admit(":1.2", token: .take(now: 0)) != reserved)
    }

    @Test func aPlayLeavesTheTableExactlyOnce() throws {
        var table = Self.table()
        let id = try table.start("a", by: ":1.1")
        table[id] = "a, stopping"
        #expect(table[id] == "a, stopping")
        #expect(table.client(of: id) == ":1.1")
        #expect(table.remove(id)?.play == "a, stopping")
        #expect(table.remove(id) == nil)
        table[id] = "back"
        #expect(table[id] == nil, "setting a play that left changes nothing")
    }

    @Test func endAllEndsEveryPlayOfALeavingClient() throws {
        var table = Self.table(policy: .endAll)
        let once = try table.start("once", by: ":1.1")
        let looping = try table.start("loop", by: ":1.1", endsByItself: false)
        let other = try table.start("other", by: ":1.2")
        #expect(table.clientLeft(":1.1") == ClientSessions<String>.Departure(ending: [once, looping]))
        #expect(table.sessions[other]?.clientGone == false)
    }

    @Test func letRunKeepsEveryPlayOfALeavingClient() throws {
        var table = Self.table(policy: .letRun)
        let once = try table.start("once", by: ":1.1")
        let looping = try table.start("loop", by: ":1.1", endsByItself: false)
        let other = try table.start("other", by: ":1.2", endsByItself: false)
        let departure = table.clientLeft(":1.1")
        #expect(departure.ending.isEmpty)
        #expect(departure.runningOn == [once, looping])
        #expect(table.sessions[once]?.clientGone == true && table.sessions[looping]?.clientGone == true)
        #expect(table.sessions[other]?.clientGone == false)
        #expect(table.sessions.count == 3, "the plays stay until they end")
    }

    @Test func endLoopingEndsWhatWouldNotEndByItself() throws {
        var table = Self.table(perClient: 4, total: 8, policy: .endLooping)
        let once = try table.start("once", by: ":1.1")
        let looping = try table.start("loop", by: ":1.1", endsByItself: false)
        let timed = try table.start("timed", by: ":1.1", endsByItself: false)
        _ = try table.start("other", by: ":1.2", endsByItself: false)
        let departure = table.clientLeft(":1.1")
        #expect(departure.ending == [looping, timed])
        #expect(departure.runningOn == [once])
        #expect(table.clientLeft(":1.3") == ClientSessions<String>.Departure())
    }

    @Test func aLeavingClientsBudgetStartsFullAgain() throws {
        var table = Self.table(perClient: 100, total: 100, perSecond: 1, burst: 2)
        for _ in 0..<2 { try table.takeToken(":1.1", now: 0) }
        #expect(throws: SessionRefusal.rate) { try table.takeToken(":1.1", now: 0) }
        _ = table.clientLeft(":1.1")
        try table.takeToken(":1.1", now: 0)
    }

    @Test func stoppingEndsEveryPlayOnceAndRefusesNewOnes() throws {
        var table = Self.table()
        let first = try table.start("a", by: ":1.1")
        let second = try table.start("b", by: ":1.2", endsByItself: false)
        #expect(table.beginStopping() == [first, second])
        #expect(table.beginStopping() == nil, "a second stop ends nothing again")
        #expect(table.isStopping)
        #expect(throws: SessionRefusal.stopping) { try table.start("c", by: ":1.3") }
        // One play ends on its own; the stop takes the other; neither is handed over twice.
        #expect(table.remove(first)?.play == "a")
        let rest = table.removeAll()
        #expect(rest.map(\.id) == [second] && rest.map(\.session.play) == ["b"])
        #expect(table.removeAll().isEmpty && table.remove(second) == nil && table.isEmpty)
    }

    @Test(arguments: [
        (
            FeedbackService.Limits().sessions, FeedbackRunner.sessionWording,
            [
                "trigger rate: client :1.7 sent more than 20 triggers a second (after a burst of 40)",
                "concurrent feedbacks per client: client :1.7 has 5 running, the most one client may have",
                "concurrent feedbacks: 256 are running, the most the service runs",
            ]
        ),
        (
            SystemSoundsService.Limits().sessions, SystemSoundPlays.sessionWording,
            [
                "play rate: client :1.7 started more than 20 plays a second (after a burst of 40)",
                "plays per client: client :1.7 has 5 running, the most one client may have",
                "plays: 512 are running, the most the service runs",
            ]
        ),
    ])
    func refusalsNameTheLimitInEachInterfacesWords(limits: SessionLimits, wording: SessionWording, messages: [String]) {
        let refusals: [SessionRefusal] = [.rate, .perClient(running: 5), .total]
        let errors = refusals.map { $0.busError(client: ":1.7", limits: limits, wording: wording) }
        #expect(errors == messages.map(BusError.limitsExceeded))
        #expect(
            SessionRefusal.stopping.busError(client: ":1.7", limits: limits, wording: wording)
                == .failed("feedbackservicesd is stopping"))
    }
}

extension ClientSessions {
    /// `open`, taking a token of `client`'s at `now`.
    fileprivate mutating func start(_ play: Play, by client: String, endsByItself: Bool = true, at now: Double = 0)
        throws(SessionRefusal) -> UInt32
    {
        try open(play, client: client, endsByItself: endsByItself, token: .take(now: now))
    }
}
