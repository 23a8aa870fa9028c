#!/bin/sh
# tap-exec.sh FILE: run one test file for prove, whatever its kind.
case "$1" in
*.bats)	exec bats --tap "$1" ;;
*.sh)	exec bash "$1" ;;
*)	exec "$1" ;;
esac
