#!/bin/bash
# 0010-docs.sh: the manual pages and the completions agree with the programs.
#
# The option tables of the programs are the source of truth: their --help
# output is compared with the SYNOPSIS and OPTIONS of the manual pages and
# with the bash and zsh completions.  TAP output.
set -u
cd "$(dirname "$0")/../.." || exit 1
SBX_TEST_BUILD=${SBX_TEST_BUILD:-$(pwd)/build}
SBX_BIN=$SBX_TEST_BUILD/bin/sbx
EXEC_BIN=$SBX_TEST_BUILD/libexec/sbx/sbx-exec
PAGES="man/sbx.1 man/sbx-exec.1 man/sbx.7 man/sbx-envelope.5 man/sbx-provision.1 man/sbx-preflight.1 man/sbx-proxy.1 man/sbx-config.1 man/sbx-install.1"
# The other commands: each gets the same three checks as sbx-exec.
OTHERS="provision preflight proxy config install"

n=0
failures=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1))
	failures=$((failures + 1))
	echo "not ok $n - $1"
	shift
	for l in "$@"; do
		printf '#   %s\n' "$l"
	done
}
skip() { n=$((n + 1)); echo "ok $n # skip $1"; }
have() { command -v "$1" >/dev/null 2>&1; }

# The long options in a text, one per line, sorted.
long_opts() { grep -oE -- '--[a-z][a-z0-9-]*' | sort -u; }
# The short options of the option lines of a --help (`  -a, --agent A`,
# `  -c STRING`), one per line.
short_opts() { sed -nE 's/^ +(-[A-Za-z])[ ,].*/\1/p' | sort -u; }
# Whitespace-normalized text on one line.
squash() { tr -s ' \t\n' '   ' | sed -e 's/^ //' -e 's/ $//'; }
# A section of a rendered page.  Wide lines: no breaks inside an option.
section() {
	mandoc -Tascii -O width=400 "$1" | col -bx |
	    awk -v s="$2" '$0 == s { f = 1; next } /^[A-Z]/ { f = 0 } f'
}
# The usage lines of a --help: up to the first empty line, without `usage:`.
usage_of() { sed -e '/^$/,$d' -e 's/^usage://'; }

echo "1..$((13 + $(echo "$PAGES" | wc -w) + 4 * $(echo "$OTHERS" | wc -w)))"

# 1-4: every page is lint-clean.
for p in $PAGES; do
	if ! have mandoc; then
		skip "mandoc not installed ($p)"
	elif [ ! -f "$p" ]; then
		not_ok "mandoc -Tlint -W warning $p" "$p is missing"
	else
		out=$(mandoc -Tlint -W warning "$p" 2>&1)
		if [ -z "$out" ]; then
			ok "mandoc -Tlint -W warning $p"
		else
			# shellcheck disable=SC2086
			not_ok "mandoc -Tlint -W warning $p" $out
		fi
	fi
done

# The programs' own word.
exec_help=$("$EXEC_BIN" --help 2>/dev/null)
exec_rc=$?
sbx_help=$("$SBX_BIN" --help 2>/dev/null)
sbx_rc=$?
exec_long=$(printf '%s\n' "$exec_help" | long_opts)
exec_short=$(printf '%s\n' "$exec_help" | short_opts)
exec_usage_long=$(printf '%s\n' "$exec_help" | usage_of | long_opts)
sbx_long=$(printf '%s\n' "$sbx_help" | long_opts)

# 5
if [ "$exec_rc" -eq 0 ] && [ -n "$exec_long" ] && [ "$sbx_rc" -eq 0 ] &&
    [ -n "$sbx_long" ]; then
	ok "sbx --help and sbx-exec --help exit 0 and list options"
else
	not_ok "sbx --help and sbx-exec --help exit 0 and list options" \
	    "$EXEC_BIN --help: status $exec_rc" "$SBX_BIN --help: status $sbx_rc" \
	    "build first (make), or set SBX_TEST_BUILD"
fi

# 6: the SYNOPSIS lists every long option of the usage.
if ! have mandoc; then
	skip "mandoc not installed (SYNOPSIS options)"
else
	syn=$(section man/sbx-exec.1 SYNOPSIS)
	syn_long=$(printf '%s\n' "$syn" | long_opts)
	miss=$(comm -23 <(printf '%s\n' "$exec_usage_long") \
	    <(printf '%s\n' "$syn_long"))
	if [ -n "$exec_usage_long" ] && [ -z "$miss" ]; then
		ok "SYNOPSIS of sbx-exec.1 lists every long option of the usage"
	else
		# shellcheck disable=SC2086
		not_ok "SYNOPSIS of sbx-exec.1 lists every long option of the usage" \
		    "missing:" $miss
	fi
fi

# synopsis_is PAGE HELP: the SYNOPSIS equals the usage of --help, word
# for word.
synopsis_is() {
	local want got
	if ! have mandoc; then
		skip "mandoc not installed (SYNOPSIS of $1)"
		return
	fi
	want=$(printf '%s\n' "$2" | usage_of | squash)
	got=$(section "$1" SYNOPSIS | squash)
	if [ -n "$want" ] && [ "$want" = "$got" ]; then
		ok "SYNOPSIS of $1 equals the usage of --help"
	else
		not_ok "SYNOPSIS of $1 equals the usage of --help" \
		    "usage:    $want" "SYNOPSIS: $got"
	fi
}

