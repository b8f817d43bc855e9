import FeedbackServices
import Synchronization

/// Where a command's sound goes, decided once, from its parsed options and its environment, before
/// the sound is looked up: feedbackservicesd, or this process on the engine, libcanberra, an ALSA
/// PCM or a file. `fire` and `play` take the decision here and nowhere else, and `open` makes the
/// one early open of the route chosen, so that connecting runs beside the lookup and the decoding
/// rather than after them.
///
/// The choice, in order:
/// 1. `--output FILE`, `--canberra` or `--pcm NAME` (`Playback.destination`): this process, there.
/// 2. The service, when the command may leave the sound to it (`fire` of a sound alone, with the
///    default theme options, no `--no-daemon`, `FEEDBACKCTL_NO_DAEMON` or
///    `FEEDBACKSERVICES_PROFILE`: `DaemonRoute.mayUse`) and it runs (its PID file names a living
///    process, and the session bus answers).
/// 3. This process, on the engine (`AudioOutputSelection.automatic()`).
///
/// The one way from 2 to 3 is a service that refused the play before it started it (`fallBack`):
/// a play that started there is never played again here (`DaemonRoute.End.brokeOff`).
enum Route {
    /// feedbackservicesd plays it, through this connection.
    case service(DaemonRoute)
    /// This process plays it there.
    case local(Playback.Destination)

    /// The route for a command whose options chose `destination`; `serviceMayPlay` says whether
    /// the command could leave the sound to the service (see the type's rule 2). Connects to the
    /// session bus when the service may run.
    static func decide(_ destination: Playback.Destination, serviceMayPlay: Bool, environment: [String: String]) -> Route {
        if case .engine = destination, serviceMayPlay, let service = DaemonRoute(environment: environment) {
            return .service(service)
        }
        return .local(destination)
    }

    /// Whether the engine's early open is made: set by `FeedbackCommand.main` alone.
    static let opensEarly = Atomic(false)

    /// The route after the service refused a play before starting it: this process, on the engine.
    static var fallBack: Route { .local(.engine) }

    /// The route's one early open, for a sound that will be played and waited for here: on the
    /// engine, `AudioOutputSelection.openInBackground` (the sound server's library loaded on this
    /// thread, before any other thread exists, then the output opened on a thread of its own, which
    /// `manager`'s first play takes); on libcanberra or a PCM, `manager`'s own
    /// `prepareAudioOutput`. Nothing for a file, a detached play (`plays` false) or the service,
    /// which has its stream open.
    ///
    /// The library is loaded on the calling thread, the main one, while it is the only thread. On
    /// a thread of its own beside the main one, `dlopen` of libpulse took ~5.7 ms against ~3–4 ms
    /// alone: its mappings and relocations are memory-map changes whose TLB flushes wait on the
    /// other CPU while a thread of the same process runs there (a C program whose main thread
    /// computes while a second one loads libpulse: 3 → 8–9 ms; another process computing: 4.7 ms).
    /// And `pthread_create` waits for a `dlopen` under way (it takes glibc's `dl_load_tls_lock`):
    /// an output thread created once the sound was known started only when the library was loaded.
    func open(for manager: FeedbackManager, plays: Bool, environment: [String: String]) {
        guard plays, case .local(let destination) = self else { return }
        switch destination {
        case .engine:
            // Only in feedbackctl's own process (`FeedbackCommand.main`), whose exit ends an open
            // nobody took (the command failed before it played). A command run in process
            // (`FeedbackCommand.run`, as the tests run it) with an environment of its own would leave
            // it for the process's life, holding the one early-open slot.
            if Self.opensEarly.load(ordering: .relaxed) { AudioOutputSelection.openInBackground(environment: environment) }
        case .canberra, .alsa: manager.prepareAudioOutput()
        case .file: break
        }
    }
}
