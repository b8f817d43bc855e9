internal import CPulse
import FoundationEssentials
import Glibc

/// The PulseAudio server the engine would play on, and its sinks: what `pa_context_get_server_info`
/// and `pa_context_get_sink_info_list` answer, for `feedbackctl devices` and for diagnostics.
///
/// `query` connects where the engine connects (`PULSE_SERVER`, then the user's socket, or an
/// explicit address) and never waits longer than its timeout, even on a server that accepts the
/// connection and then says nothing.
package struct SoundServerInfo: Sendable, Equatable {
    /// One sink (an output device) of the server: `pa_sink_info`.
    package struct Sink: Sendable, Equatable {
        /// The sink's name, e.g. `alsa_output.pci-0000_00_1f.3.analog-stereo` (`pa_sink_info.name`).
        package var name: String
        /// Its human-readable description, e.g. "Built-in Audio Analog Stereo".
        package var description: String
        /// Whether it is the server's default sink, where the engine's stream goes unless
        /// `PULSE_SINK` names another.
        package var isDefault: Bool
        /// The sample format, as libpulse names it (`pa_sample_format_to_string`): `s16le`,
        /// `float32le`, …
        package var sampleFormat: String
        /// The sample rate, in Hz.
        package var sampleRate: Int
        /// The number of channels.
        package var channelCount: Int
        /// What the sink is doing.
        package var state: State

        /// Creates a sink description.
        package init(
            name: String, description: String, isDefault: Bool, sampleFormat: String, sampleRate: Int,
            channelCount: Int, state: State
        ) {
            self.name = name
            self.description = description
            self.isDefault = isDefault
            self.sampleFormat = sampleFormat
            self.sampleRate = sampleRate
            self.channelCount = channelCount
            self.state = state
        }
    }

    /// A sink's state (`pa_sink_state_t`).
    package enum State: String, Sendable, Equatable {
        /// A stream is playing to it (`PA_SINK_RUNNING`).
        case running
        /// Open, with nothing playing (`PA_SINK_IDLE`).
        case idle
        /// The device is closed until a stream needs it (`PA_SINK_SUSPENDED`).
        case suspended
        /// A state libpulse did not report or this library does not know.
        case unknown
    }

    /// The server's name (`pa_server_info.server_name`): `pulseaudio`, or
    /// "PulseAudio (on PipeWire 1.0.5)" for pipewire-pulse.
    package var serverName: String
    /// The server's version (`pa_server_info.server_version`), e.g. `16.1`.
    package var serverVersion: String
    /// The address the connection was made to (`pa_context_get_server`), e.g.
    /// `/run/user/1000/pulse/native`.
    package var address: String
    /// Whether the server is PipeWire's PulseAudio service (pipewire-pulse), on which the engine
    /// queues less audio and writes it in order instead of rewriting it (see `PulseAudioOutput`).
    package var isPipeWire: Bool
    /// The sinks, in the server's order.
    package var sinks: [Sink]

    /// Creates a description.
    package init(serverName: String, serverVersion: String, address: String, isPipeWire: Bool, sinks: [Sink]) {
        self.serverName = serverName
        self.serverVersion = serverVersion
        self.address = address
        self.isPipeWire = isPipeWire
        self.sinks = sinks
    }

    /// The default sink, if the server has one.
    package var defaultSink: Sink? { sinks.first(where: \.isDefault) }

    /// Connects to the server, asks for its description and its sinks, and disconnects. It blocks
    /// the calling thread for at most `timeout` seconds; it starts no thread of its own.
    ///
    /// - Parameters:
    ///   - server: an address (`unix:/path`, `tcp:host:port`); nil for where the engine connects:
    ///     `PULSE_SERVER`, then `$XDG_RUNTIME_DIR/pulse/native`. A server is never started.
    ///   - timeout: seconds to wait for the whole answer.
    ///   - environment: used only to say in an error where the server was looked for.
    /// - Throws: `SoundServerError`: `.unavailable` when no server answers there, `.timedOut` when
    ///   one is there but the answer did not come in time, `.queryFailed` when the server refused
    ///   a query.
    package static func query(
        server: String? = nil, timeout: Double = 2,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(SoundServerError) -> SoundServerInfo {
        let location = AudioOutputSelection.describe(server: server, environment: environment)
        let query = ServerQuery()
        query.run(server: server, timeout: timeout)
        switch query.outcome {
        case .answered:
            guard let serverName = query.serverName else {
                throw SoundServerError(.queryFailed, server: location, detail: "no server information")
            }
            let sinks = query.sinks.map { sink in
                var sink = sink
                sink.isDefault = sink.name == query.defaultSinkName
                return sink
            }
            return SoundServerInfo(
                serverName: serverName, serverVersion: query.serverVersion, address: query.address ?? location,
                isPipeWire: isPipeWire(serverName: serverName), sinks: sinks)
        case .timedOut:
            throw SoundServerError(.timedOut(seconds: timeout), server: location)
        case .failed(let reason, let detail):
            throw SoundServerError(reason, server: location, detail: detail)
        case nil:
            throw SoundServerError(.queryFailed, server: location, detail: "the main loop ended without an answer")
        }
    }

    /// Whether a server name (`pa_server_info.server_name`) is pipewire-pulse's.
    static func isPipeWire(serverName: String) -> Bool {
        serverName.contains("PipeWire")
    }
}

/// Why the sound server could not be described.
package struct SoundServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kinds of failure.
    package enum Reason: Sendable, Equatable {
        /// No server answered: no socket there, connection refused, access denied, …
        case unavailable
        /// Something accepted the connection but the answer did not come within `seconds`.
        case timedOut(seconds: Double)
        /// Connected, but the server refused a query.
        case queryFailed
    }

    /// What failed.
    package var reason: Reason
    /// Where the server was looked for, as `AudioOutputSelection.describe(server:environment:)`
    /// says it, e.g. "unix:/run/user/1000/pulse/native (the default socket; …)".
    package var server: String
    /// libpulse's message (`pa_strerror`), where there is one.
    package var detail: String?

    /// Creates an error.
    package init(_ reason: Reason, server: String, detail: String? = nil) {
        self.reason = reason
        self.server = server
        self.detail = detail
    }

    /// A sentence for logs and the command line.
    package var description: String {
        let summary =
            switch reason {
            case .unavailable: "no PulseAudio server at \(server)"
            case .timedOut(let seconds): "the PulseAudio server at \(server) did not answer within \(seconds) s"
            case .queryFailed: "the PulseAudio server at \(server) did not describe itself"
            }
        guard let detail, !detail.isEmpty else { return summary }
        return "\(summary): \(detail)"
    }
}

