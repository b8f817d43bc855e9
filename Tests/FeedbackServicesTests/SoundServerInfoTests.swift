import FeedbackTestSupport
import Testing

@testable import FeedbackServices

extension AudioServerSuites {
    /// `SoundServerInfo.query` against a real PulseAudio server with one null sink.
    @Suite(.serialized, .enabled(if: PulseAudioTestServer.shouldRun, "pulseaudio is not installed (scripts/setup)"))
    struct SoundServerInfoTests {
        let server: PulseAudioTestServer

        init() throws {
            server = try PulseAudioTestServer.shared(named: "serverInfo")
        }

        @Test func describesTheServerAndItsNullSink() throws {
            let info = try SoundServerInfo.query(server: server.server)
            #expect(info.serverName == "pulseaudio")
            #expect(!info.serverVersion.isEmpty)
            #expect(!info.isPipeWire)
            #expect(info.address.hasSuffix(server.socket), "\(info.address)")
            let sink = try #require(info.sinks.first { $0.name == PulseAudioTestServer.sink }, "\(info.sinks)")
            #expect(sink.isDefault, "the only sink is the default")
            #expect(info.defaultSink == sink)
            #expect(sink.description == "Null Output")
            #expect(sink.sampleRate == PulseAudioTestServer.rate && sink.channelCount == 2)
            #expect(!sink.sampleFormat.isEmpty && sink.sampleFormat != "unknown")
            // The recorder on its monitor keeps it open: idle, or running while a suite plays.
            #expect(sink.state == .idle || sink.state == .running, "\(sink.state)")
        }
    }
}

/// `SoundServerInfo.query` where no server answers: it returns promptly, with where it looked.
@Suite struct SoundServerInfoErrorTests {
    @Test func noServerIsUnavailableAtOnce() {
        let started = MonotonicClock.now
        #expect {
            try SoundServerInfo.query(server: "unix:/nonexistent/native")
        } throws: { error in
            guard let error = error as? SoundServerError else { return false }
            return error.reason == .unavailable && error.server == "unix:/nonexistent/native"
                && error.description == "no PulseAudio server at unix:/nonexistent/native: Connection refused"
        }
        #expect(MonotonicClock.now - started < 0.5)
    }

    @Test func aServerThatNeverAnswersTimesOut() throws {
        let directory = TemporaryDirectory()
        let silent = try SilentServer(path: directory.file("silent"))
        let started = MonotonicClock.now
        #expect(throws: SoundServerError(.timedOut(seconds: 0.3), server: silent.server)) {
            try SoundServerInfo.query(server: silent.server, timeout: 0.3)
        }
        let elapsed = MonotonicClock.now - started
        #expect(elapsed >= 0.29 && elapsed < 1.5, "\(elapsed)")
    }

    @Test func pipeWireIsToldByTheServerName() {
        #expect(SoundServerInfo.isPipeWire(serverName: "PulseAudio (on PipeWire 1.0.5)"))
        #expect(!SoundServerInfo.isPipeWire(serverName: "pulseaudio"))
    }

    @Test func errorsSayWhereTheyLooked() {
        #expect(SoundServerError(.timedOut(seconds: 2), server: "unix:/x (PULSE_SERVER)").description
            == "the PulseAudio server at unix:/x (PULSE_SERVER) did not answer within 2.0 s")
    }
}
