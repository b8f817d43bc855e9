import CSystemd
import Glibc

/// One D-Bus message (an `sd_bus_message`): read a call's or a signal's arguments in order, or append
/// a reply's. Holds a reference to the message (`sd_bus_message_ref`) for its own lifetime.
///
/// Thread safety: none; a message is used on the bus thread only (handlers get one there, and it is
/// not `Sendable`).
package final class BusMessage {
    let handle: OpaquePointer
    /// A method call whose handler will answer later (`BusContext.answerLater`): no reply is sent
    /// when the handler returns.
    var answeredLater = false

    /// Takes a new reference to `handle`.
    init(referencing handle: OpaquePointer) {
        self.handle = sd_bus_message_ref(handle)
    }

    /// Adopts the reference a `sd_bus_message_new_*` call returned.
    init(adopting handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        sd_bus_message_unref(handle)
    }

    /// The member called or signalled (`sd_bus_message_get_member`).
    package var member: String { sd_bus_message_get_member(handle).map { String(cString: $0) } ?? "" }

    /// The sender's unique bus name (`:1.42`); empty when the bus did not say (a direct connection).
    package var sender: String { sd_bus_message_get_sender(handle).map { String(cString: $0) } ?? "" }

    /// The sender's user ID, as the bus knows it from the sender's socket
    /// (`sd_bus_query_sender_creds`: the message's own credentials, else the bus's
    /// `GetConnectionCredentials`, a round trip on this connection); nil when the bus does not say
    /// or the sender has left. Unlike anything in the message's body, the sender cannot choose it.
    package var senderUID: UInt32? {
        var creds: OpaquePointer?
        guard sd_bus_query_sender_creds(handle, UInt64(SD_BUS_CREDS_EUID), &creds) >= 0, let creds else { return nil }
        defer { sd_bus_creds_unref(creds) }
        var uid: uid_t = 0
        return sd_bus_creds_get_euid(creds, &uid) >= 0 ? uid : nil
    }

    /// The next argument, a string (`s`).
    package func readString() throws(BusError) -> String {
        var pointer: UnsafePointer<CChar>?
        try check(sd_bus_message_read_basic(handle, CChar(UInt8(ascii: "s")), &pointer), "reading a string")
        return pointer.map { String(cString: $0) } ?? ""
    }

    /// The next argument, an `i`.
    package func readInt32() throws(BusError) -> Int32 {
        var value: Int32 = 0
        try check(sd_bus_message_read_basic(handle, CChar(UInt8(ascii: "i")), &value), "reading an int32")
        return value
    }

    /// The next argument, a `u`.
    package func readUInt32() throws(BusError) -> UInt32 {
        var value: UInt32 = 0
        try check(sd_bus_message_read_basic(handle, CChar(UInt8(ascii: "u")), &value), "reading a uint32")
        return value
    }

    /// The next argument, a `b`.
    package func readBoolean() throws(BusError) -> Bool {
        var value: Int32 = 0
        try check(sd_bus_message_read_basic(handle, CChar(UInt8(ascii: "b")), &value), "reading a boolean")
        return value != 0
    }

    /// For a `NameOwnerChanged` signal: the unique name (`:1.42`) that left the bus, if it says
    /// that one did (no new owner); nil for any other change.
    package func readDeparture() -> String? {
        guard let name = try? readString(), name.hasPrefix(":"), (try? readString()) != nil, (try? readString()) == ""
        else { return nil }
        return name
    }

    /// The next argument, a file descriptor (`h`), duplicated (close-on-exec): the message owns the
    /// one it carries, the caller owns and must close the one returned.
    package func readFileDescriptor() throws(BusError) -> Int32 {
        var descriptor: Int32 = -1
        try check(sd_bus_message_read_basic(handle, CChar(UInt8(ascii: "h")), &descriptor), "reading a file descriptor")
        let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 3)
        guard copy >= 0 else { throw BusError(code: errno, "duplicating a passed file descriptor") }
        return copy
    }

    /// The next argument, a value of the basic type `signature` (`s`, `u`, `i`, `b`, `d`; a byte,
    /// `y`, is read as `u`).
    package func readBasic(_ signature: String) throws(BusError) -> BusValue {
        switch signature {
        case "s": return .string(try readString())
        case "u": return .uint32(try readUInt32())
        case "y":
            var value: UInt8 = 0
            try check(sd_bus_message_read_basic(handle, CChar(UInt8(ascii: "y")), &value), "reading a byte")
            return .uint32(UInt32(value))
        case "i": return .int32(try readInt32())
        case "b": return .boolean(try readBoolean())
        case "d":
            var value = 0.0
            try check(sd_bus_message_read_basic(handle, CChar(UInt8(ascii: "d")), &value), "reading a double")
            return .double(value)
        default:
            throw .invalidArgs("values of type '\(signature)' are not supported here")
        }
    }

    /// The next argument, a variant holding a basic value.
    package func readVariant() throws(BusError) -> BusValue {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        try check(sd_bus_message_peek_type(handle, &type, &contents), "reading a variant")
        let inner = contents.map { String(cString: $0) } ?? ""
        try check(sd_bus_message_enter_container(handle, CChar(UInt8(ascii: "v")), inner), "reading a variant")
        let value = try readBasic(inner)
        try check(sd_bus_message_exit_container(handle), "reading a variant")
        return value
    }

    /// The next argument, an `a{sv}` dictionary: the entries whose values have a basic type
    /// `readBasic` reads; the others are skipped. At most `limit` entries, else `InvalidArgs`.
    /// A key listed in `types` must hold a value of that type (`"b"` for `important`), else
    /// `InvalidArgs` names the key, the type expected and the type sent.
    package func readVariantDictionary(limit: Int, types: [String: String] = [:]) throws(BusError)
        -> [String: BusValue]
    {
        try check(sd_bus_message_enter_container(handle, CChar(UInt8(ascii: "a")), "{sv}"), "reading a{sv}")
        var entries: [String: BusValue] = [:]
        var count = 0
        while try check(sd_bus_message_enter_container(handle, CChar(UInt8(ascii: "e")), "sv"), "reading a{sv}") > 0 {
            count += 1
            guard count <= limit else { throw .invalidArgs("more than \(limit) hints") }
            let key = try readString()
            var type: CChar = 0
            var contents: UnsafePointer<CChar>?
            try check(sd_bus_message_peek_type(handle, &type, &contents), "reading a variant")
            let inner = contents.map { String(cString: $0) } ?? ""
            if let expected = types[key], expected != inner {
                throw .invalidArgs(
                    "the hint '\(key)' must be of type '\(expected)', not '\(inner.prefix(64))'")
            }
            if ["s", "u", "i", "b", "d", "y"].contains(inner) {
                entries[key] = try readVariant()
            } else {
                try check(sd_bus_message_skip(handle, "v"), "skipping a variant")
            }
            try check(sd_bus_message_exit_container(handle), "reading a{sv}")
        }
        try check(sd_bus_message_exit_container(handle), "reading a{sv}")
        return entries
    }

    /// The next argument, an `a(du)` array (`Haptic.Vibrate`'s pattern: magnitude, duration), of at
    /// most `limit` elements, else `InvalidArgs`.
    package func readDoubleUInt32Pairs(limit: Int) throws(BusError) -> [(Double, UInt32)] {
        try readStructures(signature: "du", limit: limit, naming: "pattern steps").map { row throws(BusError) in
            guard case .double(let magnitude) = row[0], case .uint32(let duration) = row[1] else {
                throw .invalidArgs("reading a(du)")
            }
            return (magnitude, duration)
        }
    }

    /// Skips the next arguments, of the types `signature` (`sss`, `as`), unread.
    package func skip(_ signature: String) throws(BusError) {
        try check(sd_bus_message_skip(handle, signature), "skipping '\(signature)'")
    }

    /// The next argument, an `as`: at most `limit` strings, else `InvalidArgs`.
    package func readStrings(limit: Int) throws(BusError) -> [String] {
        try check(sd_bus_message_enter_container(handle, CChar(UInt8(ascii: "a")), "s"), "reading as")
        var strings: [String] = []
        var pointer: UnsafePointer<CChar>?
        while try check(sd_bus_message_read_basic(handle, CChar(UInt8(ascii: "s")), &pointer), "reading as") > 0 {
            guard strings.count < limit else { throw .invalidArgs("more than \(limit) strings") }
            strings.append(pointer.map { String(cString: $0) } ?? "")
        }
        try check(sd_bus_message_exit_container(handle), "reading as")
        return strings
    }

    /// The next argument, an array of structures whose fields have the basic types of `signature`
    /// (`us` for `a(us)`), each as a row of values; at most `limit` of them, else `InvalidArgs`
    /// saying "more than `limit` `naming`".
    package func readStructures(signature: String, limit: Int = .max, naming: String = "elements") throws(BusError)
        -> [[BusValue]]
    {
        let what = "reading a(\(signature))"
        try check(sd_bus_message_enter_container(handle, CChar(UInt8(ascii: "a")), "(\(signature))"), what)
        var rows: [[BusValue]] = []
        while try check(sd_bus_message_enter_container(handle, CChar(UInt8(ascii: "r")), signature), what) > 0 {
            guard rows.count < limit else { throw .invalidArgs("more than \(limit) \(naming)") }
            rows.append(try signature.map { type throws(BusError) in try readBasic(String(type)) })
            try check(sd_bus_message_exit_container(handle), what)
        }
        try check(sd_bus_message_exit_container(handle), what)
        return rows
    }

    /// Appends `value` (`sd_bus_message_append_basic`; containers with
    /// `sd_bus_message_open_container`).
    func append(_ value: BusValue) throws(BusError) {
        let type = CChar(bitPattern: value.typeCode)
        let result: Int32
        switch value {
        case .structures(let signature, let rows):
            try check(sd_bus_message_open_container(handle, type, "(\(signature))"), "opening an array")
            for row in rows {
                try check(sd_bus_message_open_container(handle, CChar(UInt8(ascii: "r")), signature), "opening a structure")
                for field in row { try append(field) }
                try check(sd_bus_message_close_container(handle), "closing a structure")
            }
            result = sd_bus_message_close_container(handle)
        case .variant(let inner):
            try check(sd_bus_message_open_container(handle, type, String(UnicodeScalar(inner.typeCode))), "opening a variant")
            try append(inner)
            result = sd_bus_message_close_container(handle)
        case .dictionary(let entries):
            try check(sd_bus_message_open_container(handle, type, "{sv}"), "opening a{sv}")
            for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
                try check(sd_bus_message_open_container(handle, CChar(UInt8(ascii: "e")), "sv"), "opening an entry")
                try append(.string(key))
                try append(.variant(value))
                try check(sd_bus_message_close_container(handle), "closing an entry")
            }
            result = sd_bus_message_close_container(handle)
        case .strings(let items):
            var pointers = items.map { strdup($0) } + [nil]
            defer { pointers.forEach { free($0) } }
            result = sd_bus_message_append_strv(handle, &pointers)
        case .string(let text): result = text.withCString { sd_bus_message_append_basic(handle, type, $0) }
        case .uint32(var number): result = sd_bus_message_append_basic(handle, type, &number)
        case .int32(var number): result = sd_bus_message_append_basic(handle, type, &number)
        case .boolean(let flag):
            var number: Int32 = flag ? 1 : 0
            result = sd_bus_message_append_basic(handle, type, &number)
        case .double(var number): result = sd_bus_message_append_basic(handle, type, &number)
        }
        try check(result, "appending \(value)")
    }
}

/// Throws for a negative sd-bus return (`-errno`), else returns it.
@discardableResult
func check(_ result: Int32, _ what: String) throws(BusError) -> Int32 {
    guard result >= 0 else { throw BusError(code: -result, what) }
    return result
}
