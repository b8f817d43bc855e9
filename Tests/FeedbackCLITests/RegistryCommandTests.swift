import FeedbackServices
import FeedbackTestSupport
import Foundation
import Glibc
import Testing

@testable import FeedbackCLI

/// `register`, `unregister`, and registered IDs in `fire`, `volume` and `list`, in process with a
/// private XDG_DATA_HOME; then 20 `feedbackctl register` processes at once.
@Suite struct RegistryCommandTests {
    let home = "/tmp/feedbackctl-registry-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    var environment: [String: String] { ["XDG_DATA_HOME": home + "/data"] }
    var registryPath: String { home + "/data/feedbackservices/registry.json" }

    func run(_ arguments: String...) -> CommandResult {
        feedbackctl(arguments, environment: environment)
    }

    /// A 0.5 s tone at amplitude 0.5.
    func tone(_ name: String = "tone.wav", seconds: Double = 0.5) throws -> String {
        mkdir(home, 0o700)
        let path = "\(home)/\(name)"
        let samples = (0..<Int(48_000 * seconds)).map { Float(0.5 * sin(2 * Double.pi * 440 * Double($0) / 48_000)) }
        let buffer = try SoundDecoder(maximumDuration: nil).decode(samples: samples, sampleRate: 48_000, channelCount: 1)
        try SoundFileWriter.write(buffer, to: path, format: .wav16)
        return path
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    func peak(_ path: String) throws -> Float {
        try SoundDecoder().decode(fileAt: path).buffer.peak
    }

    @Test func registerFireVolumeListUnregister() throws {
        defer { try? FileManager.default.removeItem(atPath: home) }
        let path = try tone()
        let registered = run("register", path)
        #expect(registered.status == 0 && registered.output == "4097\n", "\(registered.errors)")
        let second = run("register", "--volume", "0.5", "--json", path)
        let report = try json(second.output)
        #expect(report["id"] as? Int == 4098 && report["file"] as? String == path && report["volume"] as? Double == 0.5)
        #expect(report["registry"] as? String == registryPath && report["version"] as? String == FeedbackCommand.version)
        #expect(report["duration"] as? Double == 0.5)
        var info = stat()
        #expect(stat(registryPath, &info) == 0 && info.st_mode & 0o777 == 0o600)

        // fire plays registered IDs at their stored volume.
        let full = run("fire", "4097", "--output", "\(home)/full.wav", "--json")
        #expect(full.status == 0, "\(full.errors)")
        #expect(try json(full.output)["file"] as? String == path)
        #expect(run("fire", "4098", "--output", "\(home)/half.wav").status == 0)
        #expect(abs(try peak("\(home)/half.wav") - 0.25) < 0.002)
        #expect(abs(try peak("\(home)/full.wav") - 0.5) < 0.002)

        // volume re-registers and stores the level.
        let volume = run("volume", "4097", "0.2")
        #expect(volume.status == 0 && volume.output.contains("stored:     4097"), "\(volume.errors)")
        #expect(run("fire", "4097", "--output", "\(home)/fifth.wav").status == 0)
        #expect(abs(try peak("\(home)/fifth.wav") - 0.1) < 0.002)

        let list = run("list")
        #expect(list.output.contains("Registered (feedbackctl register):\n4097  0.5 s  \(path)  volume 0.2\n4098  0.5 s  \(path)  volume 0.5\n"))
        let listed = try json(run("list", "--json").output)["registered"] as? [[String: Any]]
        #expect(listed?.map { $0["id"] as? Int } == [4097, 4098])

        let removed = run("unregister", "4097")
        #expect(removed.status == 0 && removed.output == "Unregistered 4097 (\(path)).\n")
        let again = run("unregister", "4097")
        #expect(again.status == 66 && again.errors.contains("no sound is registered as 4097"), "\(again.errors)")
        let fire = run("fire", "4097", "--output", "\(home)/x.wav")
        #expect(fire.status == 66 && fire.errors.contains("no sound is registered as 4097"))
        #expect(run("register", path).output == "4099\n", "an unregistered ID is not handed out again")
    }

    @Test func registerErrors() throws {
        defer { try? FileManager.default.removeItem(atPath: home) }
        mkdir(home, 0o700)
        let missing = run("register", "\(home)/nothing.wav")
        #expect(missing.status == 66 && missing.errors.contains("nothing.wav: no such file"))
        let text = "\(home)/notes.wav"
        _ = FileManager.default.createFile(atPath: text, contents: Data("hello".utf8))
        #expect(run("register", text).status == 65)
        let long = try tone("long.wav", seconds: 31)
        let tooLong = run("register", long)
        #expect(tooLong.status == 65 && tooLong.errors.contains("longer than the 30.0 s limit"), "\(tooLong.errors)")
        #expect(access(registryPath, F_OK) != 0, "a failed registration writes nothing")
        #expect(run("register").status == 64)
        #expect(run("register", "--volume", "-1", long).status == 64)
        #expect(run("unregister", "abc").status == 64)
        #expect(run("unregister", "1007").errors.contains("not a registered sound ID"))
        let noHome = feedbackctl(["register", long], environment: ["XDG_DATA_HOME": "", "HOME": ""])
        #expect(noHome.status == 69 && noHome.errors.contains("neither XDG_DATA_HOME nor HOME is set"))
    }

    @Test func aDamagedRegistryIsReportedAndLeftAsItIs() throws {
        defer { try? FileManager.default.removeItem(atPath: home) }
        let path = try tone()
        #expect(run("register", path).status == 0)
        let damaged = Data("{\"format\": 1, \"nextID\": 4098, \"sounds\": [".utf8)
        #expect(FileManager.default.createFile(atPath: registryPath, contents: damaged))
        for arguments in [["register", path], ["unregister", "4097"], ["volume", "4097", "0.5"], ["fire", "4097", "--output", "\(home)/x.wav"]] {
            let result = feedbackctl(arguments, environment: environment)
            #expect(result.status == 65, "\(arguments): \(result.errors)")
            #expect(result.errors.contains("damaged sound registry; it was left untouched"), "\(result.errors)")
        }
        let list = run("list")
        #expect(list.status == 0)
        #expect(list.errors.hasPrefix("Warning: registered sounds not listed: \(registryPath): damaged sound registry"))
        #expect(FileManager.default.contents(atPath: registryPath) == damaged)
    }

    @Test func quietPrintsNothingButErrors() throws {
        defer { try? FileManager.default.removeItem(atPath: home) }
        let path = try tone()
        let quiet = run("register", "-q", path)
        #expect(quiet.status == 0 && quiet.output.isEmpty && quiet.errors.isEmpty)
        #expect(run("list", "--quiet").output.isEmpty)
        let failing = run("unregister", "--quiet", "5000")
        #expect(failing.status == 66 && failing.output.isEmpty && failing.errors.hasPrefix("Error: "))
        #expect(run("register", "--quiet", "--help").output.hasPrefix("OVERVIEW"), "help is printed even with --quiet")
        #expect(try SoundRegistryFile(path: registryPath).sounds().count == 1)
    }

    @Test func twentyProcessesRegisteringAtOnceAllLand() throws {
        defer { try? FileManager.default.removeItem(atPath: home) }
        let path = try tone()
        let environment = ["XDG_DATA_HOME=\(home)/data"]
        // Each on its own thread, so that all 20 processes run at once.
        let runs = (0..<20).map { _ in inBackground { runProcess(feedbackctlBinary, ["register", path], environment: environment) } }
        let results = runs.map { $0() }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.errors))")
        let printed = results.compactMap { SystemSoundID($0.output.trimmingCharacters(in: .newlines)) }.sorted()
        #expect(printed == Array(4097...4116))
        let sounds = try SoundRegistryFile(path: registryPath).sounds()
        #expect(sounds.map(\.id) == Array(4097...4116) && sounds.allSatisfy { $0.path == path })
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: "\(home)/data/feedbackservices")
        #expect(leftovers.sorted() == ["registry.json", "registry.json.lock"], "no temporary file is left behind")
    }
}
