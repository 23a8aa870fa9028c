# slurm-cluster.sh: a one-node Slurm cluster on loopback, for
# tests/integration/0930-slurm.sh and scripts/bench-slurm.sh (sourced;
# POSIX sh).  Everything lives in one directory: munge's key, socket and
# log, slurm.conf and plugstack.conf, the controller's state, the node's
# spool, every pid file and log.  Nothing outside it is written; no
# systemd, no cgroup plugin (proctrack/linuxproc, task/none).
#
#   slurm_cluster_can_start        why not ("" when it can), on stdout
#   slurm_cluster_start DIR SO ARGS   munged, slurmctld, slurmd; SO is
#                                  sbx.so, ARGS its plugstack.conf
#                                  arguments; 0 when the node is idle
#   slurm_cluster_stop DIR         every daemon of DIR killed (pid files,
#                                  then anything whose command line
#                                  names DIR), waited for
#
# After start: SLURM_CONF is exported (srun, sbatch, scontrol read it);
# SLURM_NODE is the node's name.  Root only: slurmd must start
# slurmstepd as root.

SLURM_NODE=sbxnode

slurm_cluster_can_start() {
	[ "$(id -u)" -eq 0 ] || { echo "not root (slurmd runs as root)"; return; }
	for t in munged slurmctld slurmd srun sbatch scontrol; do
		command -v "$t" >/dev/null 2>&1 ||
		    { echo "$t is not installed (scripts/deps.sh installs munge, slurmctld, slurmd)"; return; }
	done
	echo ""
}

# A TCP port nothing listens on, in _slurm_port (not printed: a
# subshell would forget the ports already given), from a range no
# daemon of the machine uses by default, past the last one given.
_slurm_port=$(( 20000 + $$ % 20000 ))
_slurm_free_port() {
	while :; do
		_slurm_port=$((_slurm_port + 1))
		ss -Htan "sport = :$_slurm_port" 2>/dev/null | grep -q . ||
		    return 0
	done
}

slurm_cluster_start() {
	_d=$1
	_so=$2
	shift 2
	mkdir -p "$_d/munge" "$_d/state" "$_d/spool" "$_d/log"
	chmod 0755 "$_d" "$_d/munge"
	chmod 0700 "$_d/state" "$_d/spool"
	# munged is strict about its files: the key 0400, owned by us.
	head -c 1024 /dev/urandom >"$_d/munge/munge.key"
	chmod 0400 "$_d/munge/munge.key"
	munged --force --socket="$_d/munge/munge.socket" \
	    --key-file="$_d/munge/munge.key" \
	    --pid-file="$_d/munge/munged.pid" \
	    --log-file="$_d/log/munged.log" \
	    --seed-file="$_d/munge/munged.seed" 2>>"$_d/log/munged.err" ||
	    return 1
	_slurm_free_port
	_ctl_port=$_slurm_port
	_slurm_free_port
	_d_port=$_slurm_port
	_host=$(hostname -s)
	printf '%s\n' "$@" | {
		printf 'required %s' "$_so"
		while IFS= read -r a; do printf ' %s' "$a"; done
		printf '\n'
	} >"$_d/plugstack.conf"
	cat >"$_d/slurm.conf" <<EOF
ClusterName=sbxtest
SlurmctldHost=$_host(127.0.0.1)
SlurmctldPort=$_ctl_port
SlurmdPort=$_d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$_d/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$_d/state
SlurmdSpoolDir=$_d/spool
SlurmctldPidFile=$_d/slurmctld.pid
SlurmdPidFile=$_d/slurmd.pid
SlurmctldLogFile=$_d/log/slurmctld.log
SlurmdLogFile=$_d/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
PlugStackConfig=$_d/plugstack.conf
MailProg=/bin/true
InactiveLimit=0
KillWait=5
MinJobAge=10
NodeName=$SLURM_NODE NodeHostname=$_host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=100 State=UNKNOWN
PartitionName=sbx Nodes=$SLURM_NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
	SLURM_CONF=$_d/slurm.conf
	export SLURM_CONF
	slurmctld -i -f "$SLURM_CONF" >>"$_d/log/slurmctld.err" 2>&1 || return 1
	slurmd -N "$SLURM_NODE" -f "$SLURM_CONF" >>"$_d/log/slurmd.err" 2>&1 ||
	    return 1
	# The node registers within a second or two; up to 30 s on a busy
	# machine.
	_i=0
	while [ $_i -lt 300 ]; do
		case $(sinfo -h -n "$SLURM_NODE" -o %t 2>/dev/null) in
		idle*) return 0 ;;
		esac
		sleep 0.1
		_i=$((_i + 1))
	done
	return 1
}

# The daemons' logs, for a failure's diagnostics.
slurm_cluster_logs() {
	for f in "$1"/log/*; do
		[ -s "$f" ] || continue
		echo "== $f"
		tail -n 15 "$f"
	done
}

# The processes of DIR: its daemons, the steps' slurmstepd (whose
# environment has slurmd's SLURM_CONF) and the steps' own processes (the
# job's environment has srun's): all of them name DIR in their command
# line or their environment, and run in sessions of their own.  The
# caller's session is left out: its commands (this pipeline's own grep
# and sed among them) carry the exported SLURM_CONF too.
_slurm_pids() {
	_sid=$(ps -o sid= -p $$ | tr -d ' ')
	# (the directory on grep's stdin, not in its own command line)
	# shellcheck disable=SC2062 # file names, not a pattern
	printf '%s\n' "$1" | grep -lsF -f - /proc/[0-9]*/cmdline \
	    /proc/[0-9]*/environ 2>/dev/null |
	    sed 's|^/proc/\([0-9]*\)/.*|\1|' | sort -u | while read -r p; do
		s=$(ps -o sid= -p "$p" 2>/dev/null | tr -d ' ')
		[ -n "$s" ] && [ "$s" != "$_sid" ] && echo "$p"
	done
}

slurm_cluster_stop() {
	_d=$1
	[ -n "$_d" ] && [ -d "$_d" ] || return 0
	if [ -n "${SLURM_CONF:-}" ] && [ -s "$_d/slurmctld.pid" ]; then
		scancel --full --quiet --user=root 2>/dev/null
		scancel --full --quiet --user=nobody 2>/dev/null
	fi
	for pf in "$_d/slurmd.pid" "$_d/slurmctld.pid" "$_d/munge/munged.pid"; do
		[ -s "$pf" ] && kill "$(cat "$pf")" 2>/dev/null
	done
	_i=0
	while [ -n "$(_slurm_pids "$_d")" ] && [ $_i -lt 50 ]; do
		sleep 0.1
		_i=$((_i + 1))
	done
	for p in $(_slurm_pids "$_d"); do
		kill -KILL "$p" 2>/dev/null
	done
	_i=0
	while [ -n "$(_slurm_pids "$_d")" ] && [ $_i -lt 50 ]; do
		sleep 0.1
		_i=$((_i + 1))
	done
	return 0
}
