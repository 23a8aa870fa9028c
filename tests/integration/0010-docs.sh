#!/bin/bash
# 0010-docs.sh: the manual pages and the completions agree with the programs.
#
# Each program's option table is the source of truth (opts.h): what
# `sbx --complete options CMD [SUB]` prints is the table's set for that
# (sub)command.  For every program and every (sub)command, EXACT sets are
# compared:
#   - the options of the SYNOPSIS entries of the (sub)command (man page)
#     == the table's (but -h and --version, which no synopsis line lists);
#   - what the bash and the zsh completions offer after `-` == the table's;
#   - the items of the page's OPTIONS == every option of the table;
#   - the option lines of --help == every option of the table;
# and the SYNOPSIS equals the usage of --help word for word.  TAP output,
# the plan at the end.
set -u
cd "$(dirname "$0")/../.." || exit 1
SBX_TEST_BUILD=${SBX_TEST_BUILD:-$(pwd)/build}
SBX_BIN=$SBX_TEST_BUILD/bin/sbx
export SBX_EXEC_PATH=$SBX_TEST_BUILD/libexec/sbx
PAGES="man/sbx.1 man/sbx-exec.1 man/sbx.7 man/sbx-envelope.5 man/sbx-provision.1 man/sbx-preflight.1 man/sbx-proxy.1 man/sbx-config.1 man/sbx-secret.1 man/sbx-install.1 man/sbx-file.1 man/sbx-bridge.1 man/sbx-host.1 man/sbx-plugin.1 man/sbx-recipe.5 man/sbx-mcp.1 man/sbx-slurm.7 man/sbx-srt.1 man/sbx-session.1"
PROGRAMS="exec provision preflight proxy config secret install file bridge plugin mcp srt session"
# The completions must not see the caller's state root.
tmp=$(mktemp -d "${SBX_TEST_TMPDIR:-/tmp}/sbx-docs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export SBX_HOME=$tmp/root HOME=$tmp

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
# same NAME WANT GOT: one test, the two sets (lines) equal.
same() {
	local extra missing
	extra=$(comm -13 <(printf '%s\n' "$2" | sed '/^$/d' | sort -u) \
	    <(printf '%s\n' "$3" | sed '/^$/d' | sort -u) | tr '\n' ' ')
	missing=$(comm -23 <(printf '%s\n' "$2" | sed '/^$/d' | sort -u) \
	    <(printf '%s\n' "$3" | sed '/^$/d' | sort -u) | tr '\n' ' ')
	if [ -n "$2" ] && [ -z "$extra$missing" ]; then
		ok "$1"
	else
		not_ok "$1" "missing: $missing" "extra:   $extra"
	fi
}

# Options in a text: --long and -x words, one per line.
opts_in() { grep -oE -- '(^|[^A-Za-z0-9-])--?[A-Za-z][a-z0-9-]*' |
    sed -E 's/^[^-]*//' | grep -vE -- '^-[A-Za-z][a-z]' | sort -u; }
# Whitespace-normalized text on one line.
squash() { tr -s ' \t\n' '   ' | sed -e 's/^ //' -e 's/ $//'; }
# A section of a rendered page.  Wide lines: no breaks inside an option.
section() {
	mandoc -Tascii -O width=400 "$1" | col -bx |
	    awk -v s="$2" '$0 == s { f = 1; next } /^[A-Z]/ { f = 0 } f'
}
# The usage lines of a --help: up to the first empty line, without `usage:`.
usage_of() { sed -e '/^$/,$d' -e 's/^usage://'; }
# The table of CMD [SUB...]: its options, one per line.
table() { "$SBX_BIN" --complete options "$@" | cut -f1 | sort -u; }
# The (sub)commands of CMD: "" (the program itself, when the SYNOPSIS has
# it) and each subcommand, words joined by blanks.
subs_of() {
	local s t
	for s in $("$SBX_BIN" --complete subcommands "$1"); do
		t=$("$SBX_BIN" --complete subcommands "$1" "$s")
		if [ -z "$t" ]; then
			echo "$s"
		else
			for x in $t; do echo "$s $x"; done
		fi
	done
}
# The SYNOPSIS entries of PAGE (CMD is `sbx CMD`, or `sbx`), one a line,
# as "SUB<TAB>TEXT": SUB the subcommand words (a|b entries are repeated
# for each), "" for the program itself.
synopsis_entries() {
	local e sub s cmd=$2
	section "$1" SYNOPSIS | awk '
	/^     sbx/ { if (e != "") print e; e = $0; next }
	{ e = e " " $0 }
	END { if (e != "") print e }' | while IFS= read -r e; do
		set -f
		# shellcheck disable=SC2086
		set -- $e
		set +f
		shift	# sbx
		[ -n "$cmd" ] && shift
		sub=""
		while [ $# -gt 0 ] && printf '%s' "$1" | grep -qE '^[a-z][a-z|-]*$'; do
			sub="${sub:+$sub }$1"
			shift
		done
		case $sub in
		*"|"*)
			for s in $(printf '%s' "$sub" | tr '|' ' '); do
				printf '%s\t%s\n' "$s" "$*"
			done
			;;
		*) printf '%s\t%s\n' "$sub" "$*" ;;
		esac
	done
}
# The pairs "-x --long" of a --help.
help_pairs() { sed -nE 's/^ +(-[A-Za-z]), (--[a-z][a-z0-9-]*).*/\1 \2/p'; }
# The options of the option lines of a --help (`  -a, --agent A`,
# `      --home DIR`, `  -c STRING`).
help_opts() {
	grep -E '^ {2,6}-' | sed -E 's/^ +//; s/  .*//' | opts_in
}
# canon PAIRS [table]: stdin options, a short one replaced by its long
# one.  In a table's set, a letter whose long option (in --help) is not in
# the set (wait -t; -t is --tty in --help) is the subcommand's own short
# form of a long option the set has too: dropped.
canon() {
	local o l in
	in=$(cat)
	printf '%s\n' "$in" | while read -r o; do
		l=$(printf '%s\n' "$1" | awk -v s="$o" '$1 == s { print $2 }')
		if [ -z "$l" ]; then
			echo "$o"
		elif [ -z "${2-}" ] || printf '%s\n' "$in" | grep -qx -- "$l"; then
			echo "$l"
		fi
	done | sort -u
}
# What bash completes after `sbx WORD... -`.
bash_offers() {
	bash -c '. completions/sbx.bash
	COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
	_sbx; printf "%s\n" "${COMPREPLY[@]}"' sbx "$SBX_BIN" "$@" |
	    grep -vx -- '--' | sort -u
}
# What zsh completes after `sbx WORD... -` (compadd recorded).
zsh_offers() {
	zsh -fc 'compadd() {
	  local -a out
	  while (( $# )); do
	    case $1 in
	      -a) shift; out+=( ${(P)1} ) ;;
	      --) shift; out+=( "$@" ); break ;;
	      -*) ;;
	      *) out+=( $1 ) ;;
	    esac
	    shift
	  done
	  print -rl -- $out
	}
	_call_program() { shift; eval "$@" }
	_files() { : } ; _default() { : }
	source <(sed "\$d" completions/_sbx)
	words=( "$@" ); CURRENT=$#; PREFIX=$words[CURRENT]; _sbx' sbx \
	    "$SBX_BIN" "$@" 2>/dev/null | grep -vx -- '--' | sort -u
}

