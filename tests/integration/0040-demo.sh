#!/bin/bash
# 0040-demo.sh: `make demo`'s script works as the README says: as root and
# (in the unprivileged pass) as a plain user.  TAP.
# sbx-test: unprivileged
set -u
cd "$(dirname "$0")/../.." || exit 1
SBX_TEST_BUILD=${SBX_TEST_BUILD:-$(pwd)/build}
echo "1..7"
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

# make demo works offline once the Debian packages are here: its deps step
# (scripts/deps.sh, no argument) never reaches for npm, whose test-only
# client (98 packages) only the MCP tests use.  A copy of the script in a
# scratch tree, with npm, dpkg-query and apt-get stand-ins that record
# being called: nothing is installed, nothing is fetched.
t=$(mktemp -d "$TMPDIR/0040-deps.XXXXXX")
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/scripts" "$t/tests/mcp-client" "$t/bin"
cp scripts/deps.sh "$t/scripts/"
cp tests/mcp-client/package.json tests/mcp-client/package-lock.json "$t/tests/mcp-client/"
for c in npm apt-get sudo; do
	printf '#!/bin/sh\necho "%s $*" >>"%s/called"\nexit 1\n' "$c" "$t" >"$t/bin/$c"
done
printf '#!/bin/sh\nprintf "install ok installed"\n' >"$t/bin/dpkg-query"
chmod +x "$t/bin/"*
out=$(PATH="$t/bin:$PATH" sh "$t/scripts/deps.sh" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ ! -e "$t/called" ]
check $? "scripts/deps.sh (make demo's deps) calls no npm: $(tr '\n' ' ' 2>/dev/null <"$t/called")"
out=$(PATH="$t/bin:$PATH" sh "$t/scripts/deps.sh" --mcp-client 2>&1)
grep -q '^npm ci' "$t/called" 2>/dev/null
check $? "scripts/deps.sh --mcp-client installs the test client with npm ci"
# make demo builds with the machine's cores (a sub-make with -jN), and
# keeps a -j of the caller's.
if [ ! -f Makefile ] || ! command -v make >/dev/null 2>&1; then
	# The unprivileged pass runs from a copy of tests/ and scripts/.
	n=$((n + 1))
	echo "ok $n - make demo's build # skip no Makefile here (or no make)"
else
	out=$(make -n demo 2>&1 | grep -E '^(make|sh|B=)' | grep -E 'all$|deps.sh')
	printf '%s\n' "$out" | grep -q -- "-j$(nproc) all\$" &&
	    ! printf '%s\n' "$out" | grep -q -- '--mcp-client' &&
	    make -n -j1 demo 2>&1 | grep -E 'all$' | grep -qv -- "-j$(nproc) all"
	check $? "make demo builds with -j$(nproc) (the machine's cores) and asks deps.sh for no npm client"
fi
