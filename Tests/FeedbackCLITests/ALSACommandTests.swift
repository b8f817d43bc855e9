import FeedbackServices
import FeedbackTestSupport
import Foundation
import Testing

@testable import FeedbackCLI

/// `--pcm NAME` and the ALSA side of `feedbackctl devices`, which need no sound card: ALSA's
/// configuration always has its `null` PCM.
struct ALSACommandTests {
    @Test(arguments: [["--pcm", "null", "--canberra"], ["--pcm", "null", "--output", "/tmp/x.wav"], ["--pcm", ""]])
    func pcmGoesWithNoOtherDestination(_ options: [String]) {
        var output = ""
        var errors = ""
        let status = FeedbackCommand.run(arguments: ["fire", "1007"] + options, output: &output, errors: &errors)
        #expect(status == 64, "\(errors)")
        #expect(errors.contains("--pcm"), "\(errors)")
    }

    @Test func aMissingPCMIsUnavailable() {
        var output = ""
        var errors = ""
        let status = FeedbackCommand.run(
            arguments: ["fire", "1007", "--pcm", "feedbackservices-no-such-pcm"],
            environment: ["FEEDBACKSERVICES_PROFILE": "full"], output: &output, errors: &errors)
        #expect(status == 69, "\(errors)")
        #expect(errors.contains("the audio device cannot be opened: ALSA PCM feedbackservices-no-such-pcm"), "\(errors)")
    }

    @Test func devicesListsTheALSAPCMs() throws {
        var output = ""
        var errors = ""
        let input = TemporaryDirectory()
        let status = FeedbackCommand.run(
            arguments: ["devices", "--json", "--input-dir", input.path], output: &output, errors: &errors)
        #expect(status == 0, "\(errors)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "\(output)")
        let alsa = try #require(object["alsa"] as? [String: Any], "\(output)")
        let pcms = try #require(alsa["pcms"] as? [[String: Any]])
        #expect(pcms.contains { $0["name"] as? String == "null" }, "\(pcms)")
        #expect(alsa["cards"] is [Any])
    }
}
