# shellcheck shell=bash
# Sourced by scripts/test and scripts/demo: sets up the MongoDB-wire server
# the tests and the demo talk to. Safe under `set -euo pipefail`.
#
#   docrel_ensure_venv    create/refresh ./.venv from scripts/requirements.txt
#   docrel_start_server   export MONGODB_URI, starting the embedded
#                         SecantusDB unless MONGODB_URI is already set
#   docrel_watch_server   restart the embedded server if it stops answering
#                         (see there); scripts/test uses it
#
# The embedded server is stopped by an EXIT trap, so the sourcing script must
# not install its own EXIT/INT/TERM traps after calling docrel_start_server.

DOCREL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DOCREL_VENV="$DOCREL_ROOT/.venv"
DOCREL_STATE="$DOCREL_ROOT/.docrel" # git-ignored: logs and scratch files
DOCREL_REQUIREMENTS="$DOCREL_ROOT/scripts/requirements.txt"
DOCREL_SERVER_PID=""
DOCREL_SERVER_PIDFILE=""
DOCREL_WATCHDOG_PID=""

docrel_ensure_venv() {
    local py="$DOCREL_VENV/bin/python"
    # A copy of the requirements taken after the last successful install is
    # the stamp: when it matches, skip pip entirely (fast, works offline).
    local stamp="$DOCREL_VENV/docrel-requirements.txt"

    # A venv breaks when the interpreter it points at is removed or upgraded
    # (e.g. a pyenv version change); rebuild it rather than limp along.
    if [[ -d "$DOCREL_VENV" ]] && ! "$py" -c 'import sys' >/dev/null 2>&1; then
        echo "docrel: $DOCREL_VENV is broken; recreating it" >&2
        rm -rf "$DOCREL_VENV"
    fi
    if [[ ! -x "$py" ]]; then
        echo "docrel: creating $DOCREL_VENV with $(command -v python3)" >&2
        # Remove a half-made venv (e.g. Debian without python3-venv) so the
        # next run starts over instead of finding a venv without pip.
        python3 -m venv "$DOCREL_VENV" || { rm -rf "$DOCREL_VENV"; return 1; }
    fi
    if cmp -s "$DOCREL_REQUIREMENTS" "$stamp" && [[ -x "$DOCREL_VENV/bin/secantusd-py" ]]; then
        return 0
    fi
    echo "docrel: installing scripts/requirements.txt into .venv" >&2
    rm -f "$stamp"
    "$py" -m pip install --quiet --disable-pip-version-check --no-input \
        -r "$DOCREL_REQUIREMENTS" >&2
    cp "$DOCREL_REQUIREMENTS" "$stamp"
}

# Redact the password in a URI before printing it.
_docrel_redact() { sed -E 's#(//[^:/@]*):[^@/]*@#\1:***@#' <<<"$1"; }

docrel_start_server() {
    if [[ -n "${MONGODB_URI:-}" ]]; then
        echo "docrel: using the server in MONGODB_URI: $(_docrel_redact "$MONGODB_URI") (nothing started)"
        return 0
    fi
    docrel_ensure_venv
    mkdir -p "$DOCREL_STATE"
    local py="$DOCREL_VENV/bin/python"

    # Port 0 lets the kernel choose a free port, so parallel runs (and a
    # developer's own mongod on 27017) never collide.
    local port
    port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

    # Per-run names so concurrent runs (scripts/test beside scripts/demo)
    # don't clobber each other; the log is renamed to secantusd.log on exit.
    DOCREL_SERVER_LOG="$DOCREL_STATE/secantusd.$$.log"
    DOCREL_SERVER_TMP="$DOCREL_STATE/tmp.$$"
    mkdir -p "$DOCREL_SERVER_TMP"
    # An explicit (empty) config file turns off secantusd's auto-discovery of
    # ./secantusd.toml and ~/.secantus/secantusd.toml, keeping runs hermetic.
    : >"$DOCREL_STATE/secantusd.toml"

    # Install the traps before starting, so no window leaks a server. INT and
    # TERM become exits so the EXIT trap does the cleanup in every case.
    trap '_docrel_on_exit' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    DOCREL_SERVER_PORT="$port"
    DOCREL_SERVER_PIDFILE="$DOCREL_STATE/secantusd.$$.pid"
    _docrel_launch_server

    # directConnection: talk to this one node, no replica-set discovery. It
    # still reports itself as primary of set "secantus", so the driver keeps
    # transactions and change streams enabled.
    local uri="mongodb://127.0.0.1:$port/?directConnection=true"
    local deadline=$((SECONDS + 60))
    until "$py" - "$uri" <<'EOF' >/dev/null 2>&1
import sys, pymongo
client = pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=1000, connectTimeoutMS=1000)
sys.exit(0 if client.admin.command("hello").get("isWritablePrimary") else 1)
EOF
    do
        if ! kill -0 "$DOCREL_SERVER_PID" 2>/dev/null; then
            _docrel_fail "SecantusDB exited during start-up"
        elif ((SECONDS >= deadline)); then
            _docrel_fail "SecantusDB did not answer hello on port $port within 60 s"
        fi
        sleep 0.2
    done
    export MONGODB_URI="$uri"
    echo "docrel: started embedded SecantusDB (pid $DOCREL_SERVER_PID) at $MONGODB_URI" \
        "(log: ${DOCREL_SERVER_LOG#"$DOCREL_ROOT/"}, kept as .docrel/secantusd.log)"
}

