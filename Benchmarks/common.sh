# common.sh - what compare.sh and mqtt-bridge.sh share: installing their measuring tools, and stopping every
# process they started. Sourced by them after they define log() and TMP (a 0700 directory removed on exit);
# WAIT_TRIES (default 200) bounds wait_for at WAIT_TRIES x 50 ms.

# apt_install PACKAGE...: the measuring tools, from Debian's packages, with no service autostart (policy-rc.d);
# never part of the product.
apt_install() {
    log "installing the measuring tools (apt-get)"
    local rcd=/usr/sbin/policy-rc.d made=0
    if [ ! -e $rcd ]; then printf '#!/bin/sh\nexit 101\n' > $rcd && chmod +x $rcd && made=1; fi # no service autostart
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
    local rc=$?
    [ $made = 1 ] && rm -f $rcd
    return $rc
}

PIDS=() # every process the script started and still runs
stop() { local p; for p in "$@"; do kill "$p" 2>/dev/null; done; for p in "$@"; do wait "$p" 2>/dev/null; done; }
cleanup() { stop "${PIDS[@]}"; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
forget() { local keep=() p q; for p in "${PIDS[@]}"; do for q in "$@"; do [ "$p" = "$q" ] && continue 2; done; keep+=("$p"); done; PIDS=("${keep[@]}"); }
wait_for() { local i; for i in $(seq "${WAIT_TRIES:-200}"); do eval "$1" >/dev/null 2>&1 && return 0; sleep 0.05; done; return 1; }
