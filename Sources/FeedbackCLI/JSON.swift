/// The little JSON `--json` output needs: values, and a compact writer with sorted keys so that
/// output is stable for scripts and tests.
enum JSON: Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case array([JSON])
    case object([String: JSON])
    case null

    static func object(_ members: [String: JSON]) -> String {
        JSON.object(members).text
    }

    var text: String {
        switch self {
        case .string(let value): return Self.quote(value)
        case .number(let value):
            if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
            return value.isFinite ? "\(value)" : "null"
        case .bool(let value): return value ? "true" : "false"
        case .null: return "null"
        case .array(let values): return "[" + values.map(\.text).joined(separator: ",") + "]"
        case .object(let members):
            let body = members.keys.sorted().map { Self.quote($0) + ":" + members[$0]!.text }
            return "{" + body.joined(separator: ",") + "}"
        }
    }

    private static func quote(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
