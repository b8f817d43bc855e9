import FeedbackServices
import FeedbackTestSupport
import Foundation
import Glibc
import Testing

/// No C library is linked: each is loaded on its first call (COptionalLibraries), so a command maps
/// only those its route calls. Checked on the built binary with the dynamic loader's own report
/// (`LD_DEBUG=files`); a library that cannot be loaded is named in the error with the package that
/// provides it, and the command exits as for any unavailable output (69). (feedbackctl through the
/// service: FeedbackctlThroughTheServiceTests.)
@Suite struct OptionalLibraryTests {
    let directory = TemporaryDirectory()

    /// feedbackctl with the loader's report, in an environment of its own: no PipeWire socket and
    /// no service's PID file (`XDG_RUNTIME_DIR`), no PulseAudio server unless one is given, and a
    /// store of decoded sounds of its own (`XDG_CACHE_HOME`), empty at first.
    func loads(_ arguments: [String], _ environment: [String] = []) -> (result: ProcessResult, objects: LoadedObjects) {
        runReportingLoadedObjects(
            feedbackctlBinary, arguments,
            environment: ["XDG_RUNTIME_DIR=\(directory.path)", "PULSE_SERVER=", "XDG_CACHE_HOME=\(directory.file("cache"))"]
                + environment)
    }

    @Test(arguments: [["version"], ["--help"]])
    func versionAndHelpMapNoneOfThem(arguments: [String]) {
        let (result, objects) = loads(arguments)
        #expect(result.status == 0, "\(result.errors.suffix(2_000))")
        #expect(objects.all.contains("libc.so.6"), "the loader's report was not read: \(objects.all)")
        #expect(objects.all.isDisjoint(with: optionalLibraries), "\(objects.all.intersection(optionalLibraries))")
    }

    @Test func fireIntoAFileMapsOnlyLibsndfile() throws {
        let (result, objects) = loads(["fire", "1007", "--output", directory.file("tri-tone.wav")])
        #expect(result.status == 0, "\(result.errors.suffix(2_000))")
        #expect(objects.all.intersection(optionalLibraries) == ["libsndfile.so.1"], "\(objects.all)")
    }

    @Test func aCommandThatNeedsOneLoadsItThen() throws {
        // A 44.1 kHz file is resampled to the engine's 48 kHz: libsoxr, and only it besides libsndfile.
        let path = "\(repositoryRoot)/Tests/Fuzz/corpus/decoder/stereo-44k-24bit.wav"
        let (result, objects) = loads(["play", path, "--output", directory.file("out.wav")])
        #expect(result.status == 0, "\(result.errors.suffix(2_000))")
        #expect(objects.all.intersection(optionalLibraries) == ["libsndfile.so.1", "libsoxr.so.0"], "\(objects.all)")
    }

    @Test(.enabled(if: PulseAudioTestServer.shouldRun))
    func fireOnPulseAudioMapsLibpulseAndLibsndfile() throws {
        let (result, objects) = loads(["fire", "1007"], ["PULSE_SERVER=\(try PrivateSoundServer.address())"])
        #expect(result.status == 0, "\(result.errors.suffix(2_000))")
        #expect(objects.all.isSuperset(of: ["libpulse.so.0", "libsndfile.so.1"]), "\(objects.all)")
        #expect(!objects.all.contains("libpipewire-0.3.so.0"))
        // libpulsecommon needs libsystemd (on Debian): mapped for libpulse, never opened for the bus.
        #expect(!objects.openedByProgram.contains("libsystemd.so.0"), "\(objects.openedByProgram)")
        #expect(objects.all.isDisjoint(with: ["libcanberra.so.0", "libevdev.so.2", "libebur128.so.1", "libasound.so.2"]))
    }

    /// A `fire` whose profile plays no sound opens no output, not even in the background at
    /// start-up: with a PulseAudio server named (which `fire 1007` would connect to first thing),
    /// neither libpulse nor libpipewire is mapped, so no connection or stream can have been made.
    @Test(.enabled(if: PulseAudioTestServer.shouldRun))
    func fireUnderTheSilentProfileLoadsNoSoundServerLibrary() throws {
        let (result, objects) = loads(
            ["fire", "1007", "--json"], ["PULSE_SERVER=\(try PrivateSoundServer.address())", "FEEDBACKSERVICES_PROFILE=silent"])
        #expect(result.status == 0, "\(result.errors.suffix(2_000))")
        #expect(result.output.contains("\"silenced\""), "\(result.output)")
        #expect(objects.all.contains("libc.so.6"), "the loader's report was not read: \(objects.all)")
        #expect(objects.all.isDisjoint(with: ["libpulse.so.0", "libpipewire-0.3.so.0", "libasound.so.2"]), "\(objects.all)")
    }

