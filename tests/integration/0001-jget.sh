#!/bin/bash
# 0001-jget.sh: the tests' jq fast path (tests/helpers/jget.c, used by
# lib.bash's jq function) prints exactly what jq prints, with the same exit
# status, on a table of inputs, filters and options: the plain paths it
# answers itself and the cases it hands to jq.  And it does answer the
# plain paths itself (JGET_STRICT makes a hand-over exit 3), so that the
# suite gains what it is there for.  Emits TAP.
#
# Environment: SBX_TEST_BUILD or B, the build directory (default "build").
# sbx-test: unprivileged
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${SBX_TEST_BUILD:-${B:-build}}
J=$B/tests/helpers/jget

n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; }

command -v jq >/dev/null 2>&1 || { echo "1..0 # SKIP jq is not installed"; exit 0; }
[ -x "$J" ] || { echo "1..0 # SKIP not built: make B=$B tests"; exit 0; }

T=$(mktemp -d "${SBX_TEST_TMPDIR:-/tmp}/jget.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

# Inputs: what the tests feed jq (envelopes, JSON lines), and what jget
# must leave to jq (reals, -0, invalid JSON, duplicate keys, no input).
# shellcheck disable=SC2016 # a literal backquote
printf '%s\n' '{"ok":false,"kind":"invalid_args","field":"--bogus","reason":"unknown_option","message":"unknown option `--bogus`","retryable":false,"tool":"exec"}' >"$T/envelope"
printf '%s' '{"ok":true,"result":{"stdout":"a\tb\nc\\d\"e\u007f\u0001/\u00e9 \ud83d\ude00\n","exit_code":0,"big":9007199254740992,"neg":-42,"list":[1,"two",null,false,true,{"a":[]},{}],"empty":[],"obj":{"x":{"y":"z"},"n":null}},"warnings":["w1","w2"]}' >"$T/result"
printf '%s\n' '{"status":"allowed","host":"a.test"}' '{"status":"denied","host":"b.test","n":2}' '' '{"status":"allowed","host":"c.test","extra":[1,2]}' >"$T/lines"
printf '%s\n' '1 2 "s" null false [] {}' >"$T/scalars"
printf '%s\n' '{"x":1.5,"y":1.0,"z":1e3,"w":12345678901234567890}' >"$T/reals"
printf '%s\n' '{"x":-0,"y":[-0]}' >"$T/negzero"
printf '%s\n' '{"a":1,"a":2}' >"$T/dupkeys"
printf '%s\n' '{"a":1} {"b":' >"$T/invalid"
printf '%s\n' '{"a":"x"}{"a":"y"}' >"$T/glued"
: >"$T/empty"
printf '%s\n' '   ' >"$T/blank"

# Filters: plain paths (answered by jget where the input allows) and what
# only jq answers.  "|length" stands for " | length".
paths='. .ok .kind .result .result.stdout .result.list .result.list[]
.result.list[1] .result.list[9] .result.list[5].a .result.obj[] .result.obj.x
.result.empty .result.big .result.neg .warnings[] .warnings[0] .missing.x
.kind.x .result.list.a .result.stdout[0] .[] .[0]
.result.list|length .result|length .missing|length .warnings|length
.result.stdout|length .ok|length .result.big|length
.and .result.if .. .a? .["a"] .result.list[-1] .x+1 .a,.b length'
few='. .ok .result .result.stdout .result.list[] .missing.x .kind.x
.result.list|length'
lines='. .status .n .extra[] .missing|length .x.y'

# check IN "OPTS" "FILTERS": jget and jq agree on stdout and exit status
# for each option (- for none) and filter, on input IN; one TAP line.
# jq costs ~40 ms of CPU a run: the table stays small.
check() {
	local in=$1 opt f a b fails=0 cases=0
	for opt in $2; do
		[ "$opt" = - ] && opt=""
		for f in $3; do
			f=${f//|length/ | length}
			# shellcheck disable=SC2086 # $opt: one word or none
			a=$("$J" $opt "$f" <"$T/$in" 2>/dev/null; echo "rc=$?")
			# shellcheck disable=SC2086
			b=$(jq $opt "$f" <"$T/$in" 2>/dev/null; echo "rc=$?")
			cases=$((cases + 1))
			[ "$a" = "$b" ] && continue
			fails=$((fails + 1))
			printf '# %s jq %s %s:\n#   jget: %s\n#   jq:   %s\n' \
			    "$in" "$opt" "$f" "$(printf '%s' "$a" | tr '\n' '|')" \
			    "$(printf '%s' "$b" | tr '\n' '|')"
		done
	done
	if [ "$fails" -eq 0 ]; then
		ok "$in, $2: jget and jq agree on all $cases cases"
	else
		notok "$in, $2: jget and jq differ on $fails of $cases cases"
	fi
}

set -f	# the filters hold [] and *: no globbing
check result -r "$paths"
check result "- -c -e -j" "$few"
check envelope "- -e" ". .ok .kind .x.y"
check lines "-r -e" "$lines"
check scalars "-r -e" ". .x .|length"
# The inputs jget hands over before any filter matters.
for in in reals negzero dupkeys invalid glued empty blank; do
	check "$in" "-r" ". .x"
done
set +f

# What jget answers itself (exit 3 under JGET_STRICT is a hand-over).
answers() { JGET_STRICT=1 "$J" "$@" >/dev/null 2>&1; [ $? -ne 3 ]; }
bad=""
for c in '-r .kind' '-r .result.stdout' '-c .result' '.result' \
    '-r .warnings[]' '-r .result.list|length' '-e .ok' '-j .result.stdout' \
    '-rc .result.list[5]' '-r .result.obj.x.y'; do
	# shellcheck disable=SC2086
	set -- $c
	answers "$@" <"$T/result" || bad="$bad [$c]"
done
answers -r .status "$T/lines" || bad="$bad [-r .status FILE]"
if [ -z "$bad" ]; then
	ok "jget answers the plain paths itself"
else
	notok "jget hands these plain paths to jq:$bad"
fi
bad=""
for c in '-S .' '-r .x' '-r ..' '-r .a?' '-s .' '-n 1' '--arg x y .'; do
	# shellcheck disable=SC2086
	set -- $c
	answers "$@" <"$T/reals" && bad="$bad [$c]"
done
answers -r .a <"$T/dupkeys" && bad="$bad [duplicate keys]"
answers -r .x <"$T/negzero" && bad="$bad [-0]"
answers -e .a <"$T/empty" && bad="$bad [-e on no input]"
if [ -z "$bad" ]; then
	ok "jget hands the rest to jq"
else
	notok "jget answers what it must hand over:$bad"
fi
echo "1..$n"
