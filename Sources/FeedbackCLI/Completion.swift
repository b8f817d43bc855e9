import FeedbackServices

/// The bash and zsh completion scripts of feedbackctl, generated from the commands' own help
/// (`HelpText`): the commands and their abstracts from the overview, each command's options from
/// its OPTIONS (an option with a value name takes a value), and what to offer for arguments and
/// values from their names (`Kind`).
///
/// System sound IDs and event names come from `SystemSoundCatalog` when the script is generated,
/// as a fixed list: completion has to answer at once, and the catalog changes only with the code,
/// when `scripts/generate-docs` is run again (a test fails until it is).
enum Completion {
    /// What is offered for an argument or an option's value.
    enum Kind: Equatable {
        case files
        case directories
        case commands
        case soundIDs
        case events
        case words([String])
    }

    /// What to offer for an argument or value named `name` in the help (`FILE`, `ID|EVENT`,
    /// `full|quiet|silent`): the words of a lower-case list; files for FILE and PATH, directories
    /// for DIR and DIRS, command names for COMMAND, theme events for EVENT, and the system sound IDs
    /// for an ID that may also be an event or a file (`fire`, `volume`). An ID on its own names a
    /// registered sound, which only the running program knows, so nothing is offered.
    static func kinds(for name: String) -> [Kind] {
        let alternatives = name.split(separator: "|").map(String.init)
        if alternatives.allSatisfy({ $0.first?.isLowercase ?? false }) { return [.words(alternatives)] }
        return alternatives.compactMap { alternative in
            switch alternative {
            case "FILE", "PATH": .files
            case "DIR", "DIRS": .directories
            case "COMMAND": .commands
            case "EVENT": .events
            case "ID" where alternatives.count > 1: .soundIDs
            default: nil
            }
        }
    }

    /// One command as the scripts see it.
    struct Command {
        let name: String
        let abstract: String
        let options: [HelpText.Option]
        let positionals: [HelpText.Positional]

        init(_ command: any Subcommand.Type) {
            let help = HelpText(command.help)
            name = command.name
            abstract = command.abstract
            options = help.options
            positionals = help.positionals
        }

        var optionNames: [String] { options.flatMap(\.names) }
        var valueOptions: [HelpText.Option] { options.filter { $0.valueName != nil } }
    }

    static var commands: [Command] { FeedbackCommand.subcommands.map(Command.init) }

    /// The options that go before a command (`feedbackctl --version`).
    static var globalOptions: [HelpText.Option] { HelpText(FeedbackCommand.overview).options }

    // MARK: bash

