// generate-sound-theme: writes FeedbackServices' sound theme from the synthesis code in SoundSynthesis.
//
// Usage: generate-sound-theme DIRECTORY   (scripts/generate-sound-theme passes the repository's SoundThemes)
import Glibc
import SoundSynthesis

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 1, let root = arguments.first, !root.hasPrefix("-") else {
    print("USAGE: generate-sound-theme DIRECTORY")
    exit(arguments.first == "-h" || arguments.first == "--help" ? 0 : 64)
}
do {
    let files = try ShippedTheme.write(to: root)
    print("generate-sound-theme: wrote \(files.count) files to \(root)/\(ShippedTheme.name)")
} catch {
    let message = "generate-sound-theme: \(error)\n"
    _ = message.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(73)
}
