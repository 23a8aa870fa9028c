#!/bin/sh
# 0930-slurm.sh: sbx on a real Slurm cluster (issue 33; sbx-slurm(7)).
# A one-node cluster on loopback (tests/helpers/slurm-cluster.sh: munged,
# slurmctld and slurmd of Debian, a generated slurm.conf, everything in
# this test's temp dir), the SPANK plugin build/lib/slurm/sbx.so in its
# plugstack.conf, and jobs submitted as uid 65534 (a cluster's jobs are
# users', never root's) whose state roots are home=DIR/%u:
#   srun --sbx=alice runs in alice's sandbox (hostname sbx, the sandbox's
#   uid, loopback only, HOME the agent's home; the listed variables in,
#   others not); sbatch --sbx writes its output file; without --sbx under
#   default=off nothing changes, under default=on the step is sandboxed;
#   --sbx-network=outbound beyond max_network=proxy fails with the reason;
#   a node that cannot run sbx fails the step on its stderr, the command
#   never runs; the health check drains a node whose preflight is blocked
#   (a state root that is a regular file) with the reason, resumes it when
#   ready, and leaves an administrator's drain alone.
# Every daemon is stopped and the temp dir removed at the end, even on
# failure; the last test checks that nothing of the cluster still runs.
# Emits TAP.  Skips (with the reason) only where Slurm cannot start: not
# root, the daemons not installed, sbx.so not built.
# sbx-test: root
# shellcheck disable=SC2016 # the sh -c checks take their values as $1, $2
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$PWD
B=${SBX_TEST_BUILD:-${B:-build}}
case $B in
/*) bdir=$B ;;
*) bdir=$PWD/$B ;;
esac

n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; }
diag() { printf '%s\n' "$@" | sed 's/^/# /'; }
bail() { echo "1..0 # SKIP $1"; exit 0; }
# check NAME COMMAND...: one assertion.
check() {
	name=$1
	shift
	if "$@"; then ok "$name"; else notok "$name"; fi
}
has() { printf '%s\n' "$1" | grep -qxF -- "$2"; }
contains() { case $1 in *"$2"*) return 0 ;; esac; return 1; }

. tests/helpers/slurm-cluster.sh
why=$(slurm_cluster_can_start)
[ -z "$why" ] || bail "$why"
[ -f "$bdir/lib/slurm/sbx.so" ] ||
    bail "sbx.so is not built (Slurm's headers: scripts/deps.sh installs libslurm-dev)"
[ -x "$bdir/bin/sbx" ] || bail "not built: make B=$B all"
command -v setpriv >/dev/null 2>&1 || bail "setpriv is not installed"

T=$(mktemp -d "${SBX_TEST_TMPDIR:-/tmp}/sbx-slurm.XXXXXX") || exit 1
chmod 0755 "$T"
C=$T/cluster
cleanup() {
	slurm_cluster_stop "$C"
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

SBX=$bdir/bin/sbx
export SBX_EXEC_PATH="$bdir/libexec/sbx" SBX_NO_CREATE_USER=1
unset SBX_HOME SBX_AGENT SBX_JSON
SO=$bdir/lib/slurm/sbx.so
SITE="sbx=$SBX libexec=$bdir/libexec/sbx home=$T/sbx/%u"
# plugstack ARGS...: the plugin's line; srun and slurmstepd read the file
# at every step.
plugstack() { printf 'required %s %s %s\n' "$SO" "$SITE" "$*" >"$C/plugstack.conf"; }

mkdir -p "$C"
# shellcheck disable=SC2086 # the site's arguments, one word each
if ! slurm_cluster_start "$C" "$SO" $SITE; then
	slurm_cluster_logs "$C" | sed 's/^/# /'
	bail "the one-node cluster did not start (logs above)"
fi
echo "1..24"

# The jobs' user: uid 65534, in a work directory of its own; its state
# root home=$T/sbx/%u is provisioned as it would be on a node.
install -d -o 65534 -g 65534 "$T/sbx" "$T/work"
asn() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
cd "$T/work" || exit 1
asn "$SBX" provision -q --home "$T/sbx/nobody" --agent alice
check "sbx provision --agent alice in the user's state root" \
    [ -d "$T/sbx/nobody/workspace/agents/alice" ]
AHOME=$T/sbx/nobody/workspace/agents/alice

# 1. srun --sbx=alice: the sandbox.
out=$(asn env MYVAR=exported NOTLISTED=secret srun --sbx-env=MYVAR \
    --sbx=alice -- sh -c 'hostname; id -u; echo "home=$HOME"; pwd;
	awk "NR > 2 { print \$1 }" /proc/net/dev; echo "job=$SLURM_JOB_ID";
	echo "my=${MYVAR:-} not=${NOTLISTED:-}"; echo hi >"$HOME/from-slurm"' \
    2>"$T/err")
rc=$?
diag "$out" "$(cat "$T/err")"
check "srun --sbx=alice: exit 0" [ "$rc" -eq 0 ]
check "  the sandbox's hostname (sbx), not the node's ($(hostname))" has "$out" sbx
check "  the sandbox's uid (65534, the job's user mapped)" has "$out" 65534
check "  HOME is the agent's home, and the task starts there" \
    sh -c 'has() { printf "%s\n" "$1" | grep -qxF -- "$2"; };
	has "$1" home=/workspace/agents/alice && has "$1" /workspace/agents/alice' _ "$out"
check "  no network: loopback only" \
    [ "$(printf '%s\n' "$out" | grep -c ':$')" -eq 1 -a -n "$(printf '%s\n' "$out" | grep -x 'lo:')" ]
check "  SLURM_JOB_ID passed in; --sbx-env=MYVAR passed, an unlisted variable not" \
    sh -c 'printf "%s\n" "$1" | grep -q "^job=[0-9]" &&
	printf "%s\n" "$1" | grep -qx "my=exported not="' _ "$out"
check "  what it wrote in HOME is in alice's home on the node" \
    [ "$(cat "$AHOME/from-slurm" 2>/dev/null)" = hi ]

# 2. sbatch --sbx: the batch script in the sandbox, its output file.
cat >"$T/work/job.sh" <<'EOF'
#!/bin/sh
hostname
id -u
echo "home=$HOME"
EOF
chmod 0755 "$T/work/job.sh"
out=$(asn sbatch --wait --sbx=alice -o "$T/work/job.out" "$T/work/job.sh" 2>&1)
rc=$?
diag "$out"
check "sbatch --wait --sbx=alice job.sh: exit 0" [ "$rc" -eq 0 ]
jo=$(cat "$T/work/job.out" 2>/dev/null)
diag "job.out: $jo"
check "  its output file is written, from the sandbox (sbx, 65534, the agent's home)" \
    [ "$jo" = "$(printf 'sbx\n65534\nhome=/workspace/agents/alice')" ]

# 3. default=off: a step without --sbx is unchanged.
out=$(asn srun -- sh -c 'hostname; id -u; echo "home=$HOME"' 2>&1)
rc=$?
diag "$out"
check "default=off, srun without --sbx: exit 0" [ "$rc" -eq 0 ]
check "  unchanged: the node's hostname, not the sandbox's" \
    sh -c 'printf "%s\n" "$1" | head -n 1 | grep -qxF "$(hostname)" &&
	! printf "%s\n" "$1" | grep -qx "home=/workspace/.*"' _ "$out"

# 4. A refusal in srun: beyond the site's maximum.
out=$(asn srun --sbx=alice --sbx-network=outbound -- touch "$T/work/ran" 2>&1)
rc=$?
diag "$out"
check "--sbx-network=outbound beyond max_network=proxy: the step fails" [ "$rc" -ne 0 ]
check "  with the reason" contains "$out" \
    "--sbx-network=outbound is beyond this site's maximum (max_network=proxy in plugstack.conf)"
check "  and the command never ran" [ ! -e "$T/work/ran" ]

# 5. A refusal on the node: sbx missing there; an agent not provisioned.
plugstack "sbx=$T/no/such/sbx"
out=$(asn srun --sbx=alice -- touch "$T/work/ran" 2>&1)
rc=$?
diag "$out"
check "sbx missing on the node: the step fails, the reason on its stderr" \
    sh -c '[ "$1" -ne 0 ] && printf "%s\n" "$2" |
	grep -q "^sbx: .*/no/such/sbx: No such file or directory.*the step does not run unsandboxed"' \
    _ "$rc" "$out"
