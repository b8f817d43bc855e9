import FeedbackServices
import Glibc

/// The uinput force-feedback device program (scripts/vm/uinput-ff-device.c), run as a child
/// process: it creates the device, and records what the kernel delivered to it in a log.
final class DeviceProgram {
    let path: String
    let logPath: String
    private let pid: pid_t
    private var exited = false

    /// One line of the log: the kernel's stamp (µs, CLOCK_MONOTONIC), what happened, its fields.
    struct Record: CustomStringConvertible {
        var time: Int64
        var kind: String
        var fields: [String: String]

        func int(_ key: String) -> Int { Int(fields[key] ?? "") ?? -1 }
        var id: Int { int("id") }
        var description: String {
            "\(time) \(kind) " + fields.keys.sorted().map { "\($0)=\(fields[$0]!)" }.joined(separator: " ")
        }
    }

    init(program: String, name: String, capabilities: String, maximumEffects: Int) throws(CaseFailure) {
        logPath = "/tmp/ffdevice-\(name.filter { $0.isLetter || $0.isNumber }).log"
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw CaseFailure("pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
        let arguments = [program, name, capabilities, String(maximumEffects), logPath]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var child = pid_t()
        let status = posix_spawn(&child, program, &actions, nil, &argv, environ)
        posix_spawn_file_actions_destroy(&actions)
        for pointer in argv { free(pointer) }
        close(pipeFDs[1])
        guard status == 0 else { throw CaseFailure("cannot start \(program): \(Errno(rawValue: status))") }
        pid = child
        var line = ""
        var byte: UInt8 = 0
        while read(pipeFDs[0], &byte, 1) == 1, byte != 10 { line.append(Character(UnicodeScalar(byte))) }
        close(pipeFDs[0])
        guard line.hasPrefix("READY ") else { throw CaseFailure("device program did not start: '\(line)'") }
        path = String(line.dropFirst(6))
    }

    /// Destroys the device (SIGTERM makes the program call UI_DEV_DESTROY) and waits for the program.
    func destroy() {
        guard !exited else { return }
        exited = true
        kill(pid, SIGTERM)
        _ = try? System.waitpid(pid)
    }

    /// Everything recorded so far.
    func records() -> [Record] {
        guard let file = fopen(logPath, "r") else { return [] }
        defer { fclose(file) }
        var records: [Record] = []
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        while getline(&line, &capacity, file) > 0 {
            let words = String(cString: line!).split(whereSeparator: { $0 == " " || $0 == "\n" })
            guard words.count >= 2, let time = Int64(words[0]) else { continue }
            var fields: [String: String] = [:]
            for word in words.dropFirst(2) {
                let parts = word.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
            }
            records.append(Record(time: time, kind: String(words[1]), fields: fields))
        }
        free(line)
        return records
    }

    deinit { destroy() }
}

/// Why a case failed.
struct CaseFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
