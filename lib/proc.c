/* proc.c: running a shell command for the model, bounded in time, output,
 * processes, memory and file size, cut off from the terminal and from the
 * caller's files and secrets, leaving no process behind.
 *
 * The processes of one call:
 *   tool-exec
 *     helper (sandboxed calls only; one per session): set up once in the
 *       sandbox (sandbox_setup: mount namespace, seccomp, the Landlock
 *       ruleset built) and in the limits' cgroups, killed with tool-exec
 *       (PR_SET_PDEATHSIG); it forks each call's supervisor on request,
 *       and reaps it when told.
 *       supervisor: pid 1 of a new PID namespace (where the kernel gives
 *         one), in a mount namespace of the call (its own /proc), a new
 *         session with no controlling terminal, killed with its parent
 *         (PR_SET_PDEATHSIG); it reaps, and reports the shell's status on
 *         a pipe.  When it dies the kernel kills every process of the
 *         namespace, however it detached.
 *         shell: confined (sandbox_restrict), fds 0-2 only, the allowed
 *           environment, and everything it starts.
 * The supervisor runs nothing before tool-exec sent it the command on a
 * pipe: EOF there means tool-exec is gone.  A call's supervisor and shell
 * may be started ahead, while tool-exec waits for the model
 * (proc_prestart): then the shell itself reads the command from that
 * pipe, running nothing else before it. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "priv.h"

extern char **environ;

int
proc_become_subreaper(void)
{
	return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

double
mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The children of this process, which as a subreaper include every orphan
 * its commands left.  Returns their number (at most max). */
static int
children(pid_t *pids, int max)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd, k = 0;
	char *p, *end;

	snprintf(path, sizeof path, "/proc/self/task/%d/children",
		 (int)getpid());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (p = buf; k < max; p = end) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		pids[k++] = (pid_t)v;
	}
	return k;
}

/* Kills what is left of a command: its process group, then every orphan
 * reparented to us (setsid children escape the group, not the subreaper),
 * until none is left; all but the helper (spare). */
static void
kill_all(pid_t pgid, pid_t spare)
{
	kill(-pgid, SIGKILL);
	proc_kill_children(spare);
}

void
proc_kill_children(pid_t spare)
{
	pid_t pids[256];
	int i, k, n, round;

	for (round = 0; round < 100; round++) {
		n = children(pids, 256);
		for (i = k = 0; i < n; i++)
			if (pids[i] != spare)
				pids[k++] = pids[i];
		if (!k)
			break;
		for (i = 0; i < k; i++) {
			kill(pids[i], SIGKILL);
			kill(-pids[i], SIGKILL);
		}
		for (i = 0; i < k; i++)
			waitpid(pids[i], NULL, 0);
	}
}

/* --- the environment */

/* Names whose value commands get by default. */
static int
env_allowed(const char *name, size_t n)
{
	static const char *const names[] = {
		"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM",
		"NO_COLOR", "TZ", "LANG", "LANGUAGE", "TMPDIR",
	};
	size_t i;

	if (n > 3 && !strncmp(name, "LC_", 3))
		return 1;
	for (i = 0; i < sizeof names / sizeof *names; i++)
		if (strlen(names[i]) == n && !strncmp(names[i], name, n))
			return 1;
	return 0;
}

