#!/bin/sh
# slurm-site.sh: print the lines a Slurm site adds for sbx (sbx-slurm(7)):
# plugstack.conf's line for sbx.so and slurm.conf's health check.
#
#   sh scripts/slurm-site.sh [--prefix DIR] [--default on|off]
#       [--network none|proxy] [--max-network none|proxy|outbound]
#       [--agent NAME] [--home TEMPLATE] [--env NAMES]
#
# --prefix is where sbx is installed (default /usr/local: sbx in
# PREFIX/bin, sbx.so in PREFIX/lib/sbx/slurm, the health check in
# PREFIX/libexec/sbx).  Nothing is written: paste the lines into
# /etc/slurm/plugstack.conf (on every node and submit host) and
# /etc/slurm/slurm.conf.
set -eu
PREFIX=/usr/local
DEFAULT=off
NETWORK=none
MAXNET=proxy
AGENT=""
HOMET=""
ENVN=""
usage() {
	sed -n '5,7p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 64
}
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || usage
	case $1 in
	--prefix) PREFIX=$2 ;;
	--default) DEFAULT=$2 ;;
	--network) NETWORK=$2 ;;
	--max-network) MAXNET=$2 ;;
	--agent) AGENT=$2 ;;
	--home) HOMET=$2 ;;
	--env) ENVN=$2 ;;
	*) usage ;;
	esac
	shift 2
done
case $DEFAULT in on | off) ;; *) usage ;; esac
case $NETWORK in none | proxy) ;; *) usage ;; esac
case $MAXNET in none | proxy | outbound) ;; *) usage ;; esac

line="required $PREFIX/lib/sbx/slurm/sbx.so default=$DEFAULT network=$NETWORK max_network=$MAXNET sbx=$PREFIX/bin/sbx"
[ -n "$AGENT" ] && line="$line agent=$AGENT"
[ -n "$HOMET" ] && line="$line home=$HOMET"
[ -n "$ENVN" ] && line="$line env=$ENVN"
cat <<EOF
# plugstack.conf (every node and submit host; sbx.so last: on Slurm
# before 23.02.5 it starts the task itself)
$line

# slurm.conf: drain a node that cannot sandbox, resume it when it can
HealthCheckProgram=$PREFIX/libexec/sbx/slurm-health
HealthCheckInterval=300
HealthCheckNodeState=ANY
EOF
