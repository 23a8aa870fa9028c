#!/bin/bash
# 0681-srt-settings.sh: srt's settings files as sbx policies (issue 35),
# data-driven: each tests/integration/srt-settings/NAME.json is run through
# `sbx srt --explain --json -s NAME.json` and NAME.expect says what must
# come out: `ok JQ` (a jq filter over the result that prints true; $d is
# the current directory, $h the home) or `refuse FIELD REASON` (REASON *:
# any).  The cases include srt's own config-validation examples, ported as
# data.  --explain writes nothing: the state root is never created.
#
# Environment: SBX_TEST_BUILD or B, the build directory (default "build").
# sbx-test: unprivileged
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${SBX_TEST_BUILD:-${B:-build}}
B=$(cd "$B" 2>/dev/null && pwd) || { echo "1..0 # SKIP not built"; exit 0; }
CASES=$(pwd)/tests/integration/srt-settings
export SBX_EXEC_PATH=$B/libexec/sbx
unset SBX_JSON SBX_AGENT

n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() {
	n=$((n + 1))
	fails=$((fails + 1))
	echo "not ok $n - $1"
	shift
	for l in "$@"; do printf '#   %s\n' "$l"; done
}

command -v jq >/dev/null 2>&1 || { echo "1..0 # SKIP jq is not installed"; exit 0; }
[ -x "$B/libexec/sbx/sbx-srt" ] || { echo "1..0 # SKIP not built: make B=$B"; exit 0; }

T=$(mktemp -d "${SBX_TEST_TMPDIR:-/tmp}/srt-settings.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
export HOME=$T/home SBX_HOME=$T/state
mkdir -p "$HOME/.ssh" "$HOME/.aws" "$HOME/notes" "$T/proj/a/sub" \
    "$T/proj/w/sub" "$T/proj/star*name"
: > "$T/proj/w/existing"
cd "$T/proj" || exit 1
d=$(pwd)

for f in "$CASES"/*.json; do
	name=$(basename "$f" .json)
	read -r what a b < "$CASES/$name.expect"
	out=$("$B/bin/sbx" srt --explain --json -s "$f" 2>"$T/err")
	st=$?
	case $what in
	ok)
		got=$(printf '%s' "$out" | jq -r --arg d "$d" --arg h "$HOME" \
		    ".ok and (.result | $a $b)" 2>&1)
		if [ "$st" -eq 0 ] && [ "$got" = true ]; then
			ok "$name: mapped"
		else
			notok "$name: mapped" "status $st, filter: $got" "$out" \
			    "$(cat "$T/err")"
		fi ;;
	refuse)
		field=$(printf '%s' "$out" | jq -r .field 2>/dev/null)
		reason=$(printf '%s' "$out" | jq -r .reason 2>/dev/null)
		if [ "$st" -ne 0 ] && [ "$field" = "$a" ] &&
		    { [ "$b" = "*" ] || [ "$reason" = "$b" ]; } &&
		    [ "$(printf '%s' "$out" | jq -r .ok)" = false ]; then
			ok "$name: refused ($a, $reason)"
		else
			notok "$name: refused ($a $b)" "status $st: $out"
		fi ;;
	*) notok "$name: bad expectation file" ;;
	esac
done

# A refusal in text mode names the key on stderr and exits 125 (sbx's own
# failure: the command did not run).
"$B/bin/sbx" srt -s "$CASES/credentials.json" -- true 2>"$T/err"
st=$?
# shellcheck disable=SC2016 # a literal backquote
if [ "$st" -eq 125 ] && grep -q 'srt setting `credentials` is not supported' \
    "$T/err"; then
	ok "a refused key: status 125, the key named on stderr"
else
	notok "a refused key: status 125, the key named on stderr" \
	    "status $st" "$(cat "$T/err")"
fi

# The agent is named by the policy: the same file twice, the same agent;
# another policy, another agent.
a1=$("$B/bin/sbx" srt --explain --json -s "$CASES/minimal.json" | jq -r .result.agent)
a2=$("$B/bin/sbx" srt --explain --json -s "$CASES/minimal.json" | jq -r .result.agent)
a3=$("$B/bin/sbx" srt --explain --json -s "$CASES/valid-domains.json" | jq -r .result.agent)
if [[ $a1 =~ ^srt-[0-9a-f]{16}$ ]] && [ "$a1" = "$a2" ] && [ "$a1" != "$a3" ]; then
	ok "agents by digest: $a1, $a3"
else
	notok "agents by digest" "$a1 $a2 $a3"
fi

# No settings file: srt's defaults (no network); a named file that is not
# there is an error.
out=$("$B/bin/sbx" srt --explain --json)
if [ "$(printf '%s' "$out" | jq -r .result.network)" = none ]; then
	ok "no ~/.srt-settings.json: no network"
else
	notok "no ~/.srt-settings.json: no network" "$out"
fi
printf '%s\n' '{"network":{"allowedDomains":["example.com"]}}' > "$HOME/.srt-settings.json"
out=$("$B/bin/sbx" srt --explain --json)
if [ "$(printf '%s' "$out" | jq -c .result.agent_settings.allowed_domains)" = '["example.com"]' ]; then
	ok "\$HOME/.srt-settings.json is the default"
else
	notok "\$HOME/.srt-settings.json is the default" "$out"
fi
out=$("$B/bin/sbx" srt --explain --json -s "$T/nothere.json")
st=$?
if [ "$st" -ne 0 ] && [ "$(printf '%s' "$out" | jq -r .kind)" = not_found ]; then
	ok "--settings naming a missing file: not_found"
else
	notok "--settings naming a missing file: not_found" "status $st: $out"
fi

# The text form: the agent, its settings and the sbx exec line.
out=$("$B/bin/sbx" srt --explain -s "$CASES/deny-write-beats.json" -- make test)
if printf '%s\n' "$out" | grep -q '^equivalent: sbx exec --agent srt-[0-9a-f]* --host-view --network none --workdir .*/proj/w --cwd .* -- bash -c '"'"'make test'"'"'$' &&
    printf '%s\n' "$out" | grep -q '^note: denyWrite .*w/missing: protected as missing'; then
	ok "--explain text: the equivalent sbx exec line and the notes"
else
	notok "--explain text" "$out"
fi

# Options stop at the command: its own options are its own (srt's parser
# would take `-s` after the command for its settings).
out=$("$B/bin/sbx" srt --explain --json -s "$CASES/minimal.json" echo -s x -la)
if [ "$(printf '%s' "$out" | jq -r '.result.exec_args[-1]')" = 'echo -s x -la' ]; then
	ok "options stop at the command"
else
	notok "options stop at the command" "$out"
fi

# --explain never creates the state root.
if [ ! -e "$SBX_HOME" ]; then
	ok "--explain wrote nothing"
else
	notok "--explain wrote nothing" "$(ls -la "$SBX_HOME")"
fi

# Usage errors: -c with a command after it, no command at all.
"$B/bin/sbx" srt -c 'echo hi' extra 2>/dev/null
st1=$?
"$B/bin/sbx" srt 2>/dev/null
st2=$?
if [ "$st1" -eq 64 ] && [ "$st2" -eq 64 ]; then
	ok "usage errors exit 64"
else
	notok "usage errors exit 64" "$st1 $st2"
fi

echo "1..$n"
[ "$fails" -eq 0 ]