plugstack
out=$(asn srun --sbx=../../etc -- touch "$T/work/ran" 2>&1)
rc=$?
diag "$out"
check "a hostile agent name (--sbx=../../etc): the step fails, the reason said" \
    sh -c '[ "$1" -ne 0 ] && printf "%s\n" "$2" | grep -q "not an agent name"' _ "$rc" "$out"
check "  neither command ran, nothing made outside the state root" \
    sh -c '[ ! -e "$1/work/ran" ] && [ ! -e "$1/sbx/etc" ] && [ "$(ls "$1/sbx")" = nobody ]' _ "$T"

# 6. default=on: every step in the sandbox, no --sbx needed.
plugstack default=on agent=alice
out=$(asn srun -- sh -c 'hostname; echo "home=$HOME"' 2>&1)
rc=$?
diag "$out"
check "default=on agent=alice, srun without --sbx: sandboxed" \
    sh -c '[ "$1" -eq 0 ] && [ "$2" = "$(printf "sbx\nhome=/workspace/agents/alice")" ]' \
    _ "$rc" "$out"
plugstack

# 7. The health check (scripts/slurm-health.sh): blocked drains, ready
# resumes, another reason's drain stays.
"$SBX" provision -q --home "$T/rootstate"
echo data >"$T/blocked"
node_info() { scontrol show node "$SLURM_NODE" 2>&1; }
out=$(sh "$TOP/scripts/slurm-health.sh" --sbx "$SBX" --home "$T/blocked" --node "$SLURM_NODE" 2>&1)
rc=$?
info=$(node_info)
diag "$out" "$(printf '%s\n' "$info" | grep -E 'State=|Reason=')"
check "health check, preflight blocked: exit 1, the node drained" \
    sh -c '[ "$1" -eq 1 ] && printf "%s\n" "$2" | grep -q "State=[A-Z+]*DRAIN"' _ "$rc" "$info"
