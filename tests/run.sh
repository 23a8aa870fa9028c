#!/bin/sh
# run.sh: the test suite behind `make check`.
#
# 1. unit tests, then integration tests as the invoking user (root in CI);
# 2. when root, the integration tests marked `# sbx-test: unprivileged`
#    once more as the unprivileged user nobody, from a world-readable copy
#    of the build (the checkout itself may not be readable by nobody).
#    The two integration passes run at the same time (the tests wait on
#    sockets, daemons and sleeps much of the time: measured, together
#    they take much less than one after the other on two CPUs); the
#    second's output is kept in a file and printed after the first's.
# Each pass starts its slowest files first (tests/durations), so that no
# long file starts last and runs on its own.
# A sanitizer build (B=build-san): ASan's and UBSan's reports go to files
# under the run's directory (log_path), and any report fails the run.
#
# Environment:
#   B                build directory (default build)
#   PROVE_JOBS       parallel test files per pass (default: the number of
#                    CPUs)
#   PROVE_FLAGS      more flags for prove (e.g. --timer)
#   SBX_TEST_ONLY    space-separated patterns; run only the test files whose
#                    name matches one (e.g. "0130 t-seccomp")
#   SBX_TEST_SERIAL  1: run the unprivileged pass after the first one
#
# At the very end, after prove's own summaries, the files that failed are
# named, each with its first failing assertion and the diagnostics under
# it (tests/tap-exec.sh keeps each file's TAP): prove's summary gives only
# numbers, and a CI log should say what broke.
#
# The leftover check at the end looks only at what this run started: every
# test's temp dir lives under one run directory and every process of the
# run carries SBX_TEST_RUN in its environment, so sandboxes or cgroups
# that other work on the machine owns never turn the run red.
set -u
cd "$(dirname "$0")/.." || exit 70
B=${B:-build}
SBX_TEST_BUILD=$(cd "$B" && pwd) || exit 70
export SBX_TEST_BUILD
PROVE_JOBS=${PROVE_JOBS:-$(nproc 2>/dev/null || echo 2)}
PROVE_FLAGS=${PROVE_FLAGS:-}
SBX_TEST_ONLY=${SBX_TEST_ONLY:-}
SBX_TEST_SERIAL=${SBX_TEST_SERIAL:-}

SBX_TEST_TMPDIR=$(mktemp -d /tmp/sbx-run.XXXXXX) || exit 70
# World-writable and sticky, as /tmp: the unprivileged pass makes its test
# roots here too.
chmod 1777 "$SBX_TEST_TMPDIR"
SBX_TEST_RUN=${SBX_TEST_TMPDIR##*/}
export SBX_TEST_TMPDIR SBX_TEST_RUN
stage=""
# Each file's TAP and exit status, one directory per pass.
tapdir=$SBX_TEST_TMPDIR/.tap
mkdir -p "$tapdir/root" "$tapdir/unpriv"
[ "$(id -u)" -eq 0 ] && chown 65534:65534 "$tapdir/unpriv"
SBX_TEST_TAPDIR=$tapdir/root
export SBX_TEST_TAPDIR
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	[ -n "$stage" ] && rm -rf "$stage"
	rm -rf "$SBX_TEST_TMPDIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ours PID: does the process belong to this run?  Its environment carries
# the run's token, or its command line names the run's directory.
ours() {
	{ tr '\0' '\n' <"/proc/$1/environ"; } 2>/dev/null |
	    grep -qx "SBX_TEST_RUN=$SBX_TEST_RUN" && return 0
	{ tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null |
	    grep -qF "$SBX_TEST_TMPDIR" && return 0
	return 1
}

# Sandboxes and sbx daemons of this run still alive.
our_procs() {
	for p in $(pgrep -f 'sbx-init|bwrap|sbx-proxy|sbx-exec|libexec/sbx' \
	    2>/dev/null); do
		[ "$p" = "$$" ] && continue
		ours "$p" && printf '%s ' "$p"
	done
}

# sbx run cgroups are named sbx-<pid>-...; they are made below the cgroup
# of the process that runs sbx, so this run's are below ours.  Count those
# that did not exist before the run.
cg_list() {
	find /sys/fs/cgroup -maxdepth 8 -type d -name 'sbx-*' 2>/dev/null | sort
}
cg_before=$(cg_list)
# No test may create (or change, or remove) the sbx system user that root's
# provision makes on a real machine: it would change the uid of every later
# root sandbox.  Compared before and after: a machine where sbx was used as
# root has one before the run, and that is no failure of the run.
user_before=$(getent passwd sbx 2>/dev/null)
# Nor may a test write the host's registry of per-agent ids (the tests
# use one of their own, SBX_IDENTITY_REGISTRY).
registry_sum() { cksum /var/lib/sbx-identities 2>/dev/null || echo none; }
registry_before=$(registry_sum)

wanted() {
	[ -z "$SBX_TEST_ONLY" ] && return 0
	for pat in $SBX_TEST_ONLY; do
		case "${1##*/}" in *"$pat"*) return 0 ;; esac
	done
	return 1
}

# slowest_first COLUMN FILE...: the files slowest first by their expected
# seconds in column COLUMN of tests/durations (2: as root, 3: as uid
# 65534); files it does not list come first.
slowest_first() {
	col=$1
	shift
	for f in "$@"; do
		t=$(awk -v n="${f##*/}" -v c="$col" '$1 == n { print $c; exit }' \
		    tests/durations 2>/dev/null)
		printf '%s %s\n' "${t:-999999}" "$f"
	done | sort -k1,1nr -k2,2 | cut -d' ' -f2
}

rc=0
# A sanitizer build: every report of ASan and UBSan goes to a file of its
# own under the run's directory (log_path: <prefix>.<pid>), not to stderr,
# where the integration tests compare what sbx prints and a report would
# turn a good run red for the wrong reason, or a recoverable UBSan report
# would pass unseen.  Any report written fails the run (below), printed.
sanlog=""
case "$SBX_TEST_BUILD" in
*-san)
	sanlog="$SBX_TEST_TMPDIR/sanitizer"
	mkdir -p "$sanlog"
	# The unprivileged pass writes its reports here too.
	chmod 1777 "$sanlog"
	export ASAN_OPTIONS="log_path=$sanlog/report${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
	export UBSAN_OPTIONS="print_stacktrace=1:log_path=$sanlog/report${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
	;;