/* Is the first n bytes of name a secret's name?  Case does not matter. */
static int
env_secret(const char *name, size_t n)
{
	static const char *const parts[] = {
		"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE",
		"CREDENTIAL", "AUTH", "COOKIE", "PRIVATE", "SESSION",
	};
	static const char *const prefixes[] = {
		"AWS_", "GITHUB_", "GH_", "GITLAB_", "GL_", "AZURE_", "GOOGLE_",
		"GCP_", "GCLOUD_", "OPENAI_", "ANTHROPIC_", "HF_", "HUGGING",
		"SSH_", "GPG_", "GNUPG", "KRB5", "VAULT_", "DOCKER_", "NPM_",
		"AGENT_API", "DBUS_",
	};
	char up[256];
	size_t i;

	if (n >= sizeof up)
		return 1;
	for (i = 0; i < n; i++)
		up[i] = (char)toupper((unsigned char)name[i]);
	up[n] = '\0';
	for (i = 0; i < sizeof parts / sizeof *parts; i++)
		if (strstr(up, parts[i]))
			return 1;
	for (i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
		if (!strncmp(up, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

int
proc_env_secret(const char *name)
{
	return env_secret(name, strlen(name));
}

void
proc_env_free(char **env)
{
	size_t i;

	if (!env)
		return;
	for (i = 0; env[i]; i++)
		free(env[i]);
	free(env);
}

char **
proc_env_build(const char *const *pass, size_t npass, struct ah_error *err)
{
	char **env, **e;
	size_t i, j, n = 0, k = 0;

	for (i = 0; i < npass; i++) {
		const char *p = pass[i];

		for (j = 0; p[j] && (p[j] == '_' || isalnum((unsigned char)p[j]));
		     j++)
			;
		if (!*p || p[j] || isdigit((unsigned char)*p)) {
			ah_fail(err, AH_EFORMAT, "'%s' is not a variable name",
				p);
			return NULL;
		}
		if (env_secret(p, j)) {
			ah_fail(err, AH_EFORMAT, "'%s' looks like a secret "
				"(its name matches the deny list), and is never "
				"passed to commands", p);
			return NULL;
		}
	}
	for (e = environ; e && *e; e++)
		n++;
	env = calloc(n + 1, sizeof *env);
	if (!env) {
		ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		return NULL;
	}
	for (e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		size_t len = eq ? (size_t)(eq - *e) : 0;
		int keep = 0;

		if (!eq || env_secret(*e, len))
			continue;
		keep = env_allowed(*e, len);
		for (i = 0; !keep && i < npass; i++)
			keep = strlen(pass[i]) == len &&
			       !strncmp(pass[i], *e, len);
		if (!keep)
			continue;
		env[k] = strdup(*e);
		if (!env[k++]) {
			proc_env_free(env);
			ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
			return NULL;
		}
	}
	return env;
}

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
	ssize_t n;
	int fd;

	if (!dir)
		return -1;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
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
	ssize_t n;
	int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
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
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
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
static long
count_tree(pid_t pid, long max)
{
	char path[64], buf[4096], *p, *end;
	pid_t *queue;
	long n = 1, i;
	ssize_t len;
	int fd;

	queue = malloc((size_t)(max + 2) * sizeof *queue);
	if (!queue)
		return 0;
	queue[0] = pid;
	for (i = 0; i < n && n <= max; i++) {
		snprintf(path, sizeof path, "/proc/%d/task/%d/children",
			 (int)queue[i], (int)queue[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		for (p = buf; n <= max; p = end) {
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			queue[n++] = (pid_t)v;
		}
	}
	free(queue);
	return n - 1; /* the supervisor does not count */
}

/* --- the supervisor and the command */

/* Closes the descriptors from lo to hi; close_range where the kernel has
 * it, else one by one up to the limit. */
static void
close_between(int lo, unsigned hi)
{
	struct rlimit rl;
	long fd, max = 65536;

	if (lo < 0 || (unsigned)lo > hi)
		return;
	if (syscall(SYS_close_range, (unsigned)lo, hi, 0) == 0)
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)1 << 20)
		max = (long)rl.rlim_cur;
	for (fd = lo; fd < max && (unsigned long)fd <= hi; fd++)
		close((int)fd);
}

static void
close_from(int lo)
{
	close_between(lo, ~0U);
}

/* Closes every descriptor above 2 but the n in keep. */
static void
close_except(int *keep, int n)
{
	int i, j, t, lo = 3;

	for (i = 1; i < n; i++) /* a few: insertion sort */
		for (j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		if (keep[i] < lo)
			continue;
		close_between(lo, (unsigned)keep[i] - 1);
		lo = keep[i] + 1;
	}
	close_from(lo);
}

/* Moves fd to at least 'to', close-on-exec; returns the new number. */
static int
move_fd(int fd, int to)
{
	int n = fcntl(fd, F_DUPFD_CLOEXEC, to);

	if (n < 0)
		_exit(126);
	close(fd);
	return n;
}

/* What a shell started ahead runs (see proc_prestart): the command is
 * read from fd 3 to its end, which comes when tool-exec has written it
 * (bash reads $(<FILE) without a process; /proc is the supervisor's, /dev
 * may have no fd directory), fd 3 is closed for good, and the command
 * runs by eval, as -c would run it.  tool-exec writes a '.' after the
 * command: what $(<) strips is that dot's trailing newlines, never the
 * command's (a last line continued by a backslash, the blank lines ending
 * a here-document), and a command cut short (tool-exec died while it
 * wrote) does not end with the dot and does not run (125, the
 * supervisor's exit when its pipe ends without a command).  The command
 * is kept where bash -c keeps it, in BASH_EXECUTION_STRING, no other
 * variable.  As in bash -c, $_ is the shell's path and SECONDS counts
 * from the command (the arithmetic expands to nothing). */
static const char warm_boot[] =
	"BASH_EXECUTION_STRING=$(</proc/self/fd/3); exec 3<&-; "
	"case $BASH_EXECUTION_STRING in *.) "
	"BASH_EXECUTION_STRING=${BASH_EXECUTION_STRING%.}; : \"$0\"; "
	"eval \"$BASH_EXECUTION_STRING${0:0:$((SECONDS=0))}\";; "
	"*) exit 125; esac";

/* The shell, in the child of the supervisor: confined, 0 from /dev/null,
 * 1 and 2 the output pipe, nothing else open, the allowed environment.
 * With cmd NULL it is started ahead: it runs warm_boot, the command pipe
 * go as its fd 3. */
static void
command(const struct proc_opts *o, const char *cmd, char **envp,
	int ruleset, int out, int errfd, int go)
{
	struct ah_error err = { 0 };
	sigset_t none;
	size_t n;
	int i, devnull;
	char *argv[5];

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (i = 1; i < NSIG; i++)
		if (i != SIGKILL && i != SIGSTOP)
			signal(i, SIG_DFL);
	if (o->sandbox && sandbox_restrict(o->sandbox, ruleset, &err) < 0) {
		/* Fail closed: the reason goes to the parent, the command
		 * does not run. */
		n = strlen(err.msg);
		if (write(errfd, err.msg, n) != (ssize_t)n)
			_exit(125);
		_exit(126);
	}
	/* Above the numbers given below first, so that no dup2 lands on
	 * them. */
	out = move_fd(out, 10);
	errfd = move_fd(errfd, 10);
	if (go >= 0)
		go = move_fd(go, 10);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 ||
	    dup2(out, 2) < 0)
		_exit(126);
	/* Nothing the caller left open reaches the command: errfd, as 3
	 * (4 after the command pipe), goes at exec (close-on-exec), the rest
	 * now. */
	if (dup3(errfd, go >= 0 ? 4 : 3, O_CLOEXEC) < 0 ||
	    (go >= 0 && dup2(go, 3) < 0))
		_exit(126);
	close_from(go >= 0 ? 5 : 4);
	if (o->dir && chdir(o->dir) < 0) {
		dprintf(2, "cannot change to '%s': %s\n", o->dir,
			strerror(errno));
		_exit(126);
	}
	/* "--": a command that starts with - or + is the command, not an
	 * option of the shell's. */
	argv[0] = (char *)o->shell;
	argv[1] = (char *)"-c";
	argv[2] = (char *)"--";
	argv[3] = (char *)(cmd ? cmd : warm_boot);
	argv[4] = NULL;
	execve(o->shell, argv, envp);
	dprintf(2, "cannot run '%s': %s\n", o->shell, strerror(errno));
	_exit(127);
}

static void
set_limit(int res, long long v)
{
	struct rlimit rl = { (rlim_t)v, (rlim_t)v };

	if (v > 0)
		setrlimit(res, &rl);
}

void
proc_limits_set(const struct proc_limits *l, int nproc)
{
	set_limit(RLIMIT_FSIZE, l->file_size);
	if (nproc && l->procs)
		set_limit(RLIMIT_NPROC, l->procs + nproc);
	if (!(l->by_cgroup & PROC_LIMIT_MEMORY))
		set_limit(RLIMIT_DATA, l->memory);
}

/* What tool-exec sends on the go pipe: 'g' and the command, then EOF.
 * NULL when the pipe ends first (tool-exec is gone, or failed). */
static char *
read_command(int go)
{
	struct buf b = BUF_INIT(0);
	char chunk[4096];
	ssize_t n;

	while ((n = read(go, chunk, sizeof chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || buf_append(&b, chunk, (size_t)n) < 0) {
			buf_free(&b);
			return NULL;
		}
	}
	if (!b.len || b.data[0] != 'g') {
		buf_free(&b);
		return NULL;
	}
	memmove(b.data, b.data + 1, b.len); /* with its NUL */
	return b.data;
}

/* The command's environment: o->env, and TMPDIR the sandbox's own.  Made
 * before the limits: under RLIMIT_DATA a process with much mapped (as
 * under AddressSanitizer) may not be able to allocate. */
static char **
command_env(const struct proc_opts *o)
{
	const char *tmp = o->sandbox ? o->sandbox->tmpdir : NULL;
	size_t n = 0, k = 0;
	char **env;

	while (o->env && o->env[n])
		n++;
	env = calloc(n + 2, sizeof *env);
	if (!env)
		return NULL;
	for (; k < n; k++)
		if (!tmp || strncmp(o->env[k], "TMPDIR=", 7))
			env[k] = o->env[k];
		else
			env[k] = (char *)""; /* replaced below */
	if (tmp && asprintf(&env[n], "TMPDIR=%s", tmp) < 0)
		return NULL;
	for (k = n = 0; env[k]; k++)
		if (*env[k])
			env[n++] = env[k];
	env[n] = NULL;
	return env;
}

/* The supervisor: see the top of this file.  In a sandboxed call it is
 * the helper's child, in a mount namespace of its own (sandboxed), and
 * ruleset is the Landlock ruleset for the shell; nproc, when not 0, is how
 * many processes besides the command's its user namespace counts (for
 * RLIMIT_NPROC, per call only in a user namespace of the session).  With
 * warm, the shell starts at once and reads its command from go itself
 * (proc_prestart), and is not counted: it stays while its command runs,
 * where bash -c would have become the command's last process. */
static void
supervisor(const struct proc_opts *o, int pidns, int nproc, int out,
	   int errfd, int statfd, int go, int ruleset, int warm)
{
	const struct proc_limits *l = o->limits;
	pid_t shell, w;
	int st, keep[5], nkeep = 4;
	char *cmd, **envp;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* Not even the supervisor holds what the caller left open (a lock
	 * must not outlive its holder through us). */
	keep[0] = out;
	keep[1] = errfd;
	keep[2] = statfd;
	keep[3] = go;
	if (ruleset >= 0)
		keep[nkeep++] = ruleset;
	close_except(keep, nkeep);
	if (setsid() < 0) {
		dprintf(errfd, "cannot start a new session: %s",
			strerror(errno));
		_exit(126);
	}
	/* Started ahead, the shell reads the command itself. */
	cmd = NULL;
	if (!warm) {
		cmd = read_command(go);
		if (!cmd)
			_exit(125);
		close(go);
		go = -1;
	}
	envp = command_env(o);
	if (!envp) {
		dprintf(errfd, "cannot make the environment: %s",
			strerror(ENOMEM));
		_exit(126);
	}
	if (o->sandbox && o->sandbox->mode != SANDBOX_OFF) {
		struct ah_error e = { 0 };

		if (sandbox_fresh_proc(&e) < 0) {
			dprintf(errfd, "%s", e.msg);
			_exit(126);
		}
	}
	if (!pidns)
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	/* Signals for the command's group are not for us; the caller ends
	 * us with SIGKILL. */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (l)
		proc_limits_set(l, nproc ? nproc + !!warm : 0);
	shell = fork();
	if (shell < 0) {
		dprintf(errfd, "cannot fork: %s", strerror(errno));
		_exit(126);
	}
	if (shell == 0) {
		close(statfd);
		command(o, cmd, envp, ruleset, out, errfd, go);
	}
	close(out);
	close(errfd);
	if (go >= 0)
		close(go);
	if (ruleset >= 0)
		close(ruleset);
	for (;;) {
		w = waitpid(-1, &st, 0);
		if (w == shell) {
			if (write(statfd, &st, sizeof st) < 0)
				_exit(125);
			close(statfd);
		} else if (w < 0 && errno != EINTR) {
			break;
		}
	}
	_exit(0);
}

/* Starts the supervisor of an unconfined call (--sandbox off) in a new
 * PID namespace where the kernel allows one, else as a plain child. */
static pid_t
start(int *pidns, struct ah_error *err)
{
	long pid;

	*pidns = 1;
	pid = syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, 0);
	if (pid < 0) {
		*pidns = 0;
		pid = fork();
		if (pid < 0)
			ah_fail_errno(err, errno, "cannot fork");
	}
	return (pid_t)pid;
}

/* Moves pid (what: the command, or the helper) into the limits'
 * cgroups. */
static int
join_cgroups(const struct proc_limits *l, pid_t pid, const char *what,
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

static long long
oom_kills(const struct proc_limits *l)
{
	if (!l || !(l->by_cgroup & PROC_LIMIT_MEMORY))
		return -1;
	return read_counter(l->cg_mem, l->cg_v2 ? "memory.events"
					       : "memory.oom_control",
			    "oom_kill");
}

static long long
pids_hits(const struct proc_limits *l)
{
	if (!l || !(l->by_cgroup & PROC_LIMIT_PROCS))
		return -1;
	return read_counter(l->cg_pids, "pids.events", "max");
}

static void
close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	p[0] = p[1] = -1;
}

/* Sets the limit of the cgroup counting processes: the call's, one for
 * the helper, and one for a shell started ahead (extra), which stays
 * while its command runs where bash -c would have become the command's
 * last process. */
static int
pids_max(const struct proc_limits *l, int extra)
{
	char num[32];

	snprintf(num, sizeof num, "%ld", l->procs + 1 + extra);
	return write_file(l->cg_pids, "pids.max", num);
}

int
proc_limits_join(const struct proc_limits *l, pid_t pid, int extra,
		 struct ah_error *err)
{
	if (join_cgroups(l, pid, "process", err) < 0)
		return -1;
	if (l && (l->by_cgroup & PROC_LIMIT_PROCS) && pids_max(l, extra - 1) < 0)
		return ah_fail_errno(err, errno, "cannot set the process limit "
				     "in '%s'", l->cg_pids);
	return 0;
}

void
proc_limits_events(const struct proc_limits *l, long long *oom,
		   long long *procs)
{
	*oom = oom_kills(l);
	*procs = pids_hits(l);
}

/* --- the helper */

/* Sends len bytes of data and nfds descriptors as one message. */
static int
send_msg(int sock, const void *data, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { (void *)data, len };
	struct msghdr m = { 0 };
	struct cmsghdr *c;

	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	if (nfds) {
		memset(&u, 0, sizeof u);
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	while (sendmsg(sock, &m, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

/* Receives one message: its length (0 at EOF, -1 on error), and up to 4
 * descriptors in fds (*nfds of them, close-on-exec). */
static ssize_t
recv_msg(int sock, void *data, size_t len, int *fds, int *nfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { data, len };
	struct msghdr m = { 0 };
	struct cmsghdr *c;
	ssize_t n;

	*nfds = 0;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof u.buf;
	while ((n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0)
		if (errno != EINTR)
			return -1;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			*nfds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			memcpy(fds, CMSG_DATA(c), (size_t)*nfds * sizeof(int));
		}
	return n;
}

/* The helper's answer to a request to start a call. */
struct spawned {
	pid_t pid;  /* the supervisor, or -1 */
	int errnum; /* why not */
};

/* The helper process: sets itself up in the sandbox once, says so ('R';
 * 'S' when what it protects changed meanwhile, 'E' and why when it
 * failed), then serves: 'r' with the four pipe ends of a call starts its
 * supervisor ('w': and its shell at once, started ahead); 'k' with a pid
 * kills and reaps that supervisor.  Never returns. */
static void
helper_main(const struct proc_opts *o, pid_t parent, int sock,
	    const struct buf *snap)
{
	struct ah_error err = { 0 };
	struct spawned sp;
	char req[1 + sizeof(pid_t)], word[1 + sizeof err.msg];
	int fds[4], nfds, i, ruleset, userns, devnull, r;
	long pid;
	ssize_t n;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent)
		_exit(0);
	close_except(&sock, 1);
	devnull = open("/dev/null", O_RDWR);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 ||
	    dup2(devnull, 2) < 0)
		_exit(126);
	if (devnull > 2)
		close(devnull);
	/* Ended by SIGKILL (PR_SET_PDEATHSIG) or at EOF, not by the
	 * terminal's signals to our process group. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	r = sandbox_setup(o->sandbox, snap, &ruleset, &userns, &err);
	word[0] = r == 0 ? 'R' : r > 0 ? 'S' : 'E';
	n = r < 0 ? (ssize_t)strlen(err.msg) : 0;
	memcpy(word + 1, err.msg, (size_t)n);
	if (send_msg(sock, word, 1 + (size_t)n, NULL, 0) < 0 || r)
		_exit(0);
	for (;;) {
		n = recv_msg(sock, req, sizeof req, fds, &nfds);
		if (n == 1 && (req[0] == 'r' || req[0] == 'w') && nfds == 4) {
			sp.errnum = 0;
			pid = syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS |
				      SIGCHLD, NULL, NULL, NULL, 0);
			if (pid == 0) {
				close(sock);
				supervisor(o, 1, userns ? 2 : 0, fds[0], fds[1],
					   fds[2], fds[3], ruleset, req[0] == 'w');
			}
			if (pid < 0)
				sp.errnum = errno;
			sp.pid = (pid_t)pid;
			for (i = 0; i < 4; i++)
				close(fds[i]);
			if (send_msg(sock, &sp, sizeof sp, NULL, 0) < 0)
				_exit(0);
		} else if (n == (ssize_t)sizeof req && req[0] == 'k' && !nfds) {
			memcpy(&sp.pid, req + 1, sizeof sp.pid);
			kill(sp.pid, SIGKILL);
			/* pid 1 of its namespace: gone once all of it is */
			while (waitpid(sp.pid, NULL, 0) < 0 && errno == EINTR)
				;
			if (send_msg(sock, "k", 1, NULL, 0) < 0)
				_exit(0);
		} else {
			_exit(0); /* EOF, or not the caller's words */
		}
	}
}

int
proc_helper_start(struct proc_helper *h, const struct proc_opts *o,
		  struct ah_error *err)
{
	const struct proc_limits *l = o->limits;
	pid_t parent = getpid();
	int sv[2];

	memset(h, 0, sizeof *h);
	h->sock = -1;
	h->snap = (struct buf)BUF_INIT(0);
	if (o->sandbox && sandbox_snapshot(o->sandbox, &h->snap) < 0)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		buf_free(&h->snap);
		return ah_fail_errno(err, errno, "cannot create a socket");
	}
	h->pid = fork();
	if (h->pid == 0) {
		close(sv[0]);
		helper_main(o, parent, sv[1], &h->snap);
	}
	close(sv[1]);
	h->sock = sv[0];
	if (h->pid < 0) {
		h->pid = 0;
		ah_fail_errno(err, errno, "cannot fork");
		proc_helper_stop(h);
		return -1;
	}
	/* In the cgroups before it forks a call: counted there, it leaves
	 * the call its --max-procs. */
	if (join_cgroups(l, h->pid, "sandbox helper", err) < 0) {
		proc_helper_stop(h);
		return -1;
	}
	if (l && (l->by_cgroup & PROC_LIMIT_PROCS)) {
		if (pids_max(l, 0) < 0) {
			ah_fail_errno(err, errno, "cannot set the process "
				      "limit in '%s'", l->cg_pids);
			proc_helper_stop(h);
			return -1;
		}
	}
	return 0;
}

void
proc_helper_stop(struct proc_helper *h)
{
	int i;

	if (h->sock >= 0)
		close(h->sock);
	if (h->pid > 0) {
		kill(h->pid, SIGKILL);
		while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	/* A shell started ahead dies with the helper, before its pipe
	 * closes.  Its supervisor, an orphan now, is ours (the subreaper's)
	 * to reap: a zombie would count against --max-procs in the cgroup. */
	if (h->warm > 0) {
		if (waitpid(h->warm, NULL, WNOHANG) == 0) {
			kill(h->warm, SIGKILL);
			while (waitpid(h->warm, NULL, 0) < 0 && errno == EINTR)
				;
		}
		for (i = 0; i < 4; i++)
			close(h->warm_fd[i]);
	}
	buf_free(&h->snap);
	memset(h, 0, sizeof *h);
	h->sock = -1;
}

/* Waits for the helper's first word: 0 ready, 1 it must be set up again
 * (what it protects changed meanwhile), -1 it failed (err says why). */
static int
helper_ready(struct proc_helper *h, struct ah_error *err)
{
	char word[1 + sizeof err->msg];
	int fds[4], nfds;
	ssize_t n;

	if (h->ready)
		return 0;
	n = recv_msg(h->sock, word, sizeof word - 1, fds, &nfds);
	if (n > 0 && word[0] == 'R') {
		h->ready = 1;
		return 0;
	}
	if (n > 0 && word[0] == 'S')
		return 1;
	if (n > 1 && word[0] == 'E') {
		word[n] = '\0';
		return ah_fail(err, AH_EIO, "cannot set up the sandbox: %s; "
			       "the command was not run", word + 1);
	}
	return ah_fail(err, AH_EIO, "cannot set up the sandbox: its helper "
		       "ended before it was set up; the command was not run");
}

/* A helper that serves what the sandbox protects now: the one there, or
 * a new one. */
static int
helper_current(struct proc_helper *h, const struct proc_opts *o,
	       struct ah_error *err)
{
	struct buf now = BUF_INIT(0);
	int tries, r, same;

	for (tries = 0; tries < 5; tries++) {
		if (sandbox_snapshot(o->sandbox, &now) < 0) {
			buf_free(&now);
			return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		}
		/* reaped here, its pid is no longer one to signal */
		if (h->pid > 0 && waitpid(h->pid, NULL, WNOHANG) != 0)
			h->pid = 0;
		same = h->pid > 0 && now.len == h->snap.len &&
		       !memcmp(now.data, h->snap.data, now.len);
		if (same) {
			r = helper_ready(h, err);
			if (r <= 0) {
				buf_free(&now);
				return r;
			}
		}
		proc_helper_stop(h);
		if (proc_helper_start(h, o, err) < 0) {
			buf_free(&now);
			return -1;
		}
	}
	buf_free(&now);
	return ah_fail(err, AH_EIO, "what the sandbox protects kept changing "
		       "while it was set up");
}

/* Has the helper start the supervisor of a call with these pipe ends;
 * kind 'w' starts the shell ahead. */
static pid_t
helper_spawn(struct proc_helper *h, const char *kind, const int fds[4],
	     struct ah_error *err)
{
	struct spawned sp;
	int got[4], ngot, i;
	ssize_t n;

	if (send_msg(h->sock, kind, 1, fds, 4) < 0)
		return ah_fail_errno(err, errno, "cannot reach the sandbox "
				     "helper");
	n = recv_msg(h->sock, &sp, sizeof sp, got, &ngot);
	for (i = 0; i < ngot; i++)
		close(got[i]);
	if (n != (ssize_t)sizeof sp)
		return ah_fail(err, AH_EIO, "the sandbox helper ended");
	if (sp.pid < 0)
		return ah_fail_errno(err, sp.errnum, "cannot create a PID "
				     "namespace, which the sandbox needs to "
				     "end every process of a call; the "
				     "command was not run");
	return sp.pid;
}

/* Kills what is left of a call: the supervisor's group, the supervisor
 * (and with it its namespace), reaped by the helper; what became ours
 * (the helper died) as before. */
static void
end_call(const struct proc_opts *o, pid_t pid)
{
	struct proc_helper *h = o->helper;
	char req[1 + sizeof(pid_t)], word[8];
	int fds[4], nfds, i;
	ssize_t n = -1;

	if (!h) {
		kill_all(pid, 0);
		return;
	}
	kill(-pid, SIGKILL);
	req[0] = 'k';
	memcpy(req + 1, &pid, sizeof pid);
	if (send_msg(h->sock, req, sizeof req, NULL, 0) == 0) {
		n = recv_msg(h->sock, word, sizeof word, fds, &nfds);
		for (i = 0; i < nfds; i++)
			close(fds[i]);
	}
	if (n != 1) {
		/* The helper is gone: the supervisor is ours, or dead. */
		kill(pid, SIGKILL);
		kill_all(pid, h->pid);
		proc_helper_stop(h);
	}
}

/* Sends the supervisor 'g' and the command, and closes the pipe. */
static int
send_command(int *go, const char *cmd, struct ah_error *err)
{
	int rc = 0;

	if (write(*go, "g", 1) != 1 || write_all(*go, cmd, strlen(cmd)) < 0)
		rc = ah_fail_errno(err, errno, "cannot start the command");
	close(*go);
	*go = -1;
	return rc;
}

/* Is the shell bash, which can be started ahead (warm_boot)? */
static int
shell_is_bash(const char *shell)
{
	const char *slash = shell ? strrchr(shell, '/') : NULL;

	return shell && !strcmp(slash ? slash + 1 : shell, "bash");
}

/* Does the commands' environment set bash's options, or have it run a
 * file as it starts (--pass-env)?  bash would apply them to warm_boot
 * too (trace it, say), and read the file before the command came. */
static int
env_sets_bash(char *const *env)
{
	static const char *const names[] = {
		"SHELLOPTS=", "BASHOPTS=", "BASH_ENV=",
	};
	size_t i;

	for (; env && *env; env++)
		for (i = 0; i < sizeof names / sizeof *names; i++)
			if (!strncmp(*env, names[i], strlen(names[i])))
				return 1;
	return 0;
}

int
proc_prestart(const struct proc_opts *o, struct ah_error *err)
{
	struct proc_helper *h = o->helper;
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, statp[2] = { -1, -1 };
	int gop[2] = { -1, -1 };
	pid_t pid;

	if (!h || h->warm > 0 || !o->sandbox || !shell_is_bash(o->shell) ||
	    env_sets_bash(o->env))
		return 0;
	if (helper_current(h, o, err) < 0)
		return -1;
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(statp, O_CLOEXEC) < 0 || pipe2(gop, O_CLOEXEC) < 0) {
		ah_fail_errno(err, errno, "cannot create a pipe");
		pid = -1;
	} else {
		int ends[4] = { outp[1], errp[1], statp[1], gop[0] };

		pid = helper_spawn(h, "w", ends, err);
	}
	close(outp[1]);
	close(errp[1]);
	close(statp[1]);
	close(gop[0]);
	if (pid < 0) {
		close(outp[0]);
		close(errp[0]);
		close(statp[0]);
		close(gop[1]);
		return -1;
	}
	if (o->limits && (o->limits->by_cgroup & PROC_LIMIT_PROCS) &&
	    !h->pids_extra && pids_max(o->limits, 1) == 0)
		h->pids_extra = 1;
	h->warm = pid;
	h->warm_fd[0] = outp[0];
	h->warm_fd[1] = errp[0];
	h->warm_fd[2] = statp[0];
	h->warm_fd[3] = gop[1];
	return 0;
}

/* Writes the command and the dot after it (see warm_boot) into the pipe
 * of a shell started ahead, all at once or not at all: the pipe is made
 * big enough first, and the write does not wait, so that a shell that
 * does not read (stopped) cannot hold the call, or tool-exec, before its
 * time limit.  -1: the call starts its own shell. */
static int
warm_write(int go, const char *cmd)
{
	size_t len = strlen(cmd);
	long page = sysconf(_SC_PAGESIZE);
	int size = fcntl(go, F_GETPIPE_SZ);

	/* Not what bash -c could not be given (one argument is at most 32
	 * pages): the call's shell says so, as without a shell ahead. */
	if (size < 0 || page <= 0 || len >= 32 * (size_t)page ||
	    ((size_t)size <= len &&
	     fcntl(go, F_SETPIPE_SZ, (int)len + 1) <= (int)len) ||
	    fcntl(go, F_SETFL, O_NONBLOCK) < 0)
		return -1;
	return write_all(go, cmd, len) < 0 || write_all(go, ".", 1) < 0 ? -1
									: 0;
}

/* Gives the command to the shell started ahead, if there is one: its
 * supervisor's pid, the read ends of its output, error and status pipes
 * in out, errfd and stat.  0 when there is none, or when it died before
 * it took the command, or the command is more than its pipe can hold:
 * the call then starts its shell now (and says why, if that fails too).
 * A shell that got part of a command is ended before its pipe closes. */
static pid_t
warm_take(const struct proc_opts *o, int *out, int *errfd, int *stat)
{
	struct proc_helper *h = o->helper;
	pid_t pid = h ? h->warm : 0;
	int go;

	if (pid <= 0 || !shell_is_bash(o->shell))
		return 0;
	h->warm = 0;
	*out = h->warm_fd[0];
	*errfd = h->warm_fd[1];
	*stat = h->warm_fd[2];
	go = h->warm_fd[3];
	if (warm_write(go, o->command) == 0) {
		close(go);
		return pid;
	}
	end_call(o, pid);
	close(go);
	close(*out);
	close(*errfd);
	close(*stat);
	*out = *errfd = *stat = -1;
	return 0;
}

int
proc_run(const struct proc_opts *o, struct proc_result *r,
	 struct ah_error *err)
{
	const struct proc_limits *l = o->limits;
	struct pollfd pfd[2];
	double deadline, grace_end = 0, kill_at = 0, check_at;
	char chunk[65536];
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, statp[2] = { -1, -1 };
	int gop[2] = { -1, -1 };
	int status = 0, exited = 0, nfds, pidns, rc = -1, termed = 0, warm = 0;
	size_t got = 0;
	long long pids0, oom0;
	struct capture cap;
	ssize_t n;
	pid_t pid;

	memset(r, 0, sizeof *r);
	if (o->sandbox && o->sandbox->mode != SANDBOX_OFF && !o->helper)
		return ah_fail(err, AH_EIO, "a sandboxed command needs the "
			       "sandbox helper; it was not run");
	if (o->helper && helper_current(o->helper, o, err) < 0)
		return -1;
	if (capture_init(&cap, o->max_output) < 0)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	pids0 = pids_hits(l);
	oom0 = oom_kills(l);
	pid = warm_take(o, &outp[0], &errp[0], &statp[0]);
	if (pid > 0) {
		warm = 1;
		goto started;
	}
	if (o->helper && o->helper->pids_extra) {
		if (pids_max(l, 0) < 0) {
			ah_fail_errno(err, errno, "cannot set the process "
				      "limit in '%s'", l->cg_pids);
			goto fail;
		}
		o->helper->pids_extra = 0;
	}
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(statp, O_CLOEXEC) < 0 || pipe2(gop, O_CLOEXEC) < 0) {
		ah_fail_errno(err, errno, "cannot create a pipe");
		goto fail;
	}
	if (o->helper) {
		int ends[4] = { outp[1], errp[1], statp[1], gop[0] };

		pid = helper_spawn(o->helper, "r", ends, err);
	} else {
		pid = start(&pidns, err);
		if (pid == 0) {
			close(outp[0]);
			close(errp[0]);
			close(statp[0]);
			close(gop[1]);
			supervisor(o, pidns, 0, outp[1], errp[1], statp[1],
				   gop[0], -1, 0);
		}
	}
	if (pid < 0)
		goto fail;
	close(outp[1]);
	close(errp[1]);
	close(statp[1]);
	close(gop[0]);
	outp[1] = errp[1] = statp[1] = gop[0] = -1;
	if ((!o->helper && join_cgroups(l, pid, "command", err) < 0) ||
	    send_command(&gop[1], o->command, err) < 0) {
		end_call(o, pid);
		goto fail;
	}
started:
	deadline = mono_now() + o->timeout;
	check_at = mono_now() + 0.1;

	for (;;) {
		double t = mono_now(), until;
		int ms;

		if (o->interrupted && *o->interrupted && !r->interrupted) {
			r->interrupted = *o->interrupted;
			kill(-pid, SIGTERM);
			termed = 1;
			kill_at = t + 0.5;
		}
		if (!exited && !termed && t >= deadline) {
			r->timed_out = 1;
			kill(-pid, SIGTERM);
			termed = 1;
			kill_at = t + o->term_grace;
		}
		if (termed && !exited && t >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = t + 3600;
		}
		/* Over the process limit: a fork bomb does not stop by
		 * itself, so the call ends now. */
		if (l && l->procs && t >= check_at) {
			check_at = t + 0.1;
			if (l->by_cgroup & PROC_LIMIT_PROCS ?
			    pids_hits(l) > pids0 :
			    count_tree(pid, l->procs + warm) >=
			    l->procs + warm) {
				r->limit |= PROC_LIMIT_PROCS;
				break;
			}
		}
		if (exited && (outp[0] < 0 || t >= grace_end))
			break;
		until = exited ? grace_end : termed ? kill_at : deadline;
		if (l && l->procs && check_at < until)
			until = check_at;
		ms = (int)((until - t) * 1000) + 1;
		if (ms > 1000)
			ms = 1000;
		nfds = 0;
		if (outp[0] >= 0) {
			pfd[nfds].fd = outp[0];
			pfd[nfds++].events = POLLIN;
		}
		if (statp[0] >= 0) {
			pfd[nfds].fd = statp[0];
			pfd[nfds++].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)nfds, ms) < 0) {
			if (errno == EINTR)
				continue;
			ah_fail_errno(err, errno, "cannot poll");
			end_call(o, pid);
			goto fail;
		}
		if (outp[0] >= 0 && pfd[0].revents) {
			n = read(outp[0], chunk, sizeof chunk);
			if (n > 0)
				capture_add(&cap, chunk, (size_t)n);
			else if (n == 0 || errno != EINTR) {
				close(outp[0]);
				outp[0] = -1;
			}
		}
		if (statp[0] >= 0 && pfd[nfds - 1].revents) {
			/* The shell's wait status, from the supervisor; EOF
			 * without it: the supervisor died. */
			n = read(statp[0], (char *)&status + got,
				 sizeof status - got);
			if (n > 0)
				got += (size_t)n;
			if (got == sizeof status || n == 0 ||
			    (n < 0 && errno != EINTR)) {
				close(statp[0]);
				statp[0] = -1;
				if (got != sizeof status &&
				    waitpid(pid, &status, 0) != pid)
					status = SIGKILL;
				exited = 1;
				grace_end = mono_now() + o->grace;
			}
		}
	}
	r->status = status;
	if (!exited)
		r->status = SIGKILL; /* a limit ended it */
	/* Anything still holding the pipe after the grace is a background
	 * child: it dies with the rest of the namespace. */
	r->left_running = outp[0] >= 0 && exited;
	end_call(o, pid);
	if (oom0 >= 0 && oom_kills(l) > oom0)
		r->limit |= PROC_LIMIT_MEMORY;
	if (l && l->file_size && ((WIFSIGNALED(r->status) &&
				   WTERMSIG(r->status) == SIGXFSZ) ||
				  (WIFEXITED(r->status) &&
				   WEXITSTATUS(r->status) == 128 + SIGXFSZ)))
		r->limit |= PROC_LIMIT_FSIZE;
	if (outp[0] >= 0) {
		fcntl(outp[0], F_SETFL, O_NONBLOCK);
		while ((n = read(outp[0], chunk, sizeof chunk)) > 0)
			capture_add(&cap, chunk, (size_t)n);
	}
	/* The child wrote why it could not confine itself. */
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	n = read(errp[0], chunk, sizeof chunk - 1);
	if (n > 0) {
		chunk[n] = '\0';
		ah_fail(err, AH_EIO, "cannot set up the sandbox: %s; the "
			"command was not run", chunk);
		goto fail;
	}
	r->output = capture_text(&cap, &r->len);
	if (!r->output) {
		ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		goto fail;
	}
	rc = 0;
fail:
	close_pair(outp);
	close_pair(errp);
	close_pair(statp);
	close_pair(gop);
	capture_free(&cap);
	return rc;
}