/// One query's state, on the calling thread only: libpulse's callbacks run inside
/// `pa_mainloop_run`, which `run` calls, so nothing here is shared between threads.
private final class ServerQuery {
    enum Outcome {
        case answered
        case timedOut
        case failed(SoundServerError.Reason, detail: String?)
    }

    var outcome: Outcome?
    var serverName: String?
    var serverVersion = ""
    var defaultSinkName: String?
    var address: String?
    var sinks: [SoundServerInfo.Sink] = []
    /// The replies still expected: the server information and the end of the sink list.
    var pending = 2
    private var mainloop: OpaquePointer?

    func run(server: String?, timeout: Double) {
        guard let mainloop = pa_mainloop_new() else {
            outcome = .failed(.unavailable, detail: OptionalLibrary.pulse.unavailableReason ?? "cannot create a PulseAudio main loop")
            return
        }
        self.mainloop = mainloop
        defer {
            self.mainloop = nil
            pa_mainloop_free(mainloop)
        }
        let properties = pa_proplist_new()
        pa_proplist_sets(properties, "application.name", "FeedbackServices")
        let context = pa_context_new_with_proplist(pa_mainloop_get_api(mainloop), "FeedbackServices", properties)
        pa_proplist_free(properties)
        guard let context else {
            outcome = .failed(.unavailable, detail: "cannot create a PulseAudio context")
            return
        }
        defer {
            pa_context_set_state_callback(context, nil, nil)
            pa_context_disconnect(context)
            pa_context_unref(context)
        }
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        pa_context_set_state_callback(context, { context, userdata in
            Unmanaged<ServerQuery>.fromOpaque(userdata!).takeUnretainedValue().stateChanged(context!)
        }, userdata)
        guard pa_context_connect(context, server, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0 else {
            return fail(.unavailable, context)
        }
        // The time event belongs to the main loop, which frees it.
        _ = pa_context_rttime_new(context, pa_rtclock_now() + pa_usec_t(max(0, timeout) * 1_000_000), { _, _, _, userdata in
            Unmanaged<ServerQuery>.fromOpaque(userdata!).takeUnretainedValue().finish(.timedOut)
        }, userdata)
        var result: Int32 = 0
        pa_mainloop_run(mainloop, &result)
    }

    func stateChanged(_ context: OpaquePointer) {
        switch pa_context_get_state(context) {
        case PA_CONTEXT_READY:
            address = pa_context_get_server(context).map { String(cString: $0) }
            let userdata = Unmanaged.passUnretained(self).toOpaque()
            if let operation = pa_context_get_server_info(context, { context, info, userdata in
                Unmanaged<ServerQuery>.fromOpaque(userdata!).takeUnretainedValue().received(info, context!)
            }, userdata) {
                pa_operation_unref(operation)
            } else {
                return fail(.queryFailed, context)
            }
            if let operation = pa_context_get_sink_info_list(context, { context, info, end, userdata in
                Unmanaged<ServerQuery>.fromOpaque(userdata!).takeUnretainedValue().received(info, end: end, context!)
            }, userdata) {
                pa_operation_unref(operation)
            } else {
                fail(.queryFailed, context)
            }
        case PA_CONTEXT_FAILED, PA_CONTEXT_TERMINATED:
            fail(.unavailable, context)
        default:
            break
        }
    }

    func received(_ info: UnsafePointer<pa_server_info>?, _ context: OpaquePointer) {
        guard let info = info?.pointee else { return fail(.queryFailed, context) }
        serverName = info.server_name.map { String(cString: $0) } ?? ""
        serverVersion = info.server_version.map { String(cString: $0) } ?? ""
        defaultSinkName = info.default_sink_name.map { String(cString: $0) }
        replyDone()
    }

    func received(_ info: UnsafePointer<pa_sink_info>?, end: Int32, _ context: OpaquePointer) {
        if end < 0 { return fail(.queryFailed, context) }
        if end > 0 { return replyDone() }
        guard let info = info?.pointee else { return }
        let state: SoundServerInfo.State =
            switch info.state {
            case PA_SINK_RUNNING: .running
            case PA_SINK_IDLE: .idle
            case PA_SINK_SUSPENDED: .suspended
            default: .unknown
            }
        sinks.append(
            SoundServerInfo.Sink(
                name: info.name.map { String(cString: $0) } ?? "",
                description: info.description.map { String(cString: $0) } ?? "",
                isDefault: false,
                sampleFormat: pa_sample_format_to_string(info.sample_spec.format).map { String(cString: $0) } ?? "unknown",
                sampleRate: Int(info.sample_spec.rate), channelCount: Int(info.sample_spec.channels), state: state))
    }

    private func replyDone() {
        pending -= 1
        if pending == 0 { finish(.answered) }
    }

    private func fail(_ reason: SoundServerError.Reason, _ context: OpaquePointer) {
        finish(.failed(reason, detail: String(cString: pa_strerror(pa_context_errno(context)))))
    }

    /// Records the first outcome and ends the main loop.
    private func finish(_ outcome: Outcome) {
        guard self.outcome == nil else { return }
        self.outcome = outcome
        if let mainloop { pa_mainloop_quit(mainloop, 0) }
    }
}
