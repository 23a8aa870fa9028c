#!/bin/bash
# 0003-run-summary.sh: make check's driver (tests/run.sh) names what
# failed.  After prove's own summaries (kept as they are: CI reads them),
# each failed file is named with its pass, its first failing assertion
# and the diagnostics under it; a file that broke its plan or exited
# non-zero without a failing assertion is named too; a file that passed is
# not.  Against a scratch tree of three test files, never this suite's.
# TAP.  SHOW=1 prints the nested run's last lines even when it passes.
set -u
cd "$(dirname "$0")/../.." || exit 1
top=$PWD

n=0
failures=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failures=$((failures + 1)); echo "not ok $n - $1"; }
check() { # DESCRIPTION FIXED-STRING: the summary contains it
	if printf '%s\n' "$summary" | grep -qF -- "$2"; then ok "$1"; else
		notok "$1"
		printf '#   missing: %s\n' "$2"
	fi
}

command -v prove >/dev/null 2>&1 || { echo "1..0 # SKIP prove is not installed"; exit 0; }
tmp=$(mktemp -d "${SBX_TEST_TMPDIR:-/tmp}/0003-run.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"

# The scratch tree: the driver, three integration files, an empty build.
t=$tmp/tree
mkdir -p "$t/tests/integration" "$t/build/tests/unit" "$t/build/bin" \
    "$t/build/libexec" "$t/scripts" "$t/completions" "$t/recipes"
cp "$top/tests/run.sh" "$top/tests/tap-exec.sh" "$t/tests/"
: >"$t/README.md"
cat >"$t/tests/integration/9001-passes.sh" <<'T'
echo 1..2
echo "ok 1 - one"
echo "ok 2 - two # skip not here"
T
cat >"$t/tests/integration/9002-fails.sh" <<'T'
# sbx-test: unprivileged
echo 1..3
echo "ok 1 - the first assertion"
echo "not ok 2 - the second assertion"
echo "#   expected 4, got 5"
echo "#   (in test file 9002-fails.sh, line 4)"
echo "not ok 3 - the third assertion"
echo "#   never shown: only the first failure is"
exit 1
T
cat >"$t/tests/integration/9003-plan.sh" <<'T'
echo 1..3
echo "ok 1 - only one of three"
echo "the last words of a crash"
exit 2
T
chmod -R a+rX "$tmp"

out=$(cd "$t" && env -u SBX_TEST_TMPDIR -u SBX_TEST_RUN -u SBX_TEST_TAPDIR \
    SBX_TEST_ONLY=900 SBX_TEST_SERIAL=1 PROVE_JOBS=2 PROVE_FLAGS= \
    B=build sh tests/run.sh 2>&1)
rc=$?
echo "1..10"
if [ "$rc" -ne 0 ]; then ok "the run fails (exit $rc)"; else notok "the run fails (exit $rc)"; fi
# prove's closing lines are there, untouched.
if printf '%s\n' "$out" | grep -q '^Result: FAIL$'; then
	ok "prove's summary is kept"
else
	notok "prove's summary is kept"
fi
# The summary: after the last line of prove's.
summary=$(printf '%s\n' "$out" | sed -n '/^# failed test files/,$p')
if [ -n "$summary" ] && ! printf '%s\n' "$summary" | grep -q '^Result:'; then
	ok "the failures are named after prove's summaries"
else
	notok "the failures are named after prove's summaries"
fi
me=$(id -un 2>/dev/null || id -u)
check "the failing file and its pass" "#   9002-fails.sh (as $me): not ok 2 - the second assertion"
check "the diagnostics under the first failure" "#     #   expected 4, got 5"
check "the file and line bats names" "#     #   (in test file 9002-fails.sh, line 4)"
if printf '%s\n' "$summary" | grep -qF "never shown"; then
	notok "only the first failing assertion is shown"
else
	ok "only the first failing assertion is shown"
fi
check "a broken plan and its exit status" "#   9003-plan.sh (as $me): exit 2, no failing assertion (1 of 3 planned ran)"
if printf '%s\n' "$summary" | grep -q 9001-passes; then
	notok "a file that passed is not named"
else
	ok "a file that passed is not named"
fi
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
	check "the unprivileged pass's failure, named as such" "#   9002-fails.sh (as uid 65534): not ok 2 - the second assertion"
else
	ok "the unprivileged pass's failure, named as such # skip only root runs the second pass"
fi
if [ "$failures" -gt 0 ] || [ -n "${SHOW:-}" ]; then
	printf '%s\n' "$out" | tail -40 | sed 's/^/#   | /'
fi
exit $((failures > 0))