esac
units=""
for f in "$SBX_TEST_BUILD"/tests/unit/t-*; do
	[ -e "$f" ] && wanted "$f" && units="$units $f"
done
files=""
for f in tests/integration/*.bats tests/integration/*.sh; do
	[ -e "$f" ] && wanted "$f" && files="$files $f"
done
if [ -n "$units" ]; then
	# shellcheck disable=SC2086
	prove -j"$PROVE_JOBS" $PROVE_FLAGS --exec "sh tests/tap-exec.sh" \
	    $units || rc=1
fi
# A sanitizer build: leak checks belong to the unit tests; the programs
# end through exit() with their state still allocated on purpose.
case "$SBX_TEST_BUILD" in
*-san) export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" ;;
esac
# The unprivileged pass: its stage and its file list first, so that it
# can start with the first pass.
ufiles=""
if [ -n "$files" ] && [ "$(id -u)" -eq 0 ]; then
	if command -v setpriv >/dev/null 2>&1; then
		stage=$(mktemp -d /tmp/sbx-unpriv.XXXXXX)
		chmod 0755 "$stage"
		mkdir -p "$stage/build" "$stage/home"
		cp -a "$SBX_TEST_BUILD/bin" "$SBX_TEST_BUILD/libexec" \
		    "$stage/build/"
		[ -d "$SBX_TEST_BUILD/tests" ] &&
		    cp -a "$SBX_TEST_BUILD/tests" "$stage/build/"
		cp -a tests scripts completions recipes README.md "$stage/"
		chmod -R a+rX "$stage"
		chown 65534:65534 "$stage/home"
		# shellcheck disable=SC2046,SC2086 # file names without blanks
		ufiles=$(slowest_first 3 $(grep -l '^# sbx-test: unprivileged' \
		    $files 2>/dev/null))
		[ -z "$ufiles" ] && echo "# unprivileged run: no test file is marked"
	else
		echo "# skip: unprivileged run: setpriv is not installed"
	fi
elif [ -n "$files" ]; then
	echo "# skip: unprivileged run: already unprivileged (uid $(id -u))"
fi
unpriv() {
	# shellcheck disable=SC2086
	(cd "$stage" && setpriv --reuid=65534 --regid=65534 \
	    --clear-groups env -i PATH=/usr/local/bin:/usr/bin:/bin \
	    HOME="$stage/home" SBX_TEST_BUILD="$stage/build" \
	    SBX_TEST_TMPDIR="$SBX_TEST_TMPDIR" \
	    SBX_TEST_RUN="$SBX_TEST_RUN" \
	    SBX_TEST_UNPRIV=1 ASAN_OPTIONS="${ASAN_OPTIONS:-}" \
	    SBX_TEST_TAPDIR="$tapdir/unpriv" \
	    UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
	    prove -j"$PROVE_JOBS" $PROVE_FLAGS \
	    --exec "sh tests/tap-exec.sh" $ufiles)
}
upid=""
ulog="$SBX_TEST_TMPDIR/.unpriv.log"
if [ -n "$ufiles" ] && [ "$SBX_TEST_SERIAL" != 1 ]; then
	unpriv >"$ulog" 2>&1 &
	upid=$!
fi
if [ -n "$files" ]; then
	# shellcheck disable=SC2046,SC2086 # file names without blanks
	prove -j"$PROVE_JOBS" $PROVE_FLAGS --exec "sh tests/tap-exec.sh" \
	    $(slowest_first 2 $files) || rc=1
fi
if [ -n "$upid" ]; then
	wait "$upid" || rc=1
	echo "# unprivileged run (uid 65534), run alongside:"
	cat "$ulog"
elif [ -n "$ufiles" ]; then
	echo "# unprivileged run (uid 65534):"
	unpriv || rc=1
fi

# Give detached supervisors a moment to finish their own clean-up.
left=$(our_procs)
if [ -n "$left" ]; then
	sleep 2
	left=$(our_procs)
fi
if [ -n "$left" ]; then
	echo "# leftover sandbox processes of this run:"
	for p in $left; do
		printf '#   %s %s\n' "$p" "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
	done
	rc=1
fi
user_after=$(getent passwd sbx 2>/dev/null)
if [ "$user_before" != "$user_after" ]; then
	if [ -z "$user_before" ]; then
		echo "# the run created the system user sbx: $user_after"
	else
		echo "# the run changed the system user sbx: $user_before -> ${user_after:-(none)}"
	fi
	rc=1
fi
if [ "$(registry_sum)" != "$registry_before" ]; then
	echo "# the run changed the host's registry of per-agent ids, /var/lib/sbx-identities"
	rc=1
fi
# New sbx-<pid>-* cgroups since the start; one whose creating process is
# still alive and not of this run belongs to other work.
cg_list >"$SBX_TEST_TMPDIR/.cg-after"
printf '%s\n' "$cg_before" | sed '/^$/d' >"$SBX_TEST_TMPDIR/.cg-before"
ourcg=""
for c in $(comm -13 "$SBX_TEST_TMPDIR/.cg-before" "$SBX_TEST_TMPDIR/.cg-after"); do
	pid=$(printf '%s' "${c##*/}" | sed -n 's/^sbx-\([0-9]*\)-.*/\1/p')
	if [ -n "$pid" ] && [ -d "/proc/$pid" ] && ! ours "$pid"; then
		continue
	fi
	ourcg="$ourcg $c"
