#!/bin/sh
# lint.sh: the checks behind `make lint`.
#
#   1. clang-format on the lines a change touched (clang-format-diff over
#      `git diff -U0` against LINT_BASE, default HEAD, plus untracked C
#      files): the tree is not reformatted, a new violation fails.  Hunks
#      that differ from clang-format only in the width of blanks inside
#      lines pass: KNF declaration alignment is more than clang-format 14
#      can express (see .clang-format);
#   2. ShellCheck on scripts/*.sh tests/*.sh tests/integration/*.sh and the
#      bash completion (bats files are left out: too noisy as bash);
#   3. zsh -n on the zsh completion;
#   4. mandoc -Tlint -W warning on man/*;
#   5. cppcheck on lib/ and cmd/;
#   6. comments that cite a file that is not in the tree
#      (scripts/comment-paths.py: a moved file leaves them behind).
#
# A missing tool is reported and skipped (a failure with LINT_STRICT=1).
# Exits 1 when a check fails.
set -u
cd "$(dirname "$0")/.." || exit 70

STRICT=${LINT_STRICT:-0}
failed=""
skipped=""

note() { printf 'lint: %s\n' "$*"; }
fail() { failed="$failed $1"; note "FAIL: $1"; }
missing() {
	skipped="$skipped $1"
	note "skip: $1 is not installed"
	[ "$STRICT" = 1 ] && failed="$failed $1(missing)"
}
# The existing files among the arguments (globs that matched nothing drop out).
existing() {
	for f in "$@"; do
		[ -e "$f" ] && printf '%s\n' "$f"
	done
}

# --- clang-format ------------------------------------------------------------
# The C files a change touched: tracked ones against the base, new ones whole.
cf_diff() {
	git diff -U0 --no-color "$1" -- '*.c' '*.h'
	git ls-files --others --exclude-standard -- '*.c' '*.h' |
	while IFS= read -r f; do
		git diff --no-index -U0 --no-color /dev/null "$f"
	done
}
# Keep the hunks of clang-format-diff's output that clang-format would
# change in more than the blanks it puts between words: a hunk passes when
# its words are the same and the line starts that KNF fixes (a brace alone
# on its line, `} else`, #) are where clang-format puts them, its lines fit
# in 80 columns and are indented with tabs and at most 4 spaces.  So
# declaration alignment and where a long statement wraps are left to the
# author; `if(x)`, `char* p`, `) {` of a function, a spaces-only indent or
# an 81st column are not.
cf_real() {
	awk '
	function side(s, l,    lead, t) {
		match(l, /^[ \t]*/)
		lead = substr(l, 1, RLENGTH)
		t = substr(l, RLENGTH + 1)
		sub(/[ \t]*\\$/, "", t)
		gsub(/[ \t]+/, " ", t)
		sub(/ $/, "", t)
		if (t == "")
			return s
		if (t == "{" || t == "}" || t ~ /^(} *)?else/ || t ~ /^#/)
			return s "\n" t
		return s " " t
	}
	# Where a statement wraps is the author'"'"'s: no blank counts next
	# to brackets, member access, commas and semicolons.
	function words(s) {
		gsub(/[ \n]*\\?\n[ ]*/, "\n", s)
		gsub(/\( /, "(", s); gsub(/\[ /, "[", s)
		gsub(/ \)/, ")", s); gsub(/ \]/, "]", s)
		gsub(/ ?-> ?/, "->", s); gsub(/ ;/, ";", s)
		return s
	}
	function width(l,    i, c, w) {
		w = 0
		for (i = 1; i <= length(l); i++) {
			c = substr(l, i, 1)
			w = c == "\t" ? w + 8 - w % 8 : w + 1
		}
		return w
	}
	function flush() {
		if (hunk != "" && (words(old) != words(new) || badline)) {
			if (file != shown)
				print file
			shown = file
			printf "%s", hunk
			bad++
		}
		hunk = ""; old = ""; new = ""; badline = 0
	}
	/^--- / { flush(); next }
	/^\+\+\+ / { flush(); file = $0; next }
	/^@@/ { flush(); hunk = $0 "\n"; top = 0; next }
	# Four spaces alone are KNF'"'"'s continuation of a definition that
	# starts in column 0 (its parameters); anywhere else, a spaces-only
	# indent is not.
	/^-/ {
		l = substr($0, 2)
		hunk = hunk $0 "\n"
		old = side(old, l)
		cont = top && l ~ /^    [^ \t]/
		if (width(l) > 80 || l ~ /^\t* {5,}/ ||
		    (l ~ /^ +[^ *]/ && !cont))
			badline = 1
		top = l ~ /^[A-Za-z_]/ || cont
		next
	}
	/^\+/ { hunk = hunk $0 "\n"; new = side(new, substr($0, 2)); next }
	{
		if (hunk != "")
			hunk = hunk $0 "\n"
		l = substr($0, 2)
		top = l ~ /^[A-Za-z_]/ || (top && l ~ /^    [^ \t]/)
	}
	END { flush(); exit bad > 0 }
	'
}
cfd=""
for c in clang-format-diff clang-format-diff-14; do
	command -v "$c" >/dev/null 2>&1 && { cfd=$c; break; }