    /// The bash completion script (for bash-completion's `completions/` directory, or to `source`).
    static var bash: String {
        var script = """
            # bash completion for feedbackctl(1), generated from the commands' help by
            # 'feedbackctl completion bash' (scripts/generate-docs writes it to
            # share/bash-completion/completions/feedbackctl). Do not edit.

            _feedbackctl_sound_ids='\(SystemSoundCatalog.sounds.map { String($0.id) }.joined(separator: " "))'
            _feedbackctl_events='\(SystemSoundCatalog.events.joined(separator: " "))'

            _feedbackctl_words() {
                COMPREPLY+=($(compgen -W "$2" -- "$1"))
            }

            _feedbackctl_files() {
                compopt -o filenames 2>/dev/null
                local IFS=$'\\n'
                COMPREPLY+=($(compgen -f -- "$1"))
            }

            _feedbackctl_directories() {
                compopt -o filenames 2>/dev/null
                local IFS=$'\\n'
                COMPREPLY+=($(compgen -d -- "$1"))
            }

            _feedbackctl() {
                COMPREPLY=()
                local cur=${COMP_WORDS[COMP_CWORD]} prev=
                ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
                # bash splits --name=value at the '=' (COMP_WORDBREAKS).
                if [[ $cur == = ]]; then
                    cur=
                elif [[ $prev == = ]]; then
                    prev=${COMP_WORDS[COMP_CWORD - 2]}
                fi

                local i command= start=
                for ((i = 1; i < COMP_CWORD; i++)); do
                    case ${COMP_WORDS[i]} in
                    -*) ;;
                    *)
                        command=${COMP_WORDS[i]}
                        start=$((i + 1))
                        break
                        ;;
                    esac
                done
                if [[ -z $command ]]; then
                    _feedbackctl_words "$cur" '\(words(commands.map(\.name) + globalOptions.flatMap(\.names)))'
                    return
                fi

                # The command's options, those that take a value, how many arguments it takes and
                # whether the last one repeats.
                local options= valued= count=0 repeats=
                case $command in

            """
        for command in commands {
            script += "    \(command.name))\n"
            script += "        options='\(words(command.optionNames))'\n"
            script += "        valued=' \(words(command.valueOptions.flatMap(\.names))) '\n"
            script += "        count=\(command.positionals.count)\n"
            if command.positionals.last?.repeats == true { script += "        repeats=1\n" }
            script += "        ;;\n"
        }
        script += """
                *) return ;;
                esac

                if [[ $valued == *" $prev "* ]]; then
                    case "$command $prev" in

            """
        for command in commands {
            for option in command.valueOptions {
                guard let valueName = option.valueName else { continue }
                let action = bashAction(kinds(for: valueName))
                guard !action.isEmpty else { continue }
                let patterns = option.names.map { "'\(command.name) \($0)'" }.joined(separator: " | ")
                script += "        \(patterns)) \(action) ;;\n"
            }
        }
        script += """
                    esac
                    return
                fi

                local position=0 skip= ended= word
                for ((i = start; i < COMP_CWORD; i++)); do
                    word=${COMP_WORDS[i]}
                    if [[ -n $ended ]]; then
                        position=$((position + 1))
                    elif [[ $word == = ]]; then
                        skip=1
                    elif [[ -n $skip ]]; then
                        skip=
                    elif [[ $word == -- ]]; then
                        ended=1
                    elif [[ $word == -* ]]; then
                        [[ $valued == *" $word "* ]] && skip=1
                    else
                        position=$((position + 1))
                    fi
                done
                if [[ -z $ended && $cur == -* ]]; then
                    _feedbackctl_words "$cur" "$options"
                    return
                fi
                if [[ -n $repeats ]] && ((position >= count)); then position=$((count - 1)); fi

                case "$command $position" in

            """
        for command in commands {
            for (index, positional) in command.positionals.enumerated() {
                let action = bashAction(kinds(for: positional.name))
                guard !action.isEmpty else { continue }
                script += "    '\(command.name) \(index)') \(action) ;;\n"
            }
        }
        script += """
                esac
            }

            complete -F _feedbackctl feedbackctl

            """
        return script
    }

    private static func bashAction(_ kinds: [Kind]) -> String {
        kinds.map { kind in
            switch kind {
            case .files: #"_feedbackctl_files "$cur""#
            case .directories: #"_feedbackctl_directories "$cur""#
            case .commands: #"_feedbackctl_words "$cur" '\#(words(commands.map(\.name)))'"#
            case .soundIDs: #"_feedbackctl_words "$cur" "$_feedbackctl_sound_ids""#
            case .events: #"_feedbackctl_words "$cur" "$_feedbackctl_events""#
            case .words(let list): #"_feedbackctl_words "$cur" '\#(words(list))'"#
            }
        }.joined(separator: "; ")
    }

    // MARK: zsh

