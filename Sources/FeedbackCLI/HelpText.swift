/// A command's help text taken apart into its sections, for the man page and the shell
/// completions, which are generated from the help so that they cannot drift from it.
///
/// The help follows one layout (see `Subcommand.help`): `OVERVIEW: one line`, paragraphs, then
/// sections headed `NAME:` at the start of a line, whose entries are indented by two spaces.
/// An option entry is its names (`-h, --help`), then an upper-case value name if it takes one
/// (`--output FILE`), then its description, which may go on in lines indented further.
struct HelpText {
    /// One entry of OPTIONS.
    struct Option: Equatable {
        /// `["-h", "--help"]`, `["--volume"]`.
        var names: [String]
        /// The value's name (`FILE`, `X`, `PATH|NAME`), or nil for a flag.
        var valueName: String?
        /// The description, its lines joined.
        var description: String
    }

    /// One entry of ARGUMENTS.
    struct Argument: Equatable {
        /// `ID|EVENT`, `FILE`, `full|quiet|silent`.
        var name: String
        var description: String
    }

    /// A positional argument in the first USAGE line: `ID|EVENT`, `[X]`, `FILE...`.
    struct Positional: Equatable {
        /// The name without brackets and dots: `ID|EVENT`, `X`, `FILE`.
        var name: String
        var isOptional: Bool
        var repeats: Bool

        /// The alternatives the name lists: `ID|EVENT` → `["ID", "EVENT"]`.
        var alternatives: [String] { name.split(separator: "|").map(String.init) }
    }

    /// A paragraph of the description: running text, or lines to keep as they are (indented in
    /// the help, like a command to type).
    enum Paragraph: Equatable {
        case text([String])
        case literal([String])
    }

    /// The OVERVIEW line.
    var summary = ""
    /// The paragraphs between OVERVIEW and the first section.
    var discussion: [Paragraph] = []
    /// Each USAGE form, its continuation lines joined.
    var usage: [String] = []
    var arguments: [Argument] = []
    var options: [Option] = []
    /// The EXIT STATUS text, its lines joined.
    var exitStatus: String?
    var examples: [String] = []

    init(_ text: String) {
        var section = "OVERVIEW"
        var paragraph: [String] = []
        var literal = false
        var exitLines: [String] = []
        func endParagraph() {
            if !paragraph.isEmpty { discussion.append(literal ? .literal(paragraph) : .text(paragraph)) }
            paragraph = []
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if let header = Self.header(of: line) {
                endParagraph()
                section = header.name
                if section == "OVERVIEW" { summary = header.rest }
                if section == "USAGE" { usage.append(header.rest) }
                continue
            }
            let indent = line.prefix { $0 == " " }.count
            let content = String(line.dropFirst(indent))
            switch section {
            case "OVERVIEW":
                if content.isEmpty {
                    endParagraph()
                } else {
                    if !paragraph.isEmpty && (indent > 0) != literal { endParagraph() }
                    literal = indent > 0
                    paragraph.append(content)
                }
            case "USAGE":
                guard !content.isEmpty else { continue }
                if content.hasPrefix("feedbackctl ") { usage.append(content) } else { usage[usage.count - 1] += " " + content }
            case "ARGUMENTS":
                guard !content.isEmpty else { continue }
                if indent == 2 {
                    let name = String(content.prefix { $0 != " " })
                    arguments.append(Argument(name: name, description: Self.trimmed(content.dropFirst(name.count))))
                } else if !arguments.isEmpty {
                    arguments[arguments.count - 1].description = Self.joined(arguments[arguments.count - 1].description, content)
                }
            case "OPTIONS":
                guard !content.isEmpty else { continue }
                if indent == 2 && content.hasPrefix("-") {
                    options.append(Self.option(content))
                } else if !options.isEmpty {
                    options[options.count - 1].description = Self.joined(options[options.count - 1].description, content)
                }
            case "EXIT STATUS":
                if indent > 0 && !content.isEmpty { exitLines.append(content) }
            case "EXAMPLES":
                if indent > 0 && !content.isEmpty { examples.append(content) }
            default:
                break
            }
        }
        endParagraph()
        if !exitLines.isEmpty { exitStatus = exitLines.joined(separator: " ") }
    }

    /// The positional arguments of the first USAGE form: its words that are not options or
    /// bracketed option groups (`[--theme NAME]`, `[OPTIONS]`).
    var positionals: [Positional] {
        guard let form = usage.first else { return [] }
        // Skip "feedbackctl NAME".
        let words = Self.usageWords(form).dropFirst(2)
        return words.compactMap { word in
            let isOptional = word.hasPrefix("[")
            var name = isOptional ? String(word.dropFirst().dropLast()) : word
            if name.hasPrefix("-") || name == "OPTIONS" || name.contains(" ") { return nil }
            let repeats = name.hasSuffix("...")
            if repeats { name.removeLast(3) }
            return Positional(name: name, isOptional: isOptional, repeats: repeats)
        }
    }

    /// The option names of OPTIONS, with whether each takes a value.
    var optionNames: [String: Bool] {
        var names: [String: Bool] = [:]
        for option in options {
            for name in option.names { names[name] = option.valueName != nil }
        }
        return names
    }

    /// A USAGE form split into words, a bracketed group (`[--theme NAME]`) being one word.
    static func usageWords(_ form: String) -> [String] {
        var words: [String] = []
        var word = ""
        var depth = 0
        for character in form {
            if character == "[" { depth += 1 }
            if character == "]" { depth -= 1 }
            if character == " " && depth == 0 {
                if !word.isEmpty { words.append(word) }
                word = ""
            } else {
                word.append(character)
            }
        }
        if !word.isEmpty { words.append(word) }
        return words
    }

    /// `NAME: rest` for a section header: upper-case words and a colon at the start of a line.
    private static func header(of line: String) -> (name: String, rest: String)? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        let name = line[..<colon]
        guard !name.isEmpty, name.first != " ", name.allSatisfy({ $0.isUppercase || $0 == " " }) else { return nil }
        return (String(name), trimmed(line[line.index(after: colon)...]))
    }

    /// An option entry's first line: its names, its value's name, and the start of its description.
    private static func option(_ content: String) -> Option {
        var words = content.split(separator: " ", omittingEmptySubsequences: true).map(String.init)[...]
        var names: [String] = []
        var valueName: String?
        while let word = words.first, word.hasPrefix("-") {
            names.append(word.hasSuffix(",") ? String(word.dropLast()) : word)
            words = words.dropFirst()
            if !word.hasSuffix(",") { break }
        }
        if let word = words.first, isValueName(word) {
            valueName = word
            words = words.dropFirst()
        }
        return Option(names: names, valueName: valueName, description: words.joined(separator: " "))
    }

    /// Whether a word is a value's name: upper-case letters and digits with `|`, `,`, `.` or `_`
    /// (`X`, `FILE`, `PATH|NAME`, `MS,...`).
    static func isValueName(_ word: String) -> Bool {
        word.contains { $0.isUppercase }
            && word.allSatisfy { ($0.isUppercase && $0.isASCII) || $0.isNumber || "|,._".contains($0) }
    }

    private static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " })
    }

    private static func joined(_ text: String, _ more: String) -> String {
        text.isEmpty ? more : text + " " + more
    }
}
