/* cgroup.c: the limits of a command's processes: cgroups (memory,
 * pids) and what they count (see proc.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "priv.h"

/* --- limits: cgroups */

static int
write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	size_t n = strlen(text);
	int fd, rc = -1;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, text, n) == (ssize_t)n)
		rc = 0;
	close(fd);
	return rc;
}

/* The value after "key " in the file dir/name, or -1. */
static long long
read_counter(const char *dir, const char *name, const char *key)
{
	char path[4096], buf[2048], *p;
	size_t kn = strlen(key);

	if (!dir)
		return -1;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (read_text(path, buf, sizeof buf) < 0)
		return -1;
	for (p = buf; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, kn) && p[kn] == ' ')
			return strtoll(p + kn + 1, NULL, 10);
	return -1;
}

/* This process's cgroup path in the hierarchy of controller ctl (v1), or
 * in the unified one (ctl ""), or NULL. */
static char *
own_cgroup(const char *ctl)
{
	char buf[4096], *line, *save = NULL, *inner = NULL, *c, *path;

	if (read_text("/proc/self/cgroup", buf, sizeof buf) < 0)
		return NULL;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		c = strchr(line, ':');
		path = c ? strchr(c + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		c++;
		if (!*ctl) {
			if (!strcmp(line, "0") && !*c)
				return strdup(path);
			continue;
		}
		for (c = strtok_r(c, ",", &inner); c;
		     c = strtok_r(NULL, ",", &inner))
			if (!strcmp(c, ctl))
				return strdup(path);
	}
	return NULL;
}

/* Removes the cgroups left by tool-exec processes that died (kill -9):
 * dir/tool-exec.PID whose PID is gone.  A cgroup still in use is not
 * empty, and rmdir leaves it. */
static void
remove_stale(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];
	long pid;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "tool-exec.", 10) &&
		    (pid = strtol(e->d_name + 10, NULL, 10)) > 0 &&
		    kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			rmdir(path);
		}
	closedir(d);
}

/* Makes base/rel/tool-exec.PID, or tool-exec.PID.TAG; returns it, or
 * NULL. */
static char *
make_cgroup(const char *base, const char *rel, const char *tag)
{
	char *parent, *dir;

	if (asprintf(&parent, "%s%s", base, rel) < 0)
		return NULL;
	remove_stale(parent);
	if (asprintf(&dir, "%s%stool-exec.%d%s%s", parent,
		     parent[strlen(parent) - 1] == '/' ? "" : "/",
		     (int)getpid(), tag ? "." : "", tag ? tag : "") < 0) {
		free(parent);
		return NULL;
	}
	free(parent);
	if (mkdir(dir, 0700) < 0 && (errno != EEXIST || rmdir(dir) < 0 ||
				     mkdir(dir, 0700) < 0)) {
		free(dir);
		return NULL;
	}
	return dir;
}

