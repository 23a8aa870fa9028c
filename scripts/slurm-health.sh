#!/bin/sh
# slurm-health.sh: sbx's node health check for Slurm (sbx-slurm(7)).
# Installed as $(LIBEXECDIR)/sbx/slurm-health; slurm.conf:
#
#   HealthCheckProgram=/usr/local/libexec/sbx/slurm-health
#   HealthCheckInterval=300
#
# Runs `sbx preflight` on this node.  When the report says the machine
# cannot sandbox (blocked, exit 3; or unproven, exit 2: the probe sandbox
# did not run), the node is drained with the report's first failing
# finding as the reason (`scontrol show node` shows it, prefixed "sbx:").
# When the report is ready again (or only needs_setup: a state root not
# provisioned yet is no machine fault), a node this script drained is
# resumed; a node drained for any other reason is left alone.
#
# Options (slurm.conf gives HealthCheckProgram no arguments: the defaults
# and these variables serve there):
#   --sbx PATH     the front-end (SBX_HEALTH_SBX; default: sbx on PATH,
#                  else /usr/local/bin/sbx)
#   --home DIR     the state root checked (SBX_HEALTH_HOME; default: sbx's
#                  own, /var/lib/sbx for root)
#   --node NAME    the node (default: SLURMD_NODENAME, else hostname -s)
#   --dry-run      print the scontrol command instead of running it
# Exit: 0 the node is fine (or was resumed), 1 it was drained, 64 usage,
# 69 sbx or scontrol missing.
set -u
SBX=${SBX_HEALTH_SBX:-}
HOME_DIR=${SBX_HEALTH_HOME:-}
NODE=${SLURMD_NODENAME:-}
DRY=""
usage() {
	echo "usage: slurm-health [--sbx PATH] [--home DIR] [--node NAME] [--dry-run]" >&2
	exit 64
}
while [ $# -gt 0 ]; do
	case $1 in
	--sbx) [ $# -ge 2 ] || usage; SBX=$2; shift 2 ;;
	--home) [ $# -ge 2 ] || usage; HOME_DIR=$2; shift 2 ;;
	--node) [ $# -ge 2 ] || usage; NODE=$2; shift 2 ;;
	--dry-run) DRY=1; shift ;;
	-h | --help)
		sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*) usage ;;
	esac
done
if [ -z "$SBX" ]; then
	SBX=$(command -v sbx 2>/dev/null || echo /usr/local/bin/sbx)
fi
[ -n "$NODE" ] || NODE=$(hostname -s)
[ -x "$SBX" ] || { echo "slurm-health: $SBX is not installed" >&2; exit 69; }
command -v scontrol >/dev/null 2>&1 ||
    { echo "slurm-health: scontrol is not installed" >&2; exit 69; }

scontrol_do() {
	if [ -n "$DRY" ]; then
		printf 'scontrol'
		printf ' %s' "$@"
		printf '\n'
	else
		scontrol "$@"
	fi
}

if [ -n "$HOME_DIR" ]; then
	report=$("$SBX" preflight --home "$HOME_DIR" 2>&1)
else
	report=$("$SBX" preflight 2>&1)
fi
rc=$?
case $rc in
2 | 3)
	# The first finding that failed, as "code: title" (the text report's
	# "  [blocked/failed] code: title" lines); a reason stays one line.
	why=$(printf '%s\n' "$report" | sed -n 's/^ *\[blocked\/[a-z_]*\] //p' |
	    head -n 1)
	[ -n "$why" ] || why=$(printf '%s\n' "$report" |
	    sed -n 's/^ *\[warning\/failed\] //p' | head -n 1)
	[ -n "$why" ] || why="preflight exit $rc"
	state=blocked
	[ $rc -eq 2 ] && state=unproven
	reason=$(printf 'sbx: %s: %s' "$state" "$why" | tr -d '"' | cut -c1-200)
	scontrol_do update nodename="$NODE" state=drain reason="$reason" ||
	    exit 69
	exit 1
	;;
0 | 1)
	info=$(scontrol show node "$NODE" 2>/dev/null)
	case $info in
	*"Reason=sbx: "*)
		case $info in
		*DRAIN*) scontrol_do update nodename="$NODE" state=resume ||
		    exit 69 ;;
		esac
		;;
	esac
	exit 0
	;;
*)
	echo "slurm-health: sbx preflight failed (exit $rc): $report" >&2
	exit 69
	;;
esac
