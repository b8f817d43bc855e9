import Dispatch
import FeedbackTestSupport
import Glibc
import Testing

@testable import FeedbackServices

/// PipeWire's spelling of PulseAudio's role names, as pipewire-pulse gives them: offline.
@Test func pipeWireRolesAreSpelledAsPipeWirePulseSpellsThem() {
    #expect(PipeWireOutput.pipeWireRole("event") == "Notification")
    #expect(PipeWireOutput.pipeWireRole("phone") == "Communication")
    #expect(PipeWireOutput.pipeWireRole("animation") == "Movie")
    #expect(PipeWireOutput.pipeWireRole("alarm") == "alarm")
    #expect(PipeWireOutput.pipeWireRole("Alarm") == "Alarm")
}

/// The roles an output keeps a stream for: at most `RoleOutputs.maximum`, names bounded.
@Test func roleOutputsAreBounded() {
    let roles = RoleOutputs<FileOutput>()
    var made = 0
    for index in 0..<(RoleOutputs<FileOutput>.maximum + 2) {
        _ = roles.output(for: "role-\(index)") { _ in
            made += 1
            return FileOutput(path: "/dev/null")
        }
    }
    #expect(made == RoleOutputs<FileOutput>.maximum)
    #expect(roles.output(for: "role-0") { _ in Issue.record("made twice"); return FileOutput(path: "/dev/null") } != nil)
    #expect(roles.output(for: "") { _ in FileOutput(path: "/dev/null") } == nil)
    #expect(roles.output(for: String(repeating: "r", count: 65)) { _ in FileOutput(path: "/dev/null") } == nil)
}

extension AudioServerSuites {
    /// A sound's `PlaybackOptions.mediaRole` reaches the server as its stream's `media.role`, on a
    /// stream of its own beside the output's; a sound of the output's own role stays on its stream.
    @Suite(
        .serialized, .enabled(if: PulseAudioTestServer.shouldRun, "pulseaudio is not installed (scripts/setup)"),
        .shutsDownSoundServers(named: EngineRoute.serverNames("roles")))
    struct MediaRoleTests {
        let rate = 48_000

        @Test(arguments: EngineRoute.testable)
        func aSoundsRoleReachesTheServerOnAStreamOfItsOwn(_ route: EngineRoute) throws {
            let server = try route.server(named: "roles")
            let output = route.output(on: server, applicationName: "role-test")
            let tone = Signal.buffer(Signal.sines([500], amplitude: 0.1, seconds: 1.5, rate: rate), channels: 1, rate: rate)
            let ends = (EndRecorder(), EndRecorder(), EndRecorder())
            output.play(tone, options: PlaybackOptions(), completion: ends.0.completion)
            // The output's own role by its PulseAudio name: the same stream.
            output.play(tone, options: PlaybackOptions(mediaRole: "event"), completion: ends.1.completion)
            output.play(tone, options: PlaybackOptions(mediaRole: "phone"), completion: ends.2.completion)
            // pactl shows PulseAudio's names on every route: pipewire-pulse names a PipeWire
            // stream's role back (`Communication` is `phone`).
            let listing = waitForPactl(server: server.server, ["list", "sink-inputs"], timeout: 3) { listing in
                listing.contains("media.role = \"event\"") && listing.contains("media.role = \"phone\"")
            }
            #expect(listing.satisfied, "\(route): streams of roles event and phone: \(listing.last)")
            if route == .pipeWire {
                // What PipeWire itself holds: its own names.
                let dump = runProcess("/usr/bin/pw-dump", ["-N", "-r", server.pipeWireSocket ?? ""])
                let roles = dump.output.split(separator: "\n").filter { $0.contains("\"media.role\"") }
                #expect(
                    dump.output.contains("\"media.role\": \"Notification\"") && dump.output.contains("\"media.role\": \"Communication\""),
                    "\(roles) \(dump.errors)")
            }
            for end in [ends.0, ends.1, ends.2] {
                #expect(end.wait(timeout: 5)?.end == .finished, "\(route)")
            }
        }
    }
}
