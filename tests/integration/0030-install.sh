#!/bin/bash
# 0030-install.sh: `make install PREFIX=X` installs programs that look in X.
#
# The front-end finds its commands in the libexec directory compiled into
# it.  A plain `make` followed by `make install PREFIX=X` once installed a
# front-end that looked in /usr/local/libexec; the build now records its
# install paths (build/SBX-PREFIX) and rebuilds what embeds them.  Two
# prefixes in a row, then a DESTDIR staging that must not rebuild.  The
# build is a copy of the tested one, so nothing here touches it.  TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
SBX_TEST_BUILD=${SBX_TEST_BUILD:-$(pwd)/build}

n=0
failures=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1))
	failures=$((failures + 1))
	echo "not ok $n - $1"
	shift
	for l in "$@"; do printf '#   %s\n' "$l"; done
}

if [ ! -w . ] || [ ! -e "$SBX_TEST_BUILD/lib/libsbx.a" ]; then
	echo "1..0 # skip needs a writable checkout and the build's objects"
	exit 0
fi
echo "1..7"
tmp=$(mktemp -d "${SBX_TEST_TMPDIR:-/tmp}/0030-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset SBX_EXEC_PATH SBX_HOME
cp -a "$SBX_TEST_BUILD" "$tmp/b"

make -s B="$tmp/b" PREFIX="$tmp/p1" install >"$tmp/log1" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "$tmp/p1/libexec/sbx" "$tmp/p1/bin/sbx"; then
	ok "install PREFIX=p1: the front-end embeds p1's libexec"
else
	not_ok "install PREFIX=p1" "rc=$rc" "$(tail -5 "$tmp/log1")"
fi

out=$("$tmp/p1/bin/sbx" provision --help 2>&1)
case "$out" in
*"sbx provision"*) ok "p1: sbx provision dispatches to p1's sbx-provision" ;;
*) not_ok "p1: sbx provision dispatches" "$out" ;;
esac

make -s B="$tmp/b" PREFIX="$tmp/p2" install >"$tmp/log2" 2>&1
rc=$?
rm -rf "$tmp/p1"
if [ $rc -eq 0 ] && grep -q "$tmp/p2/libexec/sbx" "$tmp/p2/bin/sbx" &&
    ! grep -q "$tmp/p1/" "$tmp/p2/bin/sbx"; then
	ok "install PREFIX=p2 right after: rebuilt for p2"
else
	not_ok "install PREFIX=p2" "rc=$rc" "$(tail -5 "$tmp/log2")"
fi

out=$("$tmp/p2/bin/sbx" --list-commands 2>&1)
case "$out" in
*provision*proxy*|*proxy*provision*) ok "p2 (p1 removed): --list-commands finds p2's programs" ;;
*) not_ok "p2: --list-commands" "$out" ;;
esac

out=$("$tmp/p2/bin/sbx" preflight --help 2>&1)
case "$out" in
*"sbx preflight"*) ok "p2: sbx preflight dispatches" ;;
*) not_ok "p2: sbx preflight dispatches" "$out" ;;
esac

out=$(make B="$tmp/b" PREFIX="$tmp/p2" DESTDIR="$tmp/stage" install 2>&1)
if printf '%s\n' "$out" | grep -qE '^(cc|gcc|clang) '; then
	not_ok "DESTDIR staging rebuilt something" "$(printf '%s\n' "$out" | grep -E '^(cc|gcc|clang) ' | head -3)"
else
	ok "DESTDIR staging with the same PREFIX rebuilds nothing"
fi
if [ -x "$tmp/stage$tmp/p2/bin/sbx" ] && grep -q "$tmp/p2/libexec/sbx" "$tmp/stage$tmp/p2/bin/sbx" &&
    ! grep -q "$tmp/stage" "$tmp/stage$tmp/p2/bin/sbx"; then
	ok "DESTDIR: staged under DESTDIR, looks in PREFIX"
else
	not_ok "DESTDIR staging" "$(find "$tmp/stage" 2>&1 | head -5)"
fi
exit $((failures > 0))