    @Test(.enabled(if: PipeWireTestServer.shouldRun, "pipewire is not installed (scripts/setup)"))
    func fireOnPipeWireMapsLibpipewire() throws {
        let server = try PipeWireTestServer.shared(named: "selection")
        let (result, objects) = loads(["fire", "1007"], ["XDG_RUNTIME_DIR=\(server.runtime)"])
        #expect(result.status == 0, "\(result.errors.suffix(2_000))")
        #expect(objects.all.isSuperset(of: ["libpipewire-0.3.so.0", "libsndfile.so.1"]), "\(objects.all)")
        #expect(!objects.all.contains("libpulse.so.0"))
        #expect(!objects.openedByProgram.contains("libsystemd.so.0"), "\(objects.openedByProgram)")
        // A process that may make PipeWire's data thread SCHED_FIFO itself (root: CI) does so,
        // without module-rt or the context's D-Bus support, and so without libdbus-1 (libsystemd
        // still comes, with the native protocol module, which links it).
        if geteuid() == 0 {
            #expect(objects.all.isDisjoint(with: ["libdbus-1.so.3", "libpipewire-module-rt.so", "libspa-dbus.so"]), "\(objects.all)")
        }
        // The first fire stored the decoded tri-tone (DecodedSoundStore): the next process reads
        // it, and loads neither libsndfile nor its codecs.
        let (again, second) = loads(["fire", "1007"], ["XDG_RUNTIME_DIR=\(server.runtime)"])
        #expect(again.status == 0, "\(again.errors.suffix(2_000))")
        #expect(second.all.contains("libpipewire-0.3.so.0"), "\(second.all)")
        #expect(second.all.isDisjoint(with: ["libsndfile.so.1", "libFLAC.so.12", "libvorbis.so.0"]), "\(second.all)")
    }

    /// Each library that cannot be loaded, and a command that needs it: the error names the library
    /// and its Debian package; no crash. None needs a sound server: the library is loaded first.
    @Test(arguments: [
        ("libpulse.so.0", "libpulse0", ["fire", "1007"], ["PULSE_SERVER=unix:/nonexistent"]),
        ("libpipewire-0.3.so.0", "libpipewire-0.3-0", ["fire", "1007"], ["FEEDBACKSERVICES_OUTPUT=pipewire"]),
        ("libsndfile.so.1", "libsndfile1", ["info", "\(repositoryRoot)/Tests/Fuzz/corpus/decoder/stereo-44k-24bit.wav"], []),
    ])
    func aLibraryThatCannotBeLoadedIsNamedWithItsPackage(
        soname: String, package: String, arguments: [String], environment: [String]
    ) {
        let libraries = brokenLibraries([soname], in: directory)
        let result = runProcess(feedbackctlBinary, arguments, environment: ["LD_LIBRARY_PATH=\(libraries)"] + environment)
        #expect(result.status == 69, "\(result.errors)")
        #expect(result.errors.contains(soname), "\(result.errors)")
        #expect(result.errors.contains("install the Debian package \(package)"), "\(result.errors)")
    }

    @Test(.enabled(if: PulseAudioTestServer.shouldRun))
    func withoutLibcanberraTheEnginePlaysAsBefore() throws {
        let server = try PrivateSoundServer.address()
        let libraries = brokenLibraries(["libcanberra.so.0"], in: directory)
        let environment = ["PULSE_SERVER=\(server)", "LD_LIBRARY_PATH=\(libraries)"]
        let sound = "\(repositoryRoot)/SoundThemes/feedbackservices/stereo/message-new-instant.wav"

        let play = runProcess(feedbackctlBinary, ["play", "--canberra", sound], environment: environment)
        #expect(play.status == 69, "\(play.errors)")
        #expect(play.errors.contains("libcanberra.so.0"), "\(play.errors)")
        #expect(play.errors.contains("install the Debian package libcanberra0"), "\(play.errors)")

        // The engine needs no libcanberra: the same process plays through it as before.
        let fire = runProcess(feedbackctlBinary, ["fire", "1007"], environment: environment)
        #expect(fire.status == 0, "\(fire.errors)")

        let devices = runProcess(feedbackctlBinary, ["devices", "--audio", "--json"], environment: environment)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(devices.output.utf8)) as? [String: Any])
        let canberra = try #require(object["canberra"] as? [String: Any], "\(object)")
        #expect(canberra["available"] as? Bool == false)
        #expect((canberra["error"] as? String)?.contains("libcanberra0") == true, "\(canberra)")
    }
}
