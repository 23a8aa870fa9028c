#!/bin/sh
# lint.sh: the checks behind `make lint`.
#
#   1. clang-format --dry-run on cmd/*.c lib/*.c tests/unit/*.c and
#      tests/helpers/*.c against .clang-format; report-only unless
#      LINT_STRICT=1, since KNF declaration alignment is more than
#      clang-format can express;
#   2. ShellCheck on scripts/*.sh tests/*.sh tests/integration/*.sh and the
#      bash completion (bats files are left out: too noisy as bash);
#   3. zsh -n on the zsh completion;
#   4. mandoc -Tlint -W warning on man/*;
#   5. cppcheck on lib/ and cmd/.
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
if [ ! -f .clang-format ]; then
	note "skip: clang-format (no .clang-format)"
elif ! command -v clang-format >/dev/null 2>&1; then
	missing clang-format
else
	files=$(existing cmd/*.c lib/*.c tests/unit/*.c tests/helpers/*.c)
	n=0
	bad=""
	for f in $files; do
		n=$((n + 1))
		clang-format --dry-run --Werror "$f" >/dev/null 2>&1 ||
		    bad="$bad $f"
	done
	note "clang-format: checked $n files"
	if [ -n "$bad" ]; then
		if [ "$STRICT" = 1 ]; then
			# shellcheck disable=SC2086
			clang-format --dry-run --Werror $bad 2>&1 | head -n 200
			fail "clang-format:$bad"
		else
			note "clang-format: not formatted as .clang-format says" \
			    "(report-only; LINT_STRICT=1 to enforce):$bad"
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
	set -- --quiet --error-exitcode=1 --std=c11 -D_GNU_SOURCE -Ilib
	[ -f "$inc/jansson.h" ] && set -- "$@" "--include=$inc/jansson.h"
	cppcheck "$@" lib cmd || fail "cppcheck"
	note "cppcheck: checked lib cmd"
fi

if [ -n "$failed" ]; then
	note "failed:$failed"
	exit 1
fi
note "all checks passed${skipped:+ (skipped:$skipped)}"
exit 0
