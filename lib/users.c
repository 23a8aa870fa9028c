/*
 * users.c: /etc/passwd look-ups.  fgetpwent() reads the file itself: no
 * NSS modules are loaded, which keeps statically linked programs honest and
 * means a directory service cannot hand sbx an identity.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "users.h"

static FILE *
passwd_open(void)
{
	return fopen("/etc/passwd", "re");
}

int
sbx_user_by_name(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd	*pw;
	FILE		*f;
	int		 rc = -1;

	if ((f = passwd_open()) == NULL)
		return -1;
	while ((pw = fgetpwent(f)) != NULL)
		if (strcmp(pw->pw_name, name) == 0) {
			*uid = pw->pw_uid;
			*gid = pw->pw_gid;
			rc = 0;
			break;
		}
	fclose(f);
	return rc;
}

char *
sbx_user_home(uid_t uid)
{
	struct passwd	*pw;
	FILE		*f;
	char		*home = NULL;

	if ((f = passwd_open()) == NULL)
		return NULL;
	while ((pw = fgetpwent(f)) != NULL)
		if (pw->pw_uid == uid) {
			home = strdup(pw->pw_dir);
			break;
		}
	fclose(f);
	return home;
}
