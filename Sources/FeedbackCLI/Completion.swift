import FeedbackServices

/// The bash and zsh completion scripts of feedbackctl, generated from the commands' declarations:
/// the commands and their abstracts, each command's options (`Subcommand.allOptions`) and
/// arguments, and for each value what its `ValueKind` says to offer.
///
/// System sound IDs and event names come from `SystemSoundCatalog` when the script is generated,
/// as a fixed list: completion has to answer at once, and the catalog changes only with the code,
/// when `scripts/generate-docs` is run again (a test fails until it is).
enum Completion {
    /// The bash completion script of feedbackctl.
    static var bash: String { bash(FeedbackCommand.subcommands) }

    /// The zsh completion function of feedbackctl.
    static var zsh: String { zsh(FeedbackCommand.subcommands) }

    // MARK: bash

    /// The bash completion script for `commands` (for bash-completion's `completions/` directory,
    /// or to `source`).
    static func bash(_ commands: [any Subcommand.Type]) -> String {
        var script = """
            # bash completion for feedbackctl(1), generated from the commands' declarations by
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
                    _feedbackctl_words "$cur" '\(words(commands.map { $0.name } + FeedbackCommand.globalOptions.flatMap(\.names)))'
                    return
                fi

                # The command's options, those that take a value, how many arguments it takes and
                # whether the last one repeats.
                local options= valued= count=0 repeats=
                case $command in

            """
        for command in commands {
            let arguments = command.arguments
            script += "    \(command.name))\n"
            script += "        options='\(words(command.allOptions.flatMap(\.names)))'\n"
            script += "        valued=' \(words(command.allOptions.filter { $0.value != nil }.flatMap(\.names))) '\n"
            script += "        count=\(arguments.count)\n"
            if arguments.last?.repeats == true { script += "        repeats=1\n" }
            script += "        ;;\n"
        }
        script += """
                *) return ;;
                esac

                if [[ $valued == *" $prev "* ]]; then
                    case "$command $prev" in

            """
        for command in commands {
            for option in command.allOptions {
                guard let value = option.value else { continue }
                let action = bashAction([value.kind], commands: commands)
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
            for (index, argument) in command.arguments.enumerated() {
                let action = bashAction(argument.kinds, commands: commands)
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

    private static func bashAction(_ kinds: [ValueKind], commands: [any Subcommand.Type]) -> String {
        kinds.compactMap { kind in
            switch kind {
            case .file: #"_feedbackctl_files "$cur""#
            case .directory: #"_feedbackctl_directories "$cur""#
            case .command: #"_feedbackctl_words "$cur" '\#(words(commands.map { $0.name }))'"#
            case .systemSoundID: #"_feedbackctl_words "$cur" "$_feedbackctl_sound_ids""#
            case .event: #"_feedbackctl_words "$cur" "$_feedbackctl_events""#
            case .oneOf(let list): #"_feedbackctl_words "$cur" '\#(words(list))'"#
            case .number, .text: nil
            }
        }.joined(separator: "; ")
    }

    // MARK: zsh

    /// The zsh completion function for `commands` (`_feedbackctl`, for a directory on `$fpath`, or
    /// to `source`).
    static func zsh(_ commands: [any Subcommand.Type]) -> String {
        var script = """
            #compdef feedbackctl
            # zsh completion for feedbackctl(1), generated from the commands' declarations by
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
        for option in FeedbackCommand.globalOptions { script += "        \(zshOptionSpecs(option, exclusive: true)) \\\n" }
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
            for option in command.allOptions {
                script += "                    \(zshOptionSpecs(option, exclusive: option == CommonOptions.help)) \\\n"
            }
            for (index, argument) in command.arguments.enumerated() {
                let repeats = argument.repeats && index == command.arguments.count - 1
                let position = repeats ? "*" : "\(index + 1)"
                let optional = argument.isOptional && !repeats ? ":" : ""
                script += "                    \(quoted("\(position):\(optional)\(escapeZsh(argument.name)):\(zshAction(argument.kinds))")) \\\n"
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
    private static func zshOptionSpecs(_ option: Option, exclusive: Bool) -> String {
        let description = "[" + escapeZsh(brief(option.description)) + "]"
        let value = option.value.map { ":" + escapeZsh($0.name) + ":" + zshAction([$0.kind]) } ?? ""
        let names = option.names.map { option.value == nil ? $0 : $0 + "=" }
        let exclusion = exclusive ? "(- *)" : names.count > 1 ? "(" + option.names.joined(separator: " ") + ")" : ""
        if names.count == 1 { return quoted(exclusion + names[0] + description + value) }
        return quoted(exclusion) + "{" + names.joined(separator: ",") + "}" + quoted(description + value)
    }

    private static func zshAction(_ kinds: [ValueKind]) -> String {
        let offered = kinds.filter { $0 != .number && $0 != .text }
        if offered.isEmpty { return " " }
        if case .oneOf(let list) = offered.first, offered.count == 1 { return "(" + list.joined(separator: " ") + ")" }
        let names = offered.map { kind in
            switch kind {
            case .file: "files"
            case .directory: "directories"
            case .command: "commands"
            case .systemSoundID: "sound-ids"
            case .event: "events"
            case .oneOf, .number, .text: ""
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