# Every page is lint-clean.
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

# Every page renders under groff (man(1) on most Linux systems) without a
# macro name left in the text: groff's mdoc reads some lines differently
# from mandoc (`.Lk URL No and ...` took "No and ..." for the link's text,
# issue 28 item 9).
for p in $PAGES; do
	if ! have groff; then
		skip "groff not installed ($p)"
		continue
	fi
	out=$(groff -mandoc -Tutf8 -P-c -P-b -P-u "$p" 2>/dev/null |
	    grep -E "[a-z,] (No|Ns|Pq|Ql|Li|Cm|Ar|Fl|Xr|Lk|Pa|Ic) [a-z]")
	if [ -z "$out" ]; then
		ok "groff renders $p without a stray macro name"
	else
		not_ok "groff renders $p without a stray macro name" "$out"
	fi
done

# The completions parse.
if out=$(bash -n completions/sbx.bash 2>&1); then
	ok "bash -n completions/sbx.bash"
else
	not_ok "bash -n completions/sbx.bash" "$out"
fi
if ! have zsh; then
	skip "zsh not installed"
elif out=$(zsh -n completions/_sbx 2>&1); then
	ok "zsh -n completions/_sbx"
else
	not_ok "zsh -n completions/_sbx" "$out"
fi

if ! "$SBX_BIN" --complete options >/dev/null 2>&1; then
	not_ok "sbx --complete options answers" "build first (make), or set SBX_TEST_BUILD"
	echo "1..$n"
	exit 1
