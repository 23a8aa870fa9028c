#!/bin/sh
# tap-exec.sh FILE: run one test file for prove, whatever its kind.
# With SBX_TEST_TAPDIR set (tests/run.sh), its TAP is also kept there,
# with its exit status, for the failure summary at the end of the run.
run() {
	case "$1" in
	*.bats)	exec bats --tap "$1" ;;
	*.sh)	exec bash "$1" ;;
	*)	exec "$1" ;;
	esac
}
if [ -z "${SBX_TEST_TAPDIR:-}" ] || [ ! -d "$SBX_TEST_TAPDIR" ]; then
	run "$1"
fi
log=$SBX_TEST_TAPDIR/${1##*/}
{ (run "$1"); echo "$?" >"$log.rc"; } | tee "$log"
exit "$(cat "$log.rc" 2>/dev/null || echo 1)"
