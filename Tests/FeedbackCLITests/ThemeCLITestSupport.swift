import FeedbackCLI
import Foundation

/// The output of one in-process `feedbackctl` run.
struct ThemeCLIRun {
    let code: Int32
    let output: String
    let errors: String

    /// The output parsed as a JSON object.
    func json() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(output.utf8))
        guard let dictionary = object as? [String: Any] else { throw CocoaError(.coderReadCorrupt) }
        return dictionary
    }
}

/// Runs `feedbackctl ARGUMENTS` in process.
func runThemeCLI(_ arguments: [String]) -> ThemeCLIRun {
    var output = ""
    var errors = ""
    let code = FeedbackCommand.run(arguments: arguments, output: &output, errors: &errors)
    return ThemeCLIRun(code: code, output: output, errors: errors)
}

/// The repository's `SoundThemes` directory.
let cliRepositoryThemes: String = {
    var path = "\(#filePath)"
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/SoundThemes"
}()

/// A temporary directory, removed by `removeThemeCLIDirectory`.
func makeThemeCLIDirectory() -> String {
    let path = NSTemporaryDirectory() + "feedbackctl-theme-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func removeThemeCLIDirectory(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

/// Writes `contents` to `directory/relativePath`, creating directories.
func writeThemeCLIFile(_ relativePath: String, in directory: String, contents: String) {
    let url = URL(fileURLWithPath: directory + "/" + relativePath)
    try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try? Data(contents.utf8).write(to: url)
}
