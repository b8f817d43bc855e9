// libFuzzer target: NUL-separated arguments → `feedbackctl`'s parser and commands, in process.
// Built and run by scripts/fuzz.
//
// The commands really run, so the process is fenced in first: HOME, XDG_* and the current
// directory are a private temporary directory, PULSE_SERVER names no server (a play fails at
// once), and inputs naming a path outside it (any '/') or rendering a file (--output) are skipped.
import FeedbackCLI
import FoundationEssentials
import FuzzSupport
import Glibc
import Synchronization

private let sandbox: [String: String] = {
    var template = Array("/tmp/feedbackservices-fuzz-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(made != nil, "mkdtemp failed")
    let root = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    precondition(chdir(root) == 0)
    let environment = [
        "HOME": root, "XDG_CONFIG_HOME": root + "/config", "XDG_DATA_HOME": root + "/data",
        "XDG_RUNTIME_DIR": root + "/run", "XDG_CONFIG_DIRS": root + "/etc", "XDG_DATA_DIRS": root + "/share",
        "PULSE_SERVER": "unix:" + root + "/no-server", "FEEDBACK_SOUND_THEME": "",
    ]
    for (name, value) in environment { setenv(name, value, 1) }
    sandboxRoot.withLock { $0 = root }
    atexit { if let root = sandboxRoot.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: root) } }
    return environment
}()

/// The sandbox directory, removed when the fuzzer exits.
private let sandboxRoot = Mutex<String?>(nil)

/// A text sink that keeps nothing.
private struct Discard: TextOutputStream {
    mutating func write(_ string: String) {}
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzArguments(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let environment = sandbox
    let arguments = UnsafeBufferPointer(start: data, count: size).split(separator: 0, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
    guard !arguments.contains(where: { $0.contains("/") || $0.hasPrefix("--output") }) else { return 0 }
    var output = Discard()
    var errors = Discard()
    let status = FeedbackCommand.run(arguments: arguments, environment: environment, output: &output, errors: &errors)
    precondition([0, 64, 65, 66, 69, 70, 73, 74, 75, 77].contains(status), "exit status \(status)")
    return 0
}

/// The program's entry (SwiftPM names an executable's `main` `MODULE_main`): libFuzzer's driver.
@_cdecl("fuzz_arguments_main")
func fuzzMain(_ argc: CInt, _ argv: ArgumentVector) -> CInt { runFuzzer(argc, argv, fuzzArguments) }
