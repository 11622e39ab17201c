# bash completion for herald, the Herald shell utility.
# Install: cp herald.bash ~/.local/share/bash-completion/completions/herald
#      or: source it from ~/.bashrc.
# Names complete from `herald names` (names with a retained value or a subscriber); when the
# daemon is not running, or the herald in PATH has no `names`, nothing is offered, quietly.

_herald_names() {
    # $1: the --socket given on the command line, if any. A pattern a plugin provides comes with a tab and
    # who provides it: only the first field is a candidate.
    if [[ -n $1 ]]; then
        herald names --socket "$1" 2>/dev/null | cut -f1
    else
        herald names 2>/dev/null | cut -f1
    fi
}

_herald() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    local prev=
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    local subcommands="post observe wait get status monitor names plugins dashboard demo help"
    local common="-s --socket -h --help"

    # Find the subcommand, the socket given, and how many positionals precede the cursor.
    local subcommand= socket= positionals=0 i word
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        case $word in
        -s | --socket)
            socket=${COMP_WORDS[i + 1]}
            ((i++))
            ;;
        --socket=*) socket=${word#--socket=} ;;
        --json | --count | --timeout | --overflow | --will | --will-json | --will-delay | --port | --posts)
            # These take a value, except --json outside post.
            if [[ $word != --json || $subcommand == post ]]; then ((i++)); fi
            ;;
        -*) ;;
        *)
            if [[ -z $subcommand ]]; then subcommand=$word; else ((positionals++)); fi
            ;;
        esac
    done

    case $prev in
    -s | --socket)
        COMPREPLY=($(compgen -f -- "$cur"))
        return
        ;;
    --overflow)
        COMPREPLY=($(compgen -W "drop-oldest coalesce disconnect" -- "$cur"))
        return
        ;;
    --will)
        COMPREPLY=($(compgen -W "$(_herald_names "$socket")" -- "$cur"))
        return
        ;;
    --count | --timeout | --will-json | --will-delay | --port | --posts)
        return
        ;;
    --json)
        [[ $subcommand == post ]] && return
        ;;
    esac

    if [[ -z $subcommand ]]; then
        COMPREPLY=($(compgen -W "$subcommands $common" -- "$cur"))
        return
    fi

    local options=
    case $subcommand in
    post) options="--json --retain" ;;
    observe) options="--json --count --timeout --ready --overflow --reconnect --will --will-json --will-retain --will-delay" ;;
    wait) options="--timeout" ;;
    get | status | monitor | names | plugins) options="--json" ;;
    dashboard) options="--port --posts" ;;
    esac

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$options $common" -- "$cur"))
        return
    fi
    case $subcommand in
    post | wait | get)
        ((positionals == 0)) && COMPREPLY=($(compgen -W "$(_herald_names "$socket")" -- "$cur"))
        ;;
    observe)
        COMPREPLY=($(compgen -W "$(_herald_names "$socket")" -- "$cur"))
        ;;
    plugins)
        ((positionals == 0)) && COMPREPLY=($(compgen -W "start stop restart reload" -- "$cur"))
        ;;
    help)
        ((positionals == 0)) && COMPREPLY=($(compgen -W "$subcommands" -- "$cur"))
        ;;
    esac
}

complete -F _herald herald
