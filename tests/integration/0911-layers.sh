#!/bin/sh
# 0911-layers.sh: lib/ is in layers.  The areas of lib/ (its folders) are
# ordered in lib/README (the `order:` line, lowest first); a module may
# call its own area and the areas below it, never one above.  Read from the
# built objects with nm: every undefined symbol of lib/A/m.o that another
# lib object defines is a call, and the callee's area must not be higher
# than A.  Every folder of lib/ must be in the order, and the Makefile's
# LIB_DIRS must be the same list.  The checker first proves on a made-up
# tree that it catches a call upwards and a folder outside the order.
# Emits TAP.
#
# Environment: SBX_TEST_BUILD or B, the build directory (default "build").
# sbx-test: unprivileged
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${SBX_TEST_BUILD:-${B:-build}}
case $B in
/*) bdir=$B ;;
*) bdir=$PWD/$B ;;
esac

n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n # skip $1"; }
diag() { printf '# %s\n' "$@"; }
bail() { echo "1..0 # SKIP $1"; exit 0; }

command -v nm >/dev/null 2>&1 || bail "nm (binutils) is not installed"
[ -f lib/README ] || bail "no lib/README here (a staged copy of the build)"
order=$(sed -n 's/^order: *//p' lib/README | tr -d '<' | tr -s ' ')
[ -n "$order" ] || bail "lib/README has no order: line"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/0911-layers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

# unlisted SRCROOT ORDER: the folders of SRCROOT/lib not in ORDER, one a
# line.
unlisted() {
	for d in "$1"/lib/*/; do
		a=${d%/}
		a=${a##*/}
		case " $2 " in
		*" $a "*) ;;
		*) echo "$a" ;;
		esac
	done
}

# upward SRCROOT OBJROOT ORDER: every call from an area into a higher one,
# "CALLER-AREA CALLER-OBJECT CALLEE-OBJECT SYMBOL" a line; "missing
# OBJECT" for a source without its object.
upward() {
	: >"$tmp/defs"
	: >"$tmp/unds"
	for src in "$1"/lib/*/*.c; do
		[ -e "$src" ] || continue
		rel=${src#"$1"/}
		obj=$2/${rel%.c}.o
		m=${rel#lib/}
		m=${m%.c}
		if [ ! -f "$obj" ]; then
			echo "missing $obj"
			continue
		fi
		nm -g --defined-only "$obj" |
		    awk -v m="$m" 'NF == 3 { print $3, m }' >>"$tmp/defs"
		nm -u "$obj" | awk -v m="$m" '{ print $NF, m }' >>"$tmp/unds"
	done
	awk -v order="$3" '
	BEGIN { k = split(order, a, " "); for (i = 1; i <= k; i++) r[a[i]] = i }
	FILENAME == ARGV[1] { def[$1] = $2; next }
	{
		if (!($1 in def))
			next
		ca = $2; sub(/\/.*/, "", ca)
		ce = def[$1]; sub(/\/.*/, "", ce)
		if (ca != ce && r[ce] > r[ca])
			print ca, $2, def[$1], $1
	}' "$tmp/defs" "$tmp/unds" | sort
}

# The checker on a made-up tree: base/lo.c calls up into state/hi.c, and
# a folder `extra` is in no order.
if command -v "${CC:-cc}" >/dev/null 2>&1; then
	mkdir -p "$tmp/t/lib/base" "$tmp/t/lib/state" "$tmp/t/lib/extra" \
	    "$tmp/o/lib/base" "$tmp/o/lib/state"
	printf 'int hi(void);\nint lo(void) { return hi(); }\n' \
	    >"$tmp/t/lib/base/lo.c"
	printf 'int lo(void);\nint hi(void) { return 1; }\nint up(void) { return lo(); }\n' \
	    >"$tmp/t/lib/state/hi.c"
	${CC:-cc} -c -o "$tmp/o/lib/base/lo.o" "$tmp/t/lib/base/lo.c" &&
	    ${CC:-cc} -c -o "$tmp/o/lib/state/hi.o" "$tmp/t/lib/state/hi.c"
	got=$(upward "$tmp/t" "$tmp/o" "base state")
	if [ "$got" = "base base/lo state/hi hi" ]; then
		ok "the checker names a call upwards (and only it)"
	else
		notok "the checker names a call upwards (and only it)"
		diag "got: $got"
	fi
	got=$(unlisted "$tmp/t" "base state")
	if [ "$got" = extra ]; then
		ok "the checker names a folder outside the order"
	else
		notok "the checker names a folder outside the order"
		diag "got: $got"
	fi