done
if [ ! -f .clang-format ]; then
	note "skip: clang-format (no .clang-format)"
elif ! command -v clang-format >/dev/null 2>&1 || [ -z "$cfd" ]; then
	missing clang-format
elif ! git rev-parse --git-dir >/dev/null 2>&1; then
	note "skip: clang-format (not a git checkout: no change to check)"
else
	base=${LINT_BASE:-HEAD}
	if ! git rev-parse --verify -q "$base^{commit}" >/dev/null; then
		fail "clang-format: LINT_BASE $base is not a commit"
	else
		n=$(cf_diff "$base" | grep -c '^+++ ')
		if cf_diff "$base" | "$cfd" -p1 | cf_real; then
			note "clang-format: changed lines of $n files since" \
			    "$base are formatted"
		else
			fail "clang-format(changed-lines)"
		fi
	fi
fi

# --- shellcheck --------------------------------------------------------------
if ! command -v shellcheck >/dev/null 2>&1; then
	missing shellcheck
else
	files=$(existing scripts/*.sh tests/*.sh tests/integration/*.sh)
	n=0
	for f in $files; do
		n=$((n + 1))
		shellcheck -x "$f" || fail "shellcheck $f"
	done
	if [ -e completions/sbx.bash ]; then
		n=$((n + 1))
		shellcheck -x -s bash completions/sbx.bash ||
		    fail "shellcheck completions/sbx.bash"
	fi
	note "shellcheck: checked $n files"
fi

# --- zsh completion ----------------------------------------------------------
if [ -e completions/_sbx ]; then
	if command -v zsh >/dev/null 2>&1; then
		zsh -n completions/_sbx || fail "zsh -n completions/_sbx"
		note "zsh -n: checked completions/_sbx"
	else
		note "skip: zsh -n completions/_sbx (zsh is not installed)"
	fi
fi

# --- mandoc ------------------------------------------------------------------
if ! command -v mandoc >/dev/null 2>&1; then
	missing mandoc
else
	files=$(existing man/*.[1-9])
	n=0
	for f in $files; do
		n=$((n + 1))
		# Warnings and worse; style messages are advice.
		out=$(mandoc -Tlint -W warning "$f" 2>&1)
		rc=$?
		if [ -n "$out" ] || [ "$rc" -ne 0 ]; then
			printf '%s\n' "$out"
			fail "mandoc $f"
		fi
	done
	note "mandoc -Tlint: checked $n pages"
fi

# --- cppcheck ----------------------------------------------------------------
if ! command -v cppcheck >/dev/null 2>&1; then
	note "skip: cppcheck is not installed"
else
	# jansson.h is read so that its iteration macros are known.
	inc=$(pkg-config --variable=includedir jansson 2>/dev/null)
	[ -n "$inc" ] || inc=/usr/include
	# The build machine's architecture: seccomp.c refuses to build
	# for one whose system call table nobody reviewed.
	set -- --quiet --error-exitcode=1 --std=c11 -D_GNU_SOURCE \
	    "-D__$(uname -m | tr - _)__"
	# lib/ is grouped by area; every folder is on the include path.
	for d in lib/*/; do
		set -- "$@" "-I${d%/}"
	done
	[ -f "$inc/jansson.h" ] && set -- "$@" "--include=$inc/jansson.h"
	cppcheck "$@" lib cmd || fail "cppcheck"
	note "cppcheck: checked lib cmd"
fi

# --- comments citing files ---------------------------------------------------
if ! command -v python3 >/dev/null 2>&1; then
	missing python3
else
	python3 scripts/comment-paths.py || fail "comment-paths"
	note "comment-paths: checked the comments' file names"
fi

if [ -n "$failed" ]; then
	note "failed:$failed"
	exit 1
fi
note "all checks passed${skipped:+ (skipped:$skipped)}"
exit 0
