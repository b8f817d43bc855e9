import FeedbackServices
import FeedbackTestSupport
import Foundation
import Glibc
import Testing

/// libcanberra, libevdev, libebur128, libsoxr and libasound are loaded on first use (COptionalLibraries), not
/// linked: checked on the built binary with the dynamic loader's own report (`LD_DEBUG=files`), and
/// a library that cannot be loaded is named in the error with the package that provides it.
@Suite struct OptionalLibraryTests {
    static let optional = ["libcanberra.so.0", "libevdev.so.2", "libebur128.so.1", "libsoxr.so.0", "libasound.so.2"]
    let directory = TemporaryDirectory()

    /// The shared objects the loader opened during a run, from its `LD_DEBUG=files` lines
    /// ("file=libpulse.so.0 [0];  needed by …").
    func loaded(_ arguments: [String], environment: [String] = []) -> (CommandResult, Set<String>) {
        let result = runProcess(feedbackctlBinary, arguments, environment: ["LD_DEBUG=files"] + environment)
        var objects = Set<String>()
        for line in result.errors.split(separator: "\n") {
            guard let start = line.range(of: "file=") else { continue }
            objects.insert(String(line[start.upperBound...].prefix { $0 != " " && $0 != "\t" }))
        }
        return (result, objects)
    }

    @Test func fireOpensNoneOfTheOptionalLibraries() throws {
        let (result, objects) = loaded(["fire", "1007", "--output", directory.file("tri-tone.wav")])
        #expect(result.status == 0, "\(result.errors.suffix(2_000))")
        #expect(objects.contains("libpulse.so.0"), "the loader's report was not read: \(objects)")
        #expect(objects.isDisjoint(with: Self.optional), "\(objects.intersection(Self.optional))")
    }

    @Test func aCommandThatNeedsOneLoadsItThen() throws {
        // A 44.1 kHz file is resampled to the engine's 48 kHz: libsoxr, and only it.
        let path = "\(repositoryRoot)/Tests/Fuzz/corpus/decoder/stereo-44k-24bit.wav"
        let (result, objects) = loaded(["play", path, "--output", directory.file("out.wav")])
        #expect(result.status == 0, "\(result.errors.suffix(2_000))")
        #expect(objects.contains("libsoxr.so.0"))
        #expect(!objects.contains("libcanberra.so.0"))
    }

    @Test(.enabled(if: PulseAudioTestServer.shouldRun))
    func aLibraryThatCannotBeLoadedIsNamedWithItsPackage() throws {
        let server = try PrivateSoundServer.address()
        // An empty file where the loader looks first: dlopen fails with "file too short".
        let libraries = directory.file("lib")
        mkdir(libraries, 0o755)
        #expect(FileManager.default.createFile(atPath: "\(libraries)/libcanberra.so.0", contents: Data()))
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