# 7, 8
synopsis_is man/sbx-exec.1 "$exec_help"
synopsis_is man/sbx.1 "$sbx_help"

# 9: every long option of sbx-exec --help has an item in OPTIONS of
# sbx-exec.1 (a tag line: `-a A, --agent=A`, `--home=DIR`).
if ! have mandoc; then
	skip "mandoc not installed (OPTIONS of sbx-exec.1)"
else
	opts=$(section man/sbx-exec.1 OPTIONS)
	miss=""
	for o in $exec_long; do
		printf '%s\n' "$opts" |
		    grep -qE -- "^ {5}(-[A-Za-z][^,]*, )?$o([= ]|\$)" ||
		    miss="$miss $o"
	done
	if [ -n "$exec_long" ] && [ -z "$miss" ]; then
		ok "OPTIONS of sbx-exec.1 documents every long option of --help"
	else
		not_ok "OPTIONS of sbx-exec.1 documents every long option of --help" \
		    "missing:$miss"
	fi
fi

# 10: ... and every short one.
if ! have mandoc; then
	skip "mandoc not installed (short options of sbx-exec.1)"
else
	opts=$(section man/sbx-exec.1 OPTIONS)
	miss=""
	for o in $exec_short; do
		printf '%s\n' "$opts" | grep -qE -- "^ {5}$o( |,|\$)" ||
		    miss="$miss $o"
	done
	if [ -n "$exec_short" ] && [ -z "$miss" ]; then
		ok "OPTIONS of sbx-exec.1 documents every short option of --help"
	else
		not_ok "OPTIONS of sbx-exec.1 documents every short option of --help" \
		    "missing:$miss"
	fi
fi

# 11-14: the completions know every option of sbx and sbx-exec.
for f in completions/sbx.bash completions/_sbx; do
	miss=""
	for o in $exec_long $sbx_long; do
		grep -qE -- "(^|[^a-z-])$o([^a-z-]|$)" "$f" 2>/dev/null ||
		    miss="$miss $o"
	done
	if [ -n "$exec_long" ] && [ -z "$miss" ]; then
		ok "$f completes every long option of sbx and sbx-exec"
	else
		not_ok "$f completes every long option of sbx and sbx-exec" \
		    "missing:$miss"
	fi
	miss=""
	for o in $exec_short; do
		grep -qE -- "(^|[^a-zA-Z-])$o([^a-zA-Z-]|$)" "$f" 2>/dev/null ||
		    miss="$miss $o"
	done
	if [ -n "$exec_short" ] && [ -z "$miss" ]; then
		ok "$f completes every short option of sbx-exec"
	else
		not_ok "$f completes every short option of sbx-exec" \
		    "missing:$miss"
	fi
done

# 15: the job subcommands are completed.
miss=""
for f in completions/sbx.bash completions/_sbx; do
	for s in ps poll wait kill; do
		grep -qE "(^|[^a-z])$s([^a-z]|$)" "$f" 2>/dev/null ||
		    miss="$miss $f:$s"
	done
done
if [ -z "$miss" ]; then
	ok "the completions know ps, poll, wait and kill"
else
	not_ok "the completions know ps, poll, wait and kill" "missing:$miss"
fi

# 16: the bash completion parses.
if out=$(bash -n completions/sbx.bash 2>&1); then
	ok "bash -n completions/sbx.bash"
else
	not_ok "bash -n completions/sbx.bash" "$out"
fi

# 17: the zsh completion parses.
if ! have zsh; then
	skip "zsh not installed"
elif out=$(zsh -n completions/_sbx 2>&1); then
	ok "zsh -n completions/_sbx"
else
	not_ok "zsh -n completions/_sbx" "$out"
fi

# For every other command: its SYNOPSIS equals the usage of its --help,
# its page documents each long option, and both completions know them.
for c in $OTHERS; do
	page=man/sbx-$c.1
	help=$("$SBX_TEST_BUILD/libexec/sbx/sbx-$c" --help 2>/dev/null)
	long=$(printf '%s\n' "$help" | long_opts)
	synopsis_is "$page" "$help"
	if ! have mandoc; then
		skip "mandoc not installed (options of $page)"
	else
		text=$(mandoc -Tascii -O width=400 "$page" | col -bx)
		miss=""
		for o in $long; do
			printf '%s\n' "$text" | grep -qE -- "(^|[^a-z-])$o([^a-z-]|\$)" ||
			    miss="$miss $o"
		done
		if [ -n "$long" ] && [ -z "$miss" ]; then
			ok "$page documents every long option of sbx-$c --help"
		else
			not_ok "$page documents every long option of sbx-$c --help" \
			    "missing:$miss"
		fi
	fi
	for f in completions/sbx.bash completions/_sbx; do
		miss=""
		for o in $long; do
			grep -qE -- "(^|[^a-z-])$o([^a-z-]|\$)" "$f" 2>/dev/null ||
			    miss="$miss $o"
		done
		if [ -n "$long" ] && [ -z "$miss" ]; then
			ok "$f completes every long option of sbx-$c"
		else
			not_ok "$f completes every long option of sbx-$c" \
			    "missing:$miss"
		fi
	done
done

[ "$failures" -eq 0 ]