check "  the reason from the report in scontrol show node" contains "$info" \
    "Reason=sbx: blocked: location_wrong_type: the state root is a regular file"
out=$(sh "$TOP/scripts/slurm-health.sh" --sbx "$SBX" --home "$T/rootstate" --node "$SLURM_NODE" 2>&1)
rc=$?
info=$(node_info)
diag "$out" "$(printf '%s\n' "$info" | grep -E 'State=|Reason=')"
check "health check, preflight ready: exit 0, the node resumed" \
    sh -c '[ "$1" -eq 0 ] && ! printf "%s\n" "$2" | grep -q "DRAIN" &&
	! printf "%s\n" "$2" | grep -q "Reason=sbx"' _ "$rc" "$info"
scontrol update nodename="$SLURM_NODE" state=drain reason="maintenance by the admin"
sh "$TOP/scripts/slurm-health.sh" --sbx "$SBX" --home "$T/rootstate" --node "$SLURM_NODE" >/dev/null 2>&1
info=$(node_info)
check "  an administrator's drain is left alone" \
    sh -c 'printf "%s\n" "$1" | grep -q "DRAIN" &&
	printf "%s\n" "$1" | grep -q "Reason=maintenance by the admin"' _ "$info"
scontrol update nodename="$SLURM_NODE" state=resume

# 8. Stopped: nothing of the cluster still runs.
cd / || exit 1
slurm_cluster_stop "$C"
left=$(_slurm_pids "$T")
for p in $left; do diag "left: $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"; done
check "every daemon and step of the cluster is gone" [ -z "$left" ]