else
	skip "no C compiler for the checker's own test"
	skip "no C compiler for the checker's own test"
fi

[ -f "$bdir/lib/base/error.o" ] || {
	echo "1..$n"
	exit 0
}

# Every folder of lib/ is in the order, and the order names no folder
# that is not there.
bad=$(unlisted . "$order")
if [ -z "$bad" ]; then
	ok "every folder of lib/ is in lib/README's order ($order)"
else
	notok "every folder of lib/ is in lib/README's order ($order)"
	for a in $bad; do
		diag "lib/$a is in no layer: add it to the order: line of lib/README"
	done
fi
gone=""
for a in $order; do
	[ -d "lib/$a" ] || gone="$gone $a"
done
if [ -z "$gone" ]; then
	ok "every area of the order is a folder of lib/"
else
	notok "every area of the order is a folder of lib/"
	diag "not a folder:$gone"
fi

# lib/README lists each module in its area: a line "  NAME  what it is"
# under the area's heading, or, for a family's part, NAME.c named in the
# area's lines (cgroup1.c, bridgeapi.c); and it lists nothing that is not
# there.
awk '
/^[a-z]+$/ { area = $1; next }
area != "" && /^  [a-z]/ { print "module", area, $1 }
area != "" { n = split($0, w, /[^a-z0-9_.]+/)
	for (i = 1; i <= n; i++) if (w[i] ~ /\.c$/) print "part", area, w[i] }
' lib/README >"$tmp/readme"
miss=""
for src in lib/*/*.c; do
	a=${src#lib/}
	a=${a%%/*}
	m=${src##*/}
	m=${m%.c}
	grep -qx "module $a $m" "$tmp/readme" ||
	    grep -qx "part $a $m.c" "$tmp/readme" || miss="$miss $a/$m"
done
stale=$(awk '$1 == "module" { print $2 "/" $3 }' "$tmp/readme" |
    while read -r am; do
	[ -e "lib/$am.c" ] || [ -e "lib/$am.h" ] || printf ' %s' "$am"
done)
if [ -z "$miss$stale" ]; then
	ok "lib/README lists every module in its area, and no other"
else
	notok "lib/README lists every module in its area, and no other"
	[ -n "$miss" ] && diag "not listed in its area:$miss"
	[ -n "$stale" ] && diag "listed, not there:$stale"
fi

dirs=$(sed -n 's/^LIB_DIRS *= *//p' Makefile | tr -s ' ')
if [ "$dirs" = "$order" ]; then
	ok "the Makefile's LIB_DIRS is the order"
else
	notok "the Makefile's LIB_DIRS is the order"
	diag "LIB_DIRS: $dirs" "order:    $order"
fi

# No call from an area into a higher one, area by area.
upward . "$bdir" "$order" >"$tmp/up"
if grep -q '^missing ' "$tmp/up"; then
	notok "every lib source has its object (make B=$B all)"
	diag "$(grep '^missing ' "$tmp/up" | head -5)"
fi
for a in $order; do
	if grep -q "^$a " "$tmp/up"; then
		notok "lib/$a calls no higher area"
		grep "^$a " "$tmp/up" | while read -r _ from to sym; do
			diag "lib/$from.o calls $sym of lib/$to.o"
		done
	else
		ok "lib/$a calls no higher area"
	fi
done

echo "1..$n"
