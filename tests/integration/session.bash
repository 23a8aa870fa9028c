# session.bash: shared set-up of the warm-session tests (0125-0128),
# loaded after lib (its setup and teardown replace lib's): a state root
# per test, a unique sleep duration $D (and $E) by which a test finds its
# own processes on the host, never by a broad name; teardown stops every
# session of the test and kills what is left of its processes.

session_setup() {
	sbx_setup
	D=$(((RANDOM << 15 | RANDOM) % 899999 + 100000))
	D="9$D"
	E=$((D + 1))
}

session_teardown() {
	local n p
	if [ -d "$SBX_HOME/run" ]; then
		for n in $("$SBX" session ls --json 2>/dev/null |
		    jq -r '.result.sessions[]? | .name'); do
			"$SBX" session stop "$n" >/dev/null 2>&1
		done
	fi
	"$SBX" proxy stop >/dev/null 2>&1 || true
	for p in $(pgrep -f "sleep ($D|$E)" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null
	done
	sbx_teardown
}

setup() { session_setup; }
teardown() { session_teardown; }