static int
has_word(const char *dir, const char *name, const char *word)
{
	char path[4096], buf[512], *w, *save = NULL;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (read_text(path, buf, sizeof buf) < 0)
		return 0;
	for (w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		if (!strcmp(w, word))
			return 1;
	return 0;
}

static void
cgroup_v2(struct proc_limits *l)
{
	const char *base = access("/sys/fs/cgroup/cgroup.controllers", F_OK)
		== 0 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
	char *rel = own_cgroup(""), *parent = NULL, num[32];
	int pids, mem;

	if (!rel || asprintf(&parent, "%s%s", base, rel) < 0)
		goto out;
	pids = l->procs && has_word(parent, "cgroup.subtree_control", "pids");
	mem = l->memory && has_word(parent, "cgroup.subtree_control",
				    "memory");
	if (!pids && !mem)
		goto out;
	l->cg_pids = make_cgroup(base, rel, l->tag);
	if (!l->cg_pids)
		goto out;
	l->cg_v2 = 1;
	snprintf(num, sizeof num, "%ld", l->procs);
	if (pids && write_file(l->cg_pids, "pids.max", num) == 0)
		l->by_cgroup |= PROC_LIMIT_PROCS;
	snprintf(num, sizeof num, "%lld", l->memory);
	if (mem && write_file(l->cg_pids, "memory.max", num) == 0) {
		write_file(l->cg_pids, "memory.swap.max", "0");
		l->by_cgroup |= PROC_LIMIT_MEMORY;
		l->cg_mem = l->cg_pids;
	}
out:
	free(rel);
	free(parent);
}

static void
cgroup_v1(struct proc_limits *l)
{
	char *rel, num[32];

	if (l->procs && !(l->by_cgroup & PROC_LIMIT_PROCS) &&
	    (rel = own_cgroup("pids"))) {
		l->cg_pids = make_cgroup("/sys/fs/cgroup/pids", rel, l->tag);
		free(rel);
		snprintf(num, sizeof num, "%ld", l->procs);
		if (l->cg_pids && write_file(l->cg_pids, "pids.max", num) == 0)
			l->by_cgroup |= PROC_LIMIT_PROCS;
	}
	if (l->memory && !(l->by_cgroup & PROC_LIMIT_MEMORY) &&
	    (rel = own_cgroup("memory"))) {
		l->cg_mem = make_cgroup("/sys/fs/cgroup/memory", rel, l->tag);
		free(rel);
		snprintf(num, sizeof num, "%lld", l->memory);
		if (l->cg_mem &&
		    write_file(l->cg_mem, "memory.limit_in_bytes", num) == 0) {
			write_file(l->cg_mem, "memory.memsw.limit_in_bytes",
				   num);
			l->by_cgroup |= PROC_LIMIT_MEMORY;
		}
	}
}

int
proc_limits_prepare(struct proc_limits *l, struct ah_error *err)
{
	const char *weak = NULL;

	if (l->prepared)
		return 0;
	l->prepared = 1;
	if (l->procs || l->memory)
		cgroup_v2(l);
	if (!l->cg_v2)
		cgroup_v1(l);
	if (l->memory && !(l->by_cgroup & PROC_LIMIT_MEMORY))
		weak = "the memory limit is per process (RLIMIT_DATA), not per "
		       "call: no memory cgroup of our own can be made here";
	if (weak && !(l->warning = strdup(weak)))
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	return 0;
}

void
proc_limits_free(struct proc_limits *l)
{
	if (l->cg_mem && l->cg_mem != l->cg_pids) {
		rmdir(l->cg_mem);
		free(l->cg_mem);
	}
	if (l->cg_pids) {
		rmdir(l->cg_pids);
		free(l->cg_pids);
	}
	free(l->warning);
	l->cg_pids = l->cg_mem = l->warning = NULL;
	l->prepared = l->by_cgroup = 0;
}

/* How many processes descend from pid, counting up to about max: the
 * supervisor's check where no cgroup counts them.  Orphans of the PID
 * namespace are reparented to its init, so the tree holds them all. */
long
cg_count_tree(pid_t pid, long max)
{
	pid_t *queue;
	long n = 1, i;

	queue = malloc((size_t)(max + 2) * sizeof *queue);
	if (!queue)
		return 0;
	queue[0] = pid;
	for (i = 0; i < n && n <= max; i++)
		n += pr_children(queue[i], queue + n, (int)(max + 1 - n));
	free(queue);
	return n - 1; /* the supervisor does not count */
}

/* Moves pid (what: the command, or the helper) into the limits'
 * cgroups. */
int
cg_join(const struct proc_limits *l, pid_t pid, const char *what,
	struct ah_error *err)
{
	char num[32];
	const char *dirs[2];
	int i;

	if (!l || !l->by_cgroup)
		return 0;
	dirs[0] = l->cg_pids;
	dirs[1] = l->cg_mem != l->cg_pids ? l->cg_mem : NULL;
	snprintf(num, sizeof num, "%d\n", (int)pid);
	for (i = 0; i < 2; i++)
		if (dirs[i] && write_file(dirs[i], "cgroup.procs", num) < 0)
			return ah_fail_errno(err, errno, "cannot move the "
					     "%s into the cgroup '%s'; the "
					     "command was not run", what,
					     dirs[i]);
	return 0;
}

long long
cg_oom_kills(const struct proc_limits *l)
{
	if (!l || !(l->by_cgroup & PROC_LIMIT_MEMORY))
		return -1;
	return read_counter(l->cg_mem, l->cg_v2 ? "memory.events"
					       : "memory.oom_control",
			    "oom_kill");
}

long long
cg_pids_hits(const struct proc_limits *l)
{
	if (!l || !(l->by_cgroup & PROC_LIMIT_PROCS))
		return -1;
	return read_counter(l->cg_pids, "pids.events", "max");
}


/* Sets the limit of the cgroup counting processes: the call's, one for
 * the helper, and one for a shell started ahead (extra), which stays
 * while its command runs where bash -c would have become the command's
 * last process. */
int
cg_pids_max(const struct proc_limits *l, int extra)
{
	char num[32];

	snprintf(num, sizeof num, "%ld", l->procs + 1 + extra);
	return write_file(l->cg_pids, "pids.max", num);
}
