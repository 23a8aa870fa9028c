# lib.bash: shared set-up for the bats integration tests (`load lib`).
#
# Every test gets its own state root and fake HOME under a fresh temp dir,
# removed in teardown even when the test fails.

: "${SBX_TEST_BUILD:=$(cd "$BATS_TEST_DIRNAME/../../build" && pwd)}"
export SBX_EXEC_PATH="$SBX_TEST_BUILD/libexec/sbx"
SBX="$SBX_TEST_BUILD/bin/sbx"
HELPERS="$SBX_TEST_BUILD/tests/helpers"
unset SBX_AGENT SBX_JSON SBX_BWRAP
# As root, `sbx provision` creates the system user sbx when there is none:
# never on the machine that runs the tests (a user left behind would change
# every later root test).  The tests of that path run it in a private mount
# namespace over a copy of /etc (0400-provision.bats).
export SBX_NO_CREATE_USER=1

sbx_setup() {
	TEST_ROOT=$(mktemp -d "${SBX_TEST_TMPDIR:-/tmp}/sbx-test.XXXXXX")
	chmod 0755 "$TEST_ROOT"
	export SBX_HOME="$TEST_ROOT/state"
	export HOME="$TEST_ROOT/home"
	# Per-agent uids keep a host-wide registry (/var/lib/sbx-identities
	# as root): a test's own, so that no test writes the host's.
	export SBX_IDENTITY_REGISTRY="$TEST_ROOT/identities"
	mkdir -p "$HOME"
	WS="$SBX_HOME/workspace/agents/default"
}

sbx_teardown() {
	# A test that killed sbx with SIGKILL leaves its run's cgroup: reap
	# it (gc removes only cgroups whose sbx process is gone).
	"$SBX" exec gc >/dev/null 2>&1
	# Make everything removable (tests chmod 000 things on purpose).
	[ -n "${TEST_ROOT:-}" ] && chmod -R u+rwX "$TEST_ROOT" 2>/dev/null
	[ -n "${TEST_ROOT:-}" ] && rm -rf "$TEST_ROOT"
	return 0
}

setup() { sbx_setup; }
teardown() { sbx_teardown; }

sbx() { "$SBX" "$@"; }

# jq: jq 1.6 spends ~40 ms of CPU starting, and the suite runs it many
# thousands of times (once over half of its CPU time).  The plain paths
# (`jq -r .result.kind`) go to tests/helpers/jget, which prints what jq
# prints and hands everything else to jq, unchanged (0001-jget.sh checks
# both).  Test files load this, so their every jq goes through it.
if [ -x "$HELPERS/jget" ]; then
	jq() { "$HELPERS/jget" "$@"; }
fi

# json_get JSON JQ-FILTER: print the value (raw) of a jq filter.
json_get() { printf '%s' "$1" | jq -r "$2"; }

# A python3 that exists inside the sandbox (the host's /usr is visible).
PY=/usr/bin/python3

is_root() { [ "$(id -u)" -eq 0 ]; }

# The uid a sandbox runs as: as root the sbx system user when it exists
# (provision creates it on a real machine), else nobody; otherwise us.
sandbox_uid() {
	local u
	if is_root; then
		u=$(getent passwd sbx | cut -d: -f3)
		printf '%s\n' "${u:-65534}"
	else
		id -u
	fi
}

# status_is_kind: $status is what the one exit table (sbx_exit_for,
# sbx(7) EXIT STATUS) gives the failure envelope in $output.
status_is_kind() {
	local k want
	k=$(printf '%s\n' "$output" | grep '^{' | tail -n 1)
	# jq -r 'if .reason == "config_invalid" then .reason else .kind end',
	# in two plain paths (the jq fast path answers those).
	if [ "$(json_get "$k" .reason)" = config_invalid ]; then
		k=config_invalid
	else
		k=$(json_get "$k" .kind)
	fi
	case $k in
	config_invalid) want=78 ;; invalid_args) want=65 ;; rejected) want=77 ;;
	unavailable) want=69 ;; timeout) want=75 ;; execution_error) want=71 ;;
	not_found | user_denied) want=1 ;; *) want=70 ;;
	esac
	[ "$status" -eq "$want" ] || { echo "status $status, kind $k: want $want"; return 1; }
}