done
# One whose process is gone may be another run's, being removed at this
# moment (the run cannot tell it from its own): only what stays counts.
if [ -n "$ourcg" ]; then
	sleep 2
	left=""
	for c in $ourcg; do
		[ -d "$c" ] && left="$left $c"
	done
	ourcg=$left
fi
if [ -n "$ourcg" ]; then
	echo "# leftover cgroups of this run:$ourcg"
	rc=1
fi
# Sanitizer reports of this run: each is a failure, whichever test's
# program wrote it (the test itself may have passed).
if [ -n "$sanlog" ]; then
	reports=$(find "$sanlog" -type f -size +0 2>/dev/null | sort)
	if [ -n "$reports" ]; then
		echo "# sanitizer reports of this run:"
		for f in $reports; do
			echo "# == ${f##*/}"
			sed 's/^/#   /' "$f"
		done
		rc=1
	else
		echo "# no sanitizer report"
	fi
fi

# failed_files PASS LABEL: each file of that pass that failed, its first
# failing assertion (a `not ok` that is not a TODO) and up to 12 lines of
# the diagnostics below it; else what went wrong instead (an exit status,
# a plan that was not kept).
failed_files() {
	for st in "$tapdir/$1"/*.rc; do
		[ -e "$st" ] || continue
		log=${st%.rc}
		name=${log##*/}
		code=$(cat "$st")
		first=$(grep -n '^not ok' "$log" | grep -vi '# *todo' | head -1)
		plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$log" | head -1)
		ran=$(grep -c '^\(not \)\{0,1\}ok' "$log")
		if [ -z "$first" ] && [ "$code" = 0 ] &&
		    [ -n "$plan" ] && [ "$plan" = "$ran" ]; then
			continue
		fi
		printf '#   %s (%s): ' "$name" "$2"
		if [ -n "$first" ]; then
			n=${first%%:*}
			printf '%s\n' "${first#*:}"
			sed -n "$((n + 1)),\$p" "$log" |
			    sed -n '/^#/!q; p' | head -12 | sed 's/^/#     /'
		elif [ "$code" != 0 ]; then
			printf 'exit %s, no failing assertion (%s of %s planned ran); its last lines:\n' \
			    "$code" "$ran" "${plan:-no plan}"
			tail -5 "$log" | sed 's/^/#     /'
		else
			printf '%s of %s planned tests ran\n' "$ran" "${plan:-no plan}"
		fi
	done
}
# A file prove ran that kept no status (killed before it ended) shows
# in prove's summary; this names what the files said themselves.
failed=$(failed_files root "as $(id -un 2>/dev/null || id -u)"; failed_files unpriv "as uid 65534")
if [ -n "$failed" ]; then
	echo "# failed test files, with the first failing assertion of each:"
	printf '%s\n' "$failed"
	rc=1
fi
exit $rc