    /// The zsh completion function (`_feedbackctl`, for a directory on `$fpath`, or to `source`).
    static var zsh: String {
        var script = """
            #compdef feedbackctl
            # zsh completion for feedbackctl(1), generated from the commands' help by
            # 'feedbackctl completion zsh' (scripts/generate-docs writes it to
            # share/zsh/site-functions/_feedbackctl). Do not edit.

            _feedbackctl_commands=(

            """
        for command in commands { script += "    \(quoted(describeEntry(command.name, command.abstract)))\n" }
        script += """
            )

            _feedbackctl_sound_ids=(

            """
        for sound in SystemSoundCatalog.sounds { script += "    \(quoted(describeEntry(String(sound.id), sound.name)))\n" }
        script += """
            )

            _feedbackctl_events=(\(SystemSoundCatalog.events.joined(separator: " ")))

            # Offers each kind named: files, directories, commands, sound-ids, events.
            _feedbackctl_offer() {
                local kind expl ret=1
                for kind; do
                    case $kind in
                    files) _files && ret=0 ;;
                    directories) _files -/ && ret=0 ;;
                    commands) _describe -t commands 'feedbackctl command' _feedbackctl_commands && ret=0 ;;
                    sound-ids) _describe -t sound-ids 'system sound ID' _feedbackctl_sound_ids && ret=0 ;;
                    events) _wanted events expl 'theme event' compadd -a _feedbackctl_events && ret=0 ;;
                    esac
                done
                return ret
            }

            _feedbackctl() {
                local curcontext=$curcontext state state_descr line ret=1
                typeset -A opt_args
                _arguments -C \\

            """
        for option in globalOptions { script += "        \(zshOptionSpecs(option, exclusive: true)) \\\n" }
        script += """
                    '1:command:->command' \\
                    '*::argument:->argument' && ret=0
                case $state in
                command)
                    _feedbackctl_offer commands && ret=0
                    ;;
                argument)
                    curcontext=${curcontext%:*:*}:feedbackctl-$words[1]:
                    case $words[1] in

            """
        for command in commands {
            script += "            \(command.name))\n"
            script += "                _arguments -S \\\n"
            for option in command.options {
                script += "                    \(zshOptionSpecs(option, exclusive: option.names.contains("--help"))) \\\n"
            }
            for (index, positional) in command.positionals.enumerated() {
                let repeats = positional.repeats && index == command.positionals.count - 1
                let position = repeats ? "*" : "\(index + 1)"
                let optional = positional.isOptional && !repeats ? ":" : ""
                script += "                    \(quoted("\(position):\(optional)\(escapeZsh(positional.name)):\(zshAction(kinds(for: positional.name)))")) \\\n"
            }
            script += "                    && ret=0\n"
            script += "                ;;\n"
        }
        script += """
                    esac
                    ;;
                esac
                return ret
            }

            if [[ $funcstack[1] == _feedbackctl ]]; then
                _feedbackctl "$@"
            else
                compdef _feedbackctl feedbackctl
            fi

            """
        return script
    }

    /// The `_arguments` specs of an option: `--name=[description]:VALUE:action` for one with a
    /// value (given as `--name VALUE` or `--name=VALUE`), `--name[description]` for a flag;
    /// `-h, --help` (exclusive) ends completion.
    private static func zshOptionSpecs(_ option: HelpText.Option, exclusive: Bool) -> String {
        let description = "[" + escapeZsh(brief(option.description)) + "]"
        let value = option.valueName.map { ":" + escapeZsh($0) + ":" + zshAction(kinds(for: $0)) } ?? ""
        let names = option.names.map { option.valueName == nil ? $0 : $0 + "=" }
        let exclusion = exclusive ? "(- *)" : names.count > 1 ? "(" + option.names.joined(separator: " ") + ")" : ""
        if names.count == 1 { return quoted(exclusion + names[0] + description + value) }
        return quoted(exclusion) + "{" + names.joined(separator: ",") + "}" + quoted(description + value)
    }

    private static func zshAction(_ kinds: [Kind]) -> String {
        if kinds.isEmpty { return " " }
        if case .words(let list) = kinds.first, kinds.count == 1 { return "(" + list.joined(separator: " ") + ")" }
        let names = kinds.map { kind in
            switch kind {
            case .files: "files"
            case .directories: "directories"
            case .commands: "commands"
            case .soundIDs: "sound-ids"
            case .events: "events"
            case .words: ""
            }
        }
        return "{_feedbackctl_offer " + names.joined(separator: " ") + "}"
    }

    /// The start of a description, up to its first `; ` or `: ` outside brackets, for a
    /// completion menu: "Print one JSON object: {…}" → "Print one JSON object".
    static func brief(_ description: String) -> String {
        var depth = 0
        var previous: Character = " "
        for (offset, character) in description.enumerated() {
            if "([{".contains(character) { depth += 1 }
            if ")]}".contains(character) { depth -= 1 }
            if character == " " && depth == 0 && (previous == ";" || previous == ":") {
                return String(description.prefix(offset - 1))
            }
            previous = character
        }
        return description
    }

    /// `name:description` for `_describe`, the name's colons escaped.
    private static func describeEntry(_ name: String, _ description: String) -> String {
        name.replacing(":", with: "\\:") + ":" + description
    }

    /// Escapes what `_arguments` reads in a description or message: `\`, `[`, `]`, `:`.
    private static func escapeZsh(_ text: String) -> String {
        var result = ""
        for character in text {
            if "\\[]:".contains(character) { result.append("\\") }
            result.append(character)
        }
        return result
    }

    /// Single-quoted for the shell.
    private static func quoted(_ text: String) -> String {
        "'" + text.replacing("'", with: #"'\''"#) + "'"
    }

    /// Words separated by spaces, each safe inside single quotes (option and command names are).
    private static func words(_ list: [String]) -> String {
        list.joined(separator: " ")
    }
}