# Starts secantusd on $DOCREL_SERVER_PORT in the background and records its
# PID (in a file too, since the watchdog's subshell may start another).
# SIGUSR1 makes it write every thread's Python stack into its log, which is
# what a server that stopped answering leaves to read; so does a crash.
_docrel_launch_server() {
    # TMPDIR: ":memory:" storage still makes a scratch dir via mkdtemp; keep
    # it under .docrel so even a kill -9 leaves nothing in /tmp.
    TMPDIR="$DOCREL_SERVER_TMP" "$DOCREL_VENV/bin/python" -c '
import faulthandler, signal, sys
faulthandler.enable(all_threads=True)
faulthandler.register(signal.SIGUSR1, all_threads=True)
from secantus.cli import main
sys.argv[0] = "secantusd-py"
sys.exit(main())' \
        --config "$DOCREL_STATE/secantusd.toml" \
        --host 127.0.0.1 --port "$DOCREL_SERVER_PORT" \
        --storage-path :memory: --enable-test-commands \
        </dev/null >>"$DOCREL_SERVER_LOG" 2>&1 &
    DOCREL_SERVER_PID=$!
    echo "$DOCREL_SERVER_PID" >"$DOCREL_SERVER_PIDFILE"
}

# The embedded server is one Python process on locks of its own; once (in
# 50 CI runs) it stopped answering every command, and the suite waited for
# it until CI's limit. A write to a database of its own every 30 s shows it
# alive; two that get no answer within 120 s each mean it is stuck. Then its
# threads' stacks go to .docrel/secantusd.stuck.log, it is killed and started
# again empty on the same port, and the file named by $1 is created, so the
# caller can run again the tests that were talking to it. Without an
# embedded server (MONGODB_URI given) this does nothing.
docrel_watch_server() {
    local marker="$1"
    [[ -n "$DOCREL_SERVER_PID" ]] || return 0
    (
        trap - EXIT INT TERM
        set +e
        misses=0
        while sleep "${DOCREL_WATCH_EVERY:-30}"; do
            pid="$(cat "$DOCREL_SERVER_PIDFILE" 2>/dev/null)" || exit 0
            kill -0 "$pid" 2>/dev/null || exit 0
            if timeout "${DOCREL_WATCH_WAIT:-120}" "$DOCREL_VENV/bin/python" - "$MONGODB_URI" \
                >/dev/null 2>&1 <<'EOF'; then
import sys, pymongo
c = pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
c.docrel_watchdog.probe.replace_one({"_id": 1}, {"_id": 1}, upsert=True)
EOF
                misses=0
                continue
            fi
            misses=$((misses + 1))
            ((misses >= 2)) || continue
            kill -USR1 "$pid" 2>/dev/null
            sleep 2
            cp "$DOCREL_SERVER_LOG" "$DOCREL_STATE/secantusd.stuck.log"
            echo "docrel: the embedded SecantusDB (pid $pid) answered no write twice in a row;" \
                "its threads' stacks are in .docrel/secantusd.stuck.log. Starting it again" \
                "on port $DOCREL_SERVER_PORT; the tests talking to it fail." >&2
            kill -KILL "$pid" 2>/dev/null
            sleep 1 # the port is free once the process is gone
            : >"$marker"
            _docrel_launch_server
            misses=0
        done
    ) &
    DOCREL_WATCHDOG_PID=$!
}

_docrel_fail() {
    {
        echo "docrel: error: $1. Last lines of its log (kept as .docrel/secantusd.log):"
        tail -n 30 "$DOCREL_SERVER_LOG" | sed 's/^/    /'
    } >&2
    exit 1
}

_docrel_on_exit() {
    local rc=$?
    trap '' INT TERM # a second Ctrl-C must not abort the cleanup half-way
    _docrel_stop_server
    exit "$rc"
}

# Stops the server by its own PID: TERM lets it shut down cleanly (and drop
# its scratch dir), KILL after ~10 s. secantusd-py is a single process (it
# only uses threads), so there are no children to reap.
_docrel_stop_server() {
    if [[ -n "$DOCREL_WATCHDOG_PID" ]]; then
        kill "$DOCREL_WATCHDOG_PID" 2>/dev/null || true
        wait "$DOCREL_WATCHDOG_PID" 2>/dev/null || true
    fi
    [[ -n "$DOCREL_SERVER_PID" ]] || return 0
    # The watchdog may have started the server again under another PID.
    local pid
    pid="$(cat "$DOCREL_SERVER_PIDFILE" 2>/dev/null || echo "$DOCREL_SERVER_PID")"
    DOCREL_SERVER_PID=""
    if kill -TERM "$pid" 2>/dev/null; then
        local i
        for ((i = 0; i < 100; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "docrel: SecantusDB (pid $pid) ignored SIGTERM for 10 s; killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    wait "$pid" 2>/dev/null || true
    rm -rf "$DOCREL_SERVER_TMP" "$DOCREL_SERVER_PIDFILE"
    mv -f "$DOCREL_SERVER_LOG" "$DOCREL_STATE/secantusd.log" 2>/dev/null || true
}
