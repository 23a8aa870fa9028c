#!/bin/bash
# 0040-demo.sh: `make demo`'s script works as the README says: as root and
# (in the unprivileged pass) as a plain user.  TAP.
# sbx-test: unprivileged
set -u
cd "$(dirname "$0")/../.." || exit 1
SBX_TEST_BUILD=${SBX_TEST_BUILD:-$(pwd)/build}
echo "1..4"
unset SBX_HOME SBX_AGENT SBX_JSON
export TMPDIR=${SBX_TEST_TMPDIR:-/tmp}
B=$SBX_TEST_BUILD
# demo.sh takes B relative to the checkout; give it the tested build.
out=$(B="$(realpath --relative-to=. "$B")" sh scripts/demo.sh 2>&1)
rc=$?
n=0
check() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else
		echo "not ok $n - $2"
		printf '%s\n' "$out" | sed 's/^/#   /'
	fi
}
[ $rc -eq 0 ]; check $? "demo.sh exits 0 as uid $(id -u)"
printf '%s\n' "$out" | grep -q '^write to /etc: refused$'; check $? "the demo shows /etc read-only"
printf '%s\n' "$out" | grep -q '^host home: not visible$'; check $? "the demo shows no host home"
printf '%s\n' "$out" | grep -q '^{"ok":true,.*"tool":"exec"'; check $? "the demo prints an ok envelope"
