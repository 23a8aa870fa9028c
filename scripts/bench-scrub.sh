#!/bin/bash
# bench-scrub.sh: the cost of secrets (issue 14).
#
#   SIZE_MB=1024 NAIVE_MB=128 ROUNDS=5 RUNS=30 scripts/bench-scrub.sh
#
# 1. Scrubber throughput: SIZE_MB of mixed text (log-like lines, with the
#    100 secrets of the agent and their base64 and hex forms sprinkled in)
#    streamed from a pipe through `sbx secret scrub` (the filter `sbx exec`
#    runs on a sandbox's output), against `cat` on the same pipe and
#    against a naive filter that replaces each raw value in turn
#    (bytes.replace per secret per chunk, on NAIVE_MB only: it is slow).
#    The text is a 16 MiB block made once, sent SIZE_MB/16 times; one line
#    in EVERY (default 50: dense, ~5,600 redactions per block) carries a
#    secret, raw, in base64 or in hex.  Target: >= 500 MB/s.
# 2. Injection: `sbx exec -- /bin/true` for an agent with 20 secrets
#    against an agent with none, alternating rounds of hyperfine; p50.
#    Target: <= 0.5 ms more.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
SIZE_MB=${SIZE_MB:-1024}
NAIVE_MB=${NAIVE_MB:-128}
EVERY=${EVERY:-50}
ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-30}
. scripts/bench-lib.sh
bench_need bench-scrub python3
BIN=$(cd "$B" && pwd)
SBX="$BIN/bin/sbx"
export SBX_EXEC_PATH="$BIN/libexec/sbx" SBX_NO_CREATE_USER=1

