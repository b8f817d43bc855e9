/// A basic D-Bus value: what the service's methods, signals and properties carry. A value; safe to
/// share across threads.
package enum BusValue: Sendable, Equatable, CustomStringConvertible {
    /// `s`
    case string(String)
    /// `u`
    case uint32(UInt32)
    /// `i`
    case int32(Int32)
    /// `b`
    case boolean(Bool)
    /// `d`
    case double(Double)
    /// `a(…)`: an array of structures whose fields have the basic types of `signature` (`usd` for
    /// `a(usd)`), each row one structure.
    case structures(signature: String, [[BusValue]])
    /// `v`: a basic value in a variant.
    indirect case variant(BusValue)
    /// `a{sv}`: basic values by name, each in a variant (sent in the order of their names).
    case dictionary([String: BusValue])
    /// `as`
    case strings([String])

    /// The value's D-Bus type code.
    var typeCode: UInt8 {
        switch self {
        case .string: UInt8(ascii: "s")
        case .uint32: UInt8(ascii: "u")
        case .int32: UInt8(ascii: "i")
        case .boolean: UInt8(ascii: "b")
        case .double: UInt8(ascii: "d")
        case .structures, .dictionary, .strings: UInt8(ascii: "a")
        case .variant: UInt8(ascii: "v")
        }
    }

    /// The value as a string, for `.string`.
    package var string: String? {
        if case .string(let text) = self { text } else { nil }
    }

    /// The value as gdbus prints it.
    package var description: String {
        switch self {
        case .string(let text): "'\(text)'"
        case .uint32(let value): "uint32 \(value)"
        case .int32(let value): "\(value)"
        case .boolean(let value): "\(value)"
        case .double(let value): "\(value)"
        case .structures(_, let rows): "[\(rows.map { "(\($0.map(\.description).joined(separator: ", ")))" }.joined(separator: ", "))]"
        case .variant(let value): "<\(value)>"
        case .strings(let items): "[\(items.map { "'\($0)'" }.joined(separator: ", "))]"
        case .dictionary(let entries):
            "{\(entries.sorted { $0.key < $1.key }.map { "'\($0.key)': <\($0.value)>" }.joined(separator: ", "))}"
        }
    }
}

/// One member of an interface served on the bus: a method, a signal or a property. The argument
/// names appear in the introspection data. A value; safe to share across threads.
package enum BusMember: Sendable, Equatable {
    /// A method: `signature` in, `result` out, argument names in then out.
    case method(String, signature: String, result: String, names: [String])
    /// A signal with these arguments.
    case signal(String, signature: String, names: [String])
    /// A property of a basic type; `writable` lets clients set it; `emitsChange` says in the
    /// introspection data that `PropertiesChanged` carries its new value.
    case property(String, signature: String, writable: Bool, emitsChange: Bool)
}
