/*
 * exec-main.c: sbx-exec as a program of its own.  The front-end links the
 * same cmd/sbx-exec.c object and calls cmd_exec() itself (cmd/sbx.c).
 */
#include <stdlib.h>

#include "exec-opts.h"

int
main(int argc, char *argv[])
{
	exit(cmd_exec(argc, argv, 0));
}
