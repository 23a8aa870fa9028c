#!/bin/bash
# 0004-fuzz.sh: every libFuzzer target (tests/fuzz/fuzz-*.c) is built by
# `make check` (the Makefile's fuzz-build) and runs here for a few seconds
# from its seed corpus and dictionary: a target whose link breaks, whose
# seeds no longer parse or that crashes at once fails the suite, so that
# `make fuzz` cannot rot unseen again (issue 30: fuzz-policy had lost
# lib/base/fsutil.c from its link, and nobody noticed for months).
# New inputs go to a temporary directory (the run leaves the seed corpus
# and $B/fuzz/corpus-* as they were); a crash's input goes to $B/fuzz/.
# Where clang cannot link a libFuzzer program, every target skips with the
# reason the build's probe recorded ($B/fuzz/.probe).  Emits TAP.
#
# Environment: SBX_TEST_BUILD or B, the build directory (default "build");
# FUZZ_CHECK_TIME, seconds per target (default 3).
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${SBX_TEST_BUILD:-${B:-build}}
FUZZ_CHECK_TIME=${FUZZ_CHECK_TIME:-3}
# target:seed-corpus, as `make fuzz` runs them.
TARGETS="httpreq:httpreq tls-sni:tls policy:httpreq socks5:socks5 bridge:bridge"

if [ -f "$B/fuzz/.probe" ] && [ -s "$B/fuzz/.probe" ]; then
	echo "1..0 # SKIP fuzz targets: $(cat "$B/fuzz/.probe")"
	exit 0
fi
if [ ! -f "$B/fuzz/.probe" ]; then
	echo "1..0 # SKIP fuzz targets not built: make B=$B fuzz-build (make check does)"
	exit 0
fi

T=$(mktemp -d "${SBX_TEST_TMPDIR:-/tmp}/fuzz.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
# The fuzz targets carry their own ASan and UBSan: their reports belong on
# this test's output (the crash is this test's failure), not in the log
# files tests/run.sh points a sanitizer build's programs at.
unset ASAN_OPTIONS UBSAN_OPTIONS

n=0
# shellcheck disable=SC2086 # a list of words
set -- $TARGETS
echo "1..$(($# * 2))"
for t in "$@"; do
	name=${t%%:*}
	seeds=tests/fuzz/corpus-${t##*:}
	bin=$B/fuzz/fuzz-$name
	n=$((n + 1))
	if [ -x "$bin" ]; then
		echo "ok $n - fuzz-$name is built"
	else
		echo "not ok $n - fuzz-$name is built ($bin is missing: make B=$B fuzz-build)"
		n=$((n + 1))
		echo "not ok $n - fuzz-$name runs # not built"
		continue
	fi
	mkdir -p "$T/corpus-$name"
	n=$((n + 1))
	# -timeout: one input may take this long on a loaded machine before
	# libFuzzer calls it a hang; the run itself is bounded by the time.
	if "$bin" -max_total_time="$FUZZ_CHECK_TIME" -timeout=60 \
	    -max_len=20000 -dict="tests/fuzz/$name.dict" \
	    -print_final_stats=1 -artifact_prefix="$B/fuzz/" \
	    "$T/corpus-$name" "$seeds" >"$T/$name.out" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' \
		    "$T/$name.out")
		echo "ok $n - fuzz-$name runs ${runs:-?} inputs without a finding"
	else
		echo "not ok $n - fuzz-$name runs (a finding: input in $B/fuzz/)"
		tail -n 40 "$T/$name.out" | sed 's/^/# /'
	fi
done
