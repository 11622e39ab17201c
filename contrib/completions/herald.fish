# fish completion for herald, the Herald shell utility.
# Install: cp herald.fish ~/.config/fish/completions/herald.fish
# Names complete from `herald names`; when that fails nothing is offered.

function __herald_names
    command -q herald; or return 0
    set -l tokens (commandline -opc)
    set -l socket
    for i in (seq (count $tokens))
        if contains -- $tokens[$i] -s --socket; and test $i -lt (count $tokens)
            set socket --socket $tokens[(math $i + 1)]
        end
    end
    herald names $socket 2>/dev/null
end

set -l __herald_subcommands post observe wait get status monitor names plugins dashboard demo help

complete -c herald -f
complete -c herald -s s -l socket -r -F -d 'The daemon socket'
complete -c herald -s h -l help -d 'Show help'

complete -c herald -n "not __fish_seen_subcommand_from $__herald_subcommands" -a post -d 'Post a notification'
complete -c herald -n "not __fish_seen_subcommand_from $__herald_subcommands" -a observe -d 'Print notifications as they arrive'
complete -c herald -n "not __fish_seen_subcommand_from $__herald_subcommands" -a wait -d 'Wait for the next post to a name'
complete -c herald -n "not __fish_seen_subcommand_from $__herald_subcommands" -a get -d "Print a name's retained value"
complete -c herald -n "not __fish_seen_subcommand_from $__herald_subcommands" -a status -d "Print the daemon's counters"
complete -c herald -n "not __fish_seen_subcommand_from $__herald_subcommands" -a monitor -d 'Print every notification'
complete -c herald -n "not __fish_seen_subcommand_from $__herald_subcommands" -a names -d 'List known names'
complete -c herald -n "not __fish_seen_subcommand_from $__herald_subcommands" -a plugins -d "List or control heraldd's plugins"
complete -c herald -n "not __fish_seen_subcommand_from $__herald_subcommands" -a dashboard -d 'Serve a live web view of the session'
complete -c herald -n "not __fish_seen_subcommand_from $__herald_subcommands" -a demo -d 'Run the chat demo'
complete -c herald -n "not __fish_seen_subcommand_from $__herald_subcommands" -a help -d 'Show help'

complete -c herald -n '__fish_seen_subcommand_from post wait get observe' -a '(__herald_names)'
complete -c herald -n '__fish_seen_subcommand_from help' -a "$__herald_subcommands"

complete -c herald -n '__fish_seen_subcommand_from post' -l json -x -d 'The payload as a JSON object'
complete -c herald -n '__fish_seen_subcommand_from post' -l retain -d 'Also retain the payload'

complete -c herald -n '__fish_seen_subcommand_from observe' -l json -d 'One JSON object per line'
complete -c herald -n '__fish_seen_subcommand_from observe' -l count -x -d 'Exit after n notifications'
complete -c herald -n '__fish_seen_subcommand_from observe wait' -l timeout -x -d 'Exit 124 when nothing arrives in time'
complete -c herald -n '__fish_seen_subcommand_from observe' -l ready -d 'Say ready on stderr once subscribed'
complete -c herald -n '__fish_seen_subcommand_from observe' -l overflow -x -a 'drop-oldest coalesce disconnect' -d 'What the daemon does for a slow reader'
complete -c herald -n '__fish_seen_subcommand_from observe' -l reconnect -d 'Reconnect when the daemon goes away'
complete -c herald -n '__fish_seen_subcommand_from observe' -l will -x -a '(__herald_names)' -d 'Post this name when the connection ends'
complete -c herald -n '__fish_seen_subcommand_from observe' -l will-json -x -d 'The will payload'
complete -c herald -n '__fish_seen_subcommand_from observe' -l will-retain -d 'Retain the will payload'
complete -c herald -n '__fish_seen_subcommand_from observe' -l will-delay -x -d 'Post the will after this delay'

complete -c herald -n '__fish_seen_subcommand_from get status monitor names plugins' -l json -d 'Print JSON'
complete -c herald -n '__fish_seen_subcommand_from plugins' -a 'start stop restart reload' -d 'Plugin action'
complete -c herald -n '__fish_seen_subcommand_from dashboard' -l port -x -d 'The port on 127.0.0.1'
complete -c herald -n '__fish_seen_subcommand_from dashboard' -l posts -x -d 'How many last posts the page lists'
