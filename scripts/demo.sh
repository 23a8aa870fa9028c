#!/bin/sh
# demo.sh: `make demo` — run one command in the default agent's sandbox on
# the host root file system with the network off, and show what it sees.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
export SBX_EXEC_PATH="$PWD/$B/libexec/sbx"
if [ -z "${SBX_HOME:-}" ]; then
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/sbx-demo.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT INT TERM
	# mktemp makes the directory 0700.  As root the sandbox runs as an
	# unprivileged uid, and bwrap resolves the state root's paths as that
	# uid: the directory on the way must be searchable (not readable).
	chmod 0711 "$tmp"
	SBX_HOME="$tmp/state"
fi
export SBX_HOME
SBX="$PWD/$B/bin/sbx"

# shellcheck disable=SC2016 # expanded inside the sandbox, not here
probe='echo "user: $(id -un) (uid $(id -u))"; echo "home: $HOME"
echo "processes visible: $(ls /proc | grep -c "^[0-9]")"
echo "network interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | tr "\n" " ")"
if (: > /etc/sbx-demo) 2>/dev/null; then echo "wrote /etc: YES"; else echo "write to /etc: refused"; fi
if [ -e /root ] || [ -e "'"$HOME"'" ]; then echo "host home: VISIBLE"; else echo "host home: not visible"; fi'

echo "== sbx exec (state root $SBX_HOME, agent default, network none)"
"$SBX" exec -c "$probe"
echo
echo "== the same run as a JSON envelope (sbx exec --json)"
# shellcheck disable=SC2016
"$SBX" exec --json -c 'echo hello from $(hostname); ls /'
