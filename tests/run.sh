#!/bin/sh
# run.sh: the test suite behind `make check`.
#
# 1. unit tests and integration tests as the invoking user (root in CI);
# 2. when root, the integration tests marked `# sbx-test: unprivileged`
#    once more as the unprivileged user nobody, from a world-readable copy
#    of the build (the checkout itself may not be readable by nobody).
set -u
cd "$(dirname "$0")/.." || exit 70
B=${B:-build}
SBX_TEST_BUILD=$(cd "$B" && pwd) || exit 70
export SBX_TEST_BUILD
PROVE_FLAGS=${PROVE_FLAGS:-}

# Count cgroups and leftover sandboxes before, compare after.
count_state() {
	printf '%s procs, %s cgroups' \
	    "$(pgrep -c -f 'sbx-init|bwrap' 2>/dev/null || true)" \
	    "$(find /sys/fs/cgroup -maxdepth 6 -type d -name 'sbx-*' 2>/dev/null | wc -l)"
}
before=$(count_state)

rc=0
units=""
for f in "$SBX_TEST_BUILD"/tests/unit/t-*; do
	[ -e "$f" ] && units="$units $f"
done
files=""
for f in tests/integration/*.bats tests/integration/*.sh; do
	[ -e "$f" ] && files="$files $f"
done
# shellcheck disable=SC2086
prove $PROVE_FLAGS --exec "sh tests/tap-exec.sh" $units || rc=1
# A sanitizer build: leak checks belong to the unit tests; the programs
# end through exit() with their state still allocated on purpose.
case "$SBX_TEST_BUILD" in
*-san) export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" ;;
esac
# shellcheck disable=SC2086
prove $PROVE_FLAGS --exec "sh tests/tap-exec.sh" $files || rc=1

if [ "$(id -u)" -eq 0 ]; then
	if command -v setpriv >/dev/null 2>&1; then
		stage=$(mktemp -d /tmp/sbx-unpriv.XXXXXX)
		trap 'rm -rf "$stage"' EXIT INT TERM
		chmod 0755 "$stage"
		mkdir -p "$stage/build" "$stage/home"
		cp -a "$SBX_TEST_BUILD/bin" "$SBX_TEST_BUILD/libexec" \
		    "$stage/build/"
		[ -d "$SBX_TEST_BUILD/tests" ] &&
		    cp -a "$SBX_TEST_BUILD/tests" "$stage/build/"
		cp -a tests "$stage/tests"
		chmod -R a+rX "$stage"
		chown 65534:65534 "$stage/home"
		files=$(grep -l '^# sbx-test: unprivileged' tests/integration/*.bats \
		    tests/integration/*.sh 2>/dev/null | sed 's|^|tests/|; s|tests/tests/|tests/|')
		echo "# unprivileged run (uid 65534):"
		# shellcheck disable=SC2086
		(cd "$stage" && setpriv --reuid=65534 --regid=65534 \
		    --clear-groups env -i PATH=/usr/local/bin:/usr/bin:/bin \
		    HOME="$stage/home" SBX_TEST_BUILD="$stage/build" \
		    SBX_TEST_UNPRIV=1 ASAN_OPTIONS="${ASAN_OPTIONS:-}" prove $PROVE_FLAGS \
		    --exec "sh tests/tap-exec.sh" $files) || rc=1
	else
		echo "# skip: unprivileged run: setpriv is not installed"
	fi
else
	echo "# skip: unprivileged run: already unprivileged (uid $(id -u))"
fi

after=$(count_state)
if [ "$before" != "$after" ]; then
	echo "# leftover sandbox processes: before=$before after=$after"
	pgrep -a -f 'sbx-init|bwrap' || true
	rc=1
fi
exit $rc