fi

# check_program CMD PAGE HELP: every check for one program (CMD "" is the
# front-end).
check_program() {
	local cmd=$1 page=$2 help=$3 entries all sub want got pairs label
	local -a cw=()
	[ -n "$cmd" ] && cw=("$cmd")
	label="sbx${cmd:+ $cmd}"
	pairs=$(printf '%s\n' "$help" | help_pairs)

	# The SYNOPSIS equals the usage of --help.
	if have mandoc; then
		want=$(printf '%s\n' "$help" | usage_of | squash)
		got=$(section "$page" SYNOPSIS | squash)
		if [ -n "$want" ] && [ "$want" = "$got" ]; then
			ok "SYNOPSIS of $page equals the usage of --help"
		else
			not_ok "SYNOPSIS of $page equals the usage of --help" \
			    "usage:    $want" "SYNOPSIS: $got"
		fi
	else
		skip "mandoc not installed (SYNOPSIS of $page)"
	fi

	# Every option of the table, of any (sub)command.
	all=$(
		table "${cw[@]}"
		for sub in "" $(subs_of "$cmd" | tr ' ' '+'); do
			# shellcheck disable=SC2046
			[ -n "$sub" ] && table "${cw[@]}" $(printf '%s' "$sub" | tr '+' ' ')
		done | sort -u
	)
	all=$( (printf '%s\n' "$all"; [ -z "$cmd" ] || table "${cw[@]}") | sort -u)
	same "$label --help lists exactly the options of its table" "$all" \
	    "$(printf '%s\n' "$help" | help_opts)"
	if have mandoc; then
		same "OPTIONS of $page documents exactly the options of the table" \
		    "$all" "$(section "$page" OPTIONS | grep -E '^ {5}-' |
		    sed -E 's/^ +//; s/  .*//' | opts_in)"
	else
		skip "mandoc not installed (OPTIONS of $page)"
	fi

	# Per (sub)command.
	[ -n "$cmd" ] || return 0
	entries=$(synopsis_entries "$page" "$cmd")
	# "." is the program itself, "+" joins words.
	for sub in $(printf '%s\n' "$entries" | cut -f1 | sort -u |
	    sed 's/^$/./' | tr ' ' '+') $(subs_of "$cmd" | tr ' ' '+'); do
		printf '%s\n' "$seen" | grep -qx -- "$cmd:$sub" && continue
		seen="$seen
$cmd:$sub"
		# shellcheck disable=SC2046
		set -- $(printf '%s' "$sub" | sed 's/^[.]$//' | tr '+' ' ')
		want=$(table "$cmd" "$@")
		if [ -z "$want" ]; then
			not_ok "sbx $cmd $*: the table knows the SYNOPSIS entry"
			continue
		fi
		if have mandoc; then
			got=$(printf '%s\n' "$entries" |
			    awk -F '\t' -v s="$*" '$1 == s { print $2 }' | opts_in)
			same "SYNOPSIS of sbx $cmd${*:+ $*}: exactly its table's options" \
			    "$(printf '%s\n' "$want" | canon "$pairs" table |
			    grep -vxE -- '--help|--version')" \
			    "$(printf '%s\n' "$got" | canon "$pairs")"
		fi
		same "bash completes sbx $cmd${*:+ $*} - with exactly its table" \
		    "$want" "$(bash_offers "$cmd" "$@" -)"
		if have zsh; then
			same "zsh completes sbx $cmd${*:+ $*} - with exactly its table" \
			    "$want" "$(zsh_offers "$cmd" "$@" -)"
		else
			skip "zsh not installed (sbx $cmd $*)"
		fi
	done
}

seen=""
check_program "" man/sbx.1 "$("$SBX_BIN" --help 2>/dev/null)"
same "bash completes sbx - with exactly the front-end's table" \
    "$(table)" "$(bash_offers -)"
if have zsh; then
	same "zsh completes sbx - with exactly the front-end's table" \
	    "$(table)" "$(zsh_offers -)"
else
	skip "zsh not installed (sbx -)"
fi
for c in $PROGRAMS; do
	check_program "$c" "man/sbx-$c.1" \
	    "$("$SBX_EXEC_PATH/sbx-$c" --help 2>/dev/null)"
done

echo "1..$n"
[ "$failures" -eq 0 ]
