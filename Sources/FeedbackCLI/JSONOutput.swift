import FoundationEssentials

/// The one way `--json` output is written: a command's report, `Encodable`, as one line of compact
/// JSON with its keys sorted, so that output is stable for scripts and tests, and with the
/// `version` member every command's object has (a report does not declare it).
///
/// FoundationEssentials' `JSONEncoder` writes it: the library links FoundationEssentials anyway
/// (not Foundation, which would load ICU), and the encoder costs about 0.15 ms on a small report,
/// after the command's work (measured in docs/benchmarks.md). A number prints as Swift prints it, an
/// integral `Double` without `.0`; report types hold a `Float` as a `Double` (`Double(peak)`), so
/// that values print as they always have.
enum JSONOutput {
    /// `report`'s members and `version` as a JSON object, and a newline.
    static func line(_ report: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return String(decoding: try encoder.encode(Merged(first: Version(), second: report)), as: UTF8.self) + "\n"
        } catch {
            // Only a number JSON cannot hold fails, and reports hold only finite ones: the
            // library's durations, peaks and loudnesses are (an unmeasurable loudness is nil).
            preconditionFailure("a report does not encode: \(error)")
        }
    }

    /// A duration as every report gives it: seconds, rounded to the millisecond (a sound's length
    /// in frames divided by the rate has digits that say nothing).
    static func seconds(_ seconds: Double) -> Double {
        (seconds * 1000).rounded() / 1000
    }

    private struct Version: Encodable {
        let version = FeedbackCommand.version
    }
}

/// A command's failure as `--json` reports it, under `error`: `{"message", "exitCode"}`.
struct JSONFailure: Encodable {
    let message: String
    let exitCode: Int32

    init(_ failure: CommandError) {
        message = failure.message
        exitCode = failure.exitCode.rawValue
    }
}

/// An optional member written as `null` when absent, where a plain optional is left out.
///
/// `@Nullable var file: String?` in a report type: `"file":null` rather than no `file` key. For a
/// member that is sometimes left out and sometimes null, the type is `Nullable<T>?`.
@propertyWrapper
struct Nullable<Value: Encodable>: Encodable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    /// For a `Nullable<T>?` member: present, with this value or null.
    init(_ value: Value?) {
        wrappedValue = value
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue {
            try container.encode(wrappedValue)
        } else {
            try container.encodeNil()
        }
    }
}

/// Two reports' members in one JSON object: every report beside its `version`; `list`'s sounds,
/// a catalog entry beside the lookup `theme` reports.
///
/// Not generic: the runtime would build the metadata of each `Merged<A, B>` at its first use by
/// looking up A's and B's `Encodable` conformances in a scan of every conformance in the binary,
/// which cost `version --json` another 0.1 ms.
struct Merged: Encodable {
    let first: any Encodable
    let second: any Encodable

    func encode(to encoder: any Encoder) throws {
        try first.encode(to: encoder)
        try second.encode(to: encoder)
    }
}