tmp=$(mktemp -d /tmp/sbx-bench-scrub.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
chmod 0755 "$tmp"
export SBX_HOME="$tmp/state"

# 100 secrets of 20 to 60 bytes, in the store and in a file for the text.
python3 - "$tmp/secrets" <<'EOF'
import random, string, sys
random.seed(14)
al = string.ascii_letters + string.digits + "-_./+="
with open(sys.argv[1], "w") as f:
    for i in range(100):
        n = random.randint(20, 60)
        f.write("S%03d %s\n" % (i, "".join(random.choice(al) for _ in range(n))))
EOF
while read -r name val; do
	printf '%s' "$val" | "$SBX" secret set "$name" -q
done <"$tmp/secrets"

python3 - "$tmp/secrets" "$tmp/block" "$EVERY" <<'EOF'
import base64, random, sys
random.seed(1)
p = 1.0 / float(sys.argv[3])
vals = [l.split()[1].encode() for l in open(sys.argv[1])]
words = [b"build", b"error", b"warning:", b"GET", b"/api/v1/items", b"200",
         b"ok", b"compiling", b"src/main.c", b"token=", b"Authorization:",
         b"Bearer", b"{\"id\":", b"42}", b"done", b"in", b"0.13s", b"|", b"->"]
out, size = [], 0
while size < 16 << 20:
    line = b" ".join(random.choice(words) for _ in range(random.randint(4, 14)))
    r = random.random()
    if r < p / 2:
        line += b" " + random.choice(vals)
    elif r < p * 3 / 4:
        line += b" " + base64.b64encode(random.choice(vals))
    elif r < p:
        line += b" " + random.choice(vals).hex().encode()
    out.append(line + b"\n")
    size += len(line) + 1
open(sys.argv[2], "wb").write(b"".join(out)[:16 << 20])
EOF
reps=$(( SIZE_MB / 16 )); [ "$reps" -ge 1 ] || reps=1
nreps=$(( NAIVE_MB / 16 )); [ "$nreps" -ge 1 ] || nreps=1
feed() { local i; for ((i = 0; i < $1; i++)); do cat "$tmp/block"; done; }
now() { date +%s.%N; }
rate() { awk -v mb="$1" -v t0="$2" -v t1="$3" 'BEGIN { printf "%8.0f MB/s %8.2f s", mb * 1.048576 / (t1 - t0), t1 - t0 }'; }

cat >"$tmp/naive.py" <<'EOF'
import sys
vals = [l.split()[0:2] for l in open(sys.argv[1])]
vals = [(v.encode(), b"[REDACTED:" + n.encode() + b"]") for n, v in vals]
inp, out = sys.stdin.buffer, sys.stdout.buffer
while True:
    chunk = inp.read(1 << 20)
    if not chunk:
        break
    for v, r in vals:          # one pass per secret: the naive way
        chunk = chunk.replace(v, r)
    out.write(chunk)
EOF

echo "scrubber: $((reps * 16)) MiB of mixed text, 100 secrets (each in 9 forms), one line in $EVERY with one, from a pipe"
t0=$(now); feed "$reps" | cat >/dev/null; t1=$(now)
printf '%-40s %s\n' "cat" "$(rate $((reps * 16)) "$t0" "$t1")"
t0=$(now); feed "$reps" | /usr/bin/time -f '%U %S' -o "$tmp/cpu" "$SBX" secret scrub >/dev/null; t1=$(now)
printf '%-40s %s\n' "sbx secret scrub" "$(rate $((reps * 16)) "$t0" "$t1")"
# On a shared machine the wall clock says more about the neighbours than
# about the filter: its own CPU time too.
read -r u s <"$tmp/cpu"
printf '%-40s %s\n' "sbx secret scrub, per CPU second" "$(awk -v mb=$((reps * 16)) -v c="$(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}')" 'BEGIN { printf "%8.0f MB/s %8.2f s CPU", mb * 1.048576 / c, c }')"
# user: the scrubber itself; sys: the pipe reads and writes.
printf '%-40s %s\n' "sbx secret scrub, CPU s per GiB" "$(awk -v mb=$((reps * 16)) -v u="$u" -v s="$s" 'BEGIN { printf "%8.2f user %6.2f sys", u * 1024 / mb, s * 1024 / mb }')"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
t0=$(now); feed "$nreps" | python3 "$tmp/naive.py" "$tmp/secrets" >/dev/null; t1=$(now)
printf '%-40s %s\n' "naive per-secret replace ($((nreps * 16)) MiB)" "$(rate $((nreps * 16)) "$t0" "$t1")"
feed 1 | "$SBX" secret scrub >"$tmp/one"
printf 'redactions in one 16 MiB block: %s; raw values left: %s\n' \
    "$(grep -o 'REDACTED:S[0-9]*' "$tmp/one" | wc -l)" \
    "$(cut -d' ' -f2 "$tmp/secrets" | grep -cFf - "$tmp/one" || true)"
echo "target: sbx secret scrub >= 500 MB/s"

# The in-process cost of loading 20 secrets (what sbx exec adds before a
# run: open and check the store, unseal the data key and the values, set
# up the scrubber's patterns; the automaton is built only when the
# command prints), in a loop and in CPU time, so that a busy machine does
# not drown it.
for i in $(seq 0 19); do
	printf 'injected-secret-value-%02d-xxxxxxxx' "$i" | "$SBX" secret set "INJ_$i" --agent twenty -q
done
cat >"$tmp/loadenv.c" <<'EOF'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "secret.h"
static double
cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}
int
main(int argc, char **argv)
{
	struct sbx_secret_env	 v;
	struct sbx_error	 e;
	int			 fd = open(argv[1], O_RDONLY | O_DIRECTORY), i, n = 2000;
	double			 t0, t1, first;

	(void)argc;
	t0 = cpu();
	if (sbx_secret_load_env(fd, argv[2], NULL, 0, NULL, &v, &e) == -1 ||
	    v.n != (size_t)atoi(argv[3])) {
		fprintf(stderr, "load: %s\n", e.message);
		return 1;
	}
	first = cpu() - t0;
	sbx_secret_env_release(&v);
	t0 = cpu();
	for (i = 0; i < n; i++) {
		sbx_secret_load_env(fd, argv[2], NULL, 0, NULL, &v, &e);
		sbx_secret_env_release(&v);
	}
	t1 = cpu();
	printf("%.3f %.3f\n", first * 1e3, (t1 - t0) / n * 1e3);
	return 0;
}
EOF
# Every area of lib/ is on the include path, as in the Makefile.
iq=()
for d in lib/*/; do iq+=(-iquote "${d%/}"); done
# shellcheck disable=SC2046 # pkg-config's flags are words
if cc -D_GNU_SOURCE -O2 "${iq[@]}" -o "$tmp/loadenv" "$tmp/loadenv.c" \
    "$BIN/lib/libsbx.a" $(pkg-config --libs libsodium jansson) 2>"$tmp/cc.err"; then
	read -r f20 l20 < <("$tmp/loadenv" "$SBX_HOME" twenty 20)
	read -r f0 l0 < <("$tmp/loadenv" "$SBX_HOME" none 0)
	echo "injection, in process: CPU ms per load (the first includes libsodium's start)"
	printf '%-40s %8s %8s\n' "agent" "first" "each"
	printf '%-40s %8s %8s\n' "no secrets (no store)" "$f0" "$l0"
	printf '%-40s %8s %8s\n' "20 secrets" "$f20" "$l20"
	echo "target: <= 0.5 ms"
else
	echo "bench-scrub: cannot build the in-process measure: $(head -n 3 "$tmp/cc.err")"
fi

echo
command -v hyperfine >/dev/null || { echo "bench-scrub: hyperfine is not installed (scripts/deps.sh): injection part skipped"; exit 0; }
command -v jq >/dev/null || { echo "bench-scrub: jq is not installed: injection part skipped"; exit 0; }
# The end to end cost: agent twenty (20 secrets) against agent none.
"$SBX" exec -q --agent none -- true
"$SBX" exec -q --agent twenty -- true
bench() {	# name command...: append per-run seconds to $tmp/name
	local name=$1; shift
	hyperfine -N --style none -w 3 -r "$RUNS" --export-json "$tmp/h.json" \
	    "$*" >/dev/null 2>&1
	jq -r '.results[0].times[]' "$tmp/h.json" >> "$tmp/$name"
}
: >"$tmp/none"; : >"$tmp/twenty"
for _ in $(seq "$ROUNDS"); do
	bench none "$SBX exec -q --agent none -- /bin/true"
	bench twenty "$SBX exec -q --agent twenty -- /bin/true"
done
n50=$(bench_pctf "$tmp/none" 50); n95=$(bench_pctf "$tmp/none" 95)
t50=$(bench_pctf "$tmp/twenty" 50); t95=$(bench_pctf "$tmp/twenty" 95)
echo "injection: sbx exec -- /bin/true as uid $(id -u), $((ROUNDS * RUNS)) runs each, alternating rounds"
printf '%-40s %8s %8s %8s\n' "agent" "p50 ms" "p95 ms" "p50 +ms"
printf '%-40s %8s %8s %8s\n' "no secrets" "$n50" "$n95" "+0.00"
d=$(awk -v a="$t50" -v b="$n50" 'BEGIN{printf "%+.2f", a-b}')
printf '%-40s %8s %8s %8s\n' "20 secrets" "$t50" "$t95" "$d"
echo "(noisy on a busy machine: see the in-process figure)"
bench_verdict "20 secrets add to p50 (ms)" "$d" "<=" 0.5
bench_done
