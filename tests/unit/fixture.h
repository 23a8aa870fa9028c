/*
 * fixture.h: what several unit tests share besides TAP (tap.h): a
 * temporary directory, made and opened in one call and removed at exit
 * whatever the test left in it (read-only directories included), without
 * a shell and without following a symbolic link.
 */
#ifndef SBX_FIXTURE_H
#define SBX_FIXTURE_H

#include <sys/stat.h>

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The directories t_tmpdir made, removed at exit by the process that
 * made them (not by a forked child that exits). */
static char	 t_fixture_dirs[8][PATH_MAX];
static int	 t_fixture_n;
static pid_t	 t_fixture_pid;

/* nftw callbacks: directories made writable (pre-order), then everything
 * removed (post-order). */
__attribute__((unused)) static int
t_fixture_chmod(const char *path, const struct stat *st, int flag,
    struct FTW *f)
{
	(void)f;
	if (flag == FTW_D)
		(void)chmod(path, (st->st_mode & 07777) | 0700);
	return 0;
}

__attribute__((unused)) static int
t_fixture_remove(const char *path, const struct stat *st, int flag,
    struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	(void)remove(path);
	return 0;
}

/* rm -rf path, never following a symbolic link out of it. */
__attribute__((unused)) static void
t_rmtree(const char *path)
{
	if (path == NULL || *path == '\0')
		return;
	(void)nftw(path, t_fixture_chmod, 16, FTW_PHYS);
	(void)nftw(path, t_fixture_remove, 16, FTW_DEPTH | FTW_PHYS);
}

__attribute__((unused)) static void
t_fixture_cleanup(void)
{
	int	 i;

	if (getpid() != t_fixture_pid)
		return;
	for (i = 0; i < t_fixture_n; i++)
		t_rmtree(t_fixture_dirs[i]);
}

/*
 * mkdtemp(tmpl) (a template such as "/tmp/t-foo.XXXXXX", rewritten in
 * place), opened O_RDONLY | O_DIRECTORY | O_CLOEXEC: the descriptor, or
 * -1 with errno.  The directory goes at exit.
 */
__attribute__((unused)) static int
t_tmpdir(char *tmpl)
{
	int	 fd;

	if (mkdtemp(tmpl) == NULL)
		return -1;
	if (t_fixture_n == 0) {
		t_fixture_pid = getpid();
		atexit(t_fixture_cleanup);
	}
	if (t_fixture_n < (int)(sizeof(t_fixture_dirs) /
	    sizeof(t_fixture_dirs[0])))
		snprintf(t_fixture_dirs[t_fixture_n++], PATH_MAX, "%s", tmpl);
	if ((fd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		t_rmtree(tmpl);
	return fd;
}

#endif
