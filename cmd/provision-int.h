/*
 * provision-int.h: what the files of sbx-provision share: the options,
 * the state root, and the output helpers of cmd/sbx-provision.c, which
 * parses and dispatches to the subcommands in cmd/provision-*.c.
 * Internal to that program.
 */
#ifndef SBX_PROVISION_INT_H
#define SBX_PROVISION_INT_H

#include <stdio.h>

#include <jansson.h>

#include "error.h"
#include "root.h"

#define PROG	"sbx-provision"

struct prov_opts {
	const char	*agent;
	const char	*home;
	const char	*sub;		/* NULL: provision */
	const char	*image;		/* --image */
	int		 env;		/* --own-rootfs */
	int		 no_env;	/* --no-own-rootfs */
	const char	*old_flag;	/* --env or --no-env was used */
	int		 no_create_user;	/* --no-create-user */
	const char	*disk_image;	/* --disk-image SIZE|off */
	const char	*disk_resize;	/* --disk-resize SIZE */
	const char	*sha256;
	const char	*name;
	const char	*pos[3];	/* image ACTION [ARG] */
	int		 npos;
	int		 agent_given;
	int		 yes;
	int		 force;
	int		 json;
	int		 quiet;
	int		 verbose;
	int		 migrate_identity;	/* --migrate-identity */
};

extern struct prov_opts	 O;
extern char		 tool[32];
extern struct sbx_root	 root;

void	usage(const char *why) __attribute__((noreturn));
void	print_line(FILE *f, const char *prefix, const char *s,
	    const char *suffix);
void	print_list(const char *label, json_t *arr);
void	print_warnings(json_t *warnings);
json_t	*root_json(void);
int	open_root_existing(int inspect);

/* cmd/provision-agent.c */
int	do_provision(void);
/* cmd/provision-disk.c: --disk-image, --disk-resize; NULL when neither,
 * else the result's "disk" object (dies on failure). */
json_t	*prov_disk(void);
/* Before the home is looked at: mount the agent's image, or migrate
 * when it has one already (then the "disk" object, else NULL). */
json_t	*prov_disk_pre(void);
/* Die (rejected, disk_image_present) when removing the agent (NULL: any
 * agent) would delete a disk image with its home on it. */
void	prov_disk_refuse_removal(int rootfd, const char *agent);
/* cmd/provision-image.c */
int	do_image_add(void);
int	do_image_list(void);
int	do_image_rm(void);
int	do_image_verify(void);
/* cmd/provision-status.c */
int	do_status(void);
int	do_list(void);
/* cmd/provision-remove.c */
int	do_unprovision(void);
int	do_reset(void);
int	do_remove(void);
/* cmd/provision-identity.c */
int	do_migrate_identity(void);
json_t	*identity_status(int rootfd, const char *, json_t *, int *bad);
void	identity_provisioned(const char *agent, const json_t *created);

#endif
