/* snap.c: snapshots of the workspace in a shadow git repository under
 * .agent/snap (the state directory's snap, state_dir()), driven through
 * the git program (agent-snap(1)).
 *
 * The repository is the harness's, never the user's: git runs with
 * GIT_DIR, GIT_INDEX_FILE and GIT_WORK_TREE of its own, an environment
 * made here from nothing (no GIT_* variable of the caller's, no system or
 * global configuration), and command-line settings that turn off what
 * could run a program (hooks, fsmonitor) or change the bytes recorded
 * (autocrlf, attributes).  The workspace is untrusted: its .gitattributes
 * are overridden by the repository's info/attributes, and the repository
 * itself is used only when its owner mark proves that agent-snap made it
 * for this user (see owner_mark): a .agent/snap that came with a clone
 * is refused whole.
 *
 * Each snapshot is a commit without parents whose message is one line of
 * JSON (session, step, calls, time, files, the empty directories), named
 * by a loose ref .agent/snap/git/refs/snap/NNNNNNNNNN (a sequence number)
 * that this file writes itself.  Every function here expects the working
 * directory to be the workspace.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "priv.h"

/* where the repository is: STATE_DIR/snap, as messages show it */
#define SNAP_DIR "%s/snap"
#define SD snap_dir()
#define REFS_DIR SNAP_DIR "/git/refs/snap"
/* the most empty directories one snapshot records */
#define SNAP_MAX_DIRS 100000
/* every file but .agent: a glob, which names no ignored path (git add
 * would fail on one) and holds whatever .gitignore says of .agent */
#define SNAP_EXCLUDE ":(exclude,top,glob)[.]agent/**"
/* the most bytes of git's output kept in memory (a list, a tree) */
#define SNAP_MAX_OUT (256u << 20)

/* What git is told on every run, before the command: nothing of the
 * user's or the repository's configuration may run a program or change
 * what is recorded.  (GIT_CONFIG_NOSYSTEM and GIT_CONFIG_GLOBAL keep the
 * other files out; these win over the repository's own config, which is
 * ours anyway.) */
static const char *const git_settings[] = {
	"core.hooksPath=/dev/null", "core.fsmonitor=false",
	"core.untrackedCache=true", "core.excludesFile=/dev/null",
	"core.attributesFile=/dev/null", "core.autocrlf=false",
	"core.safecrlf=false", "core.eol=lf", "core.symlinks=true",
	"core.fileMode=true", "core.ignoreCase=false",
	"core.precomposeUnicode=false", "core.sparseCheckout=false",
	"core.splitIndex=false", "core.quotePath=false", "core.pager=cat",
	"core.sshCommand=false", "core.askPass=false", "core.editor=false",
	"core.bigFileThreshold=512m", "core.logAllRefUpdates=false",
	"gc.auto=0", "gc.packRefs=false", "gc.reflogExpire=now",
	"maintenance.auto=false", "color.ui=false", "diff.noprefix=false",
	"diff.mnemonicPrefix=false", "diff.renames=false",
	"diff.external=", "submodule.recurse=false",
	"index.threads=1", "advice.detachedHead=false",
	"protocol.allow=never", "credential.helper=",
	"user.name=agent-snap", "user.email=agent-snap@localhost",
};

/* The repository's attributes, which come before any .gitattributes of
 * the workspace: files are recorded byte for byte, and no filter, text
 * conversion or diff driver is ever looked up. */
static const char attributes[] =
	"* -text -eol -crlf -ident -filter -working-tree-encoding !diff "
	"-merge -export-subst\n";
static const char exclude[] = "/.agent/\n";
static const char config[] =
	"[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
	"\tfilemode = true\n\tsymlinks = true\n\tlogallrefupdates = false\n";

/* The state directory, as messages show it. */
static const char *
snap_dir(void)
{
	return state_dir();
}

/* --- running git -------------------------------------------------------- */

/* Appends to out the environment git gets: the repository's variables
 * and a few of the caller's (PATH, to find its own helpers; LANG is C).
 * Nothing else of the caller's: no GIT_* variable, no key. */
static int
make_env(struct snap *s, struct ah_error *err)
{
	const char *path = getenv("PATH"), *sd = state_dir();
	/* the state directory, absolute (.agent is the workspace's) */
	const char *top = *sd == '/' ? "" : s->work, *sep = *sd == '/' ? "" : "/";
	char *v[16];
	size_t n = 0, i;

	if (asprintf(&v[n++], "GIT_DIR=%s%s" SNAP_DIR "/git", top, sep,
		     sd) < 0 ||
	    asprintf(&v[n++], "GIT_WORK_TREE=%s", s->work) < 0 ||
	    asprintf(&v[n++], "GIT_INDEX_FILE=%s%s" SNAP_DIR "/index", top,
		     sep, sd) < 0 ||
	    asprintf(&v[n++], "PATH=%s", path && *path ? path
		     : "/usr/bin:/bin") < 0)
		goto oom;
	{
		static const char *const fixed[] = {
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_ATTR_NOSYSTEM=1", "GIT_NO_REPLACE_OBJECTS=1",
			"GIT_TERMINAL_PROMPT=0", "GIT_LITERAL_PATHSPECS=0",
			"LC_ALL=C", "TZ=UTC", "HOME=/nonexistent",
		};
		for (i = 0; i < sizeof fixed / sizeof *fixed; i++)
			if (!(v[n++] = strdup(fixed[i])))
				goto oom;
	}
	s->env = calloc(n + 1, sizeof *s->env);
	if (!s->env)
		goto oom;
	memcpy(s->env, v, n * sizeof *v);
	return 0;
oom:
	for (i = 0; i + 1 < n; i++)
		free(v[i]);
	return ah_fail(err, AH_ENOMEM, "out of memory");
}

/* The first line of git's complaint, for a message. */
static const char *
first_line(struct buf *b)
{
	char *p;

	if (!b->data || !b->len)
		return "no message";
	/* "fatal: ..." comes last: the last line says it */
	while (b->len && (b->data[b->len - 1] == '\n'))
		b->data[--b->len] = '\0';
	p = strrchr(b->data, '\n');
	return p ? p + 1 : b->data;
}

/* Runs git with args (NULL-terminated), in the workspace, with in (NULL:
 * /dev/null) as its stdin; its stdout goes to outfd when that is >= 0,
 * else into out.  literal: paths are literal pathspecs.  0 when git
 * exits 0; -1 with its last line of stderr otherwise. */
static int
run_git(struct snap *s, const char *const *args, const char *in,
	size_t inlen, struct buf *out, int outfd, int literal,
	struct ah_error *err)
{
	const char *argv[2 * (sizeof git_settings / sizeof *git_settings) + 64];
	struct buf errb = BUF_INIT(64 * 1024);
	int ip[2] = { -1, -1 }, op[2] = { -1, -1 }, ep[2] = { -1, -1 };
	size_t n = 0, i, inpos = 0;
	pid_t pid;
	int st, rc = -1;
	char chunk[65536];

	argv[n++] = s->git;
	for (i = 0; i < sizeof git_settings / sizeof *git_settings; i++) {
		argv[n++] = "-c";
		argv[n++] = git_settings[i];
	}
	for (i = 0; args[i]; i++) {
		if (n + 2 >= sizeof argv / sizeof *argv)
			return ah_fail(err, AH_EFORMAT, "git: too many arguments");
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	if (literal) {
		for (i = 0; s->env[i]; i++)
			if (!strncmp(s->env[i], "GIT_LITERAL_PATHSPECS=", 22))
				s->env[i][22] = '1';
	}
	if ((in && pipe2(ip, O_CLOEXEC) < 0) ||
	    (outfd < 0 && pipe2(op, O_CLOEXEC) < 0) ||
	    pipe2(ep, O_CLOEXEC) < 0) {
		ah_fail_errno(err, errno, "cannot run git");
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		ah_fail_errno(err, errno, "cannot run git");
		goto out;
	}
	if (pid == 0) {
		int nul;

		/* git dies with us: no git left writing after a kill -9,
		 * and our lock (inherited) held until it is gone */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		if (in)
			dup2(ip[0], 0);
		else if ((nul = open("/dev/null", O_RDONLY)) >= 0)
			dup2(nul, 0);
		dup2(outfd >= 0 ? outfd : op[1], 1);
		dup2(ep[1], 2);
		execve(s->git, (char *const *)argv, s->env);
		dprintf(2, "cannot run '%s': %s\n", s->git, strerror(errno));
		_exit(127);
	}
	if (in) {
		close(ip[0]);
		ip[0] = -1;
		if (!inlen) {
			close(ip[1]);
			ip[1] = -1;
		}
	}
	if (op[1] >= 0) {
		close(op[1]);
		op[1] = -1;
	}
	close(ep[1]);
	ep[1] = -1;
	for (;;) {
		struct pollfd pf[3];
		int np = 0, wi = -1, oi = -1, ei = -1;
		ssize_t got;

		if (ip[1] >= 0) {
			wi = np;
			pf[np++] = (struct pollfd){ ip[1], POLLOUT, 0 };
		}
		if (op[0] >= 0) {
			oi = np;
			pf[np++] = (struct pollfd){ op[0], POLLIN, 0 };
		}
		if (ep[0] >= 0) {
			ei = np;
			pf[np++] = (struct pollfd){ ep[0], POLLIN, 0 };
		}
		if (!np)
			break;
		if (poll(pf, (nfds_t)np, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (wi >= 0 && pf[wi].revents) {
			got = write(ip[1], in + inpos, inlen - inpos);
			if (got > 0)
				inpos += (size_t)got;
			if (got < 0 || inpos == inlen) {
				close(ip[1]);
				ip[1] = -1;
			}
		}
		if (oi >= 0 && pf[oi].revents) {
			got = read(op[0], chunk, sizeof chunk);
			if (got > 0) {
				if (buf_append(out, chunk, (size_t)got) < 0) {
					ah_fail(err, AH_ETOOBIG, "git %s: its "
						"output is too large", args[0]);
					kill(pid, SIGKILL);
					close(op[0]);
					op[0] = -1;
				}
			} else {
				close(op[0]);
				op[0] = -1;
			}
		}
		if (ei >= 0 && pf[ei].revents) {
			got = read(ep[0], chunk, sizeof chunk);
			if (got > 0) {
				if (errb.len + (size_t)got < errb.max)
					buf_append(&errb, chunk, (size_t)got);
			} else {
				close(ep[0]);
				ep[0] = -1;
			}
		}
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			st = -1;
			break;
		}
	if (err->code)
		goto out;
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		const char *why = first_line(&errb);
		char *safe = utf8_for_terminal(why, strlen(why), 0, NULL);

		ah_fail(err, AH_EIO, "git %s failed: %s", args[0],
			st != -1 && WIFSIGNALED(st) ? "killed by a signal"
			: safe ? safe : why);
		free(safe);
		goto out;
	}
	rc = 0;
out:
	for (i = 0; s->env[i]; i++)
		if (!strncmp(s->env[i], "GIT_LITERAL_PATHSPECS=", 22))
			s->env[i][22] = '0';
	for (i = 0; i < 2; i++) {
		if (ip[i] >= 0)
			close(ip[i]);
		if (op[i] >= 0)
			close(op[i]);
		if (ep[i] >= 0)
			close(ep[i]);
	}
	buf_free(&errb);
	return rc;
}

/* run_git into out, out reset first, with its trailing newline cut. */
static int
git_out(struct snap *s, const char *const *args, const char *in,
	size_t inlen, struct buf *out, struct ah_error *err)
{
	buf_reset(out);
	out->max = SNAP_MAX_OUT;
	if (run_git(s, args, in, inlen, out, -1, 0, err) < 0)
		return -1;
	if (buf_putc(out, '\0') < 0)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	out->len--;
	while (out->len && out->data[out->len - 1] == '\n')
		out->data[--out->len] = '\0';
	return 0;
}

int
snap_git_out(struct snap *s, const char *const *args, struct buf *out,
	     struct ah_error *err)
{
	return git_out(s, args, NULL, 0, out, err);
}

int
snap_ignored(struct snap *s, struct buf *out, struct ah_error *err)
{
	const char *args[] = { "ls-files", "-z", "-o", "-i", "--directory",
			       "--exclude-standard", "--", ".", SNAP_EXCLUDE,
			       NULL };

	return git_out(s, args, NULL, 0, out, err);
}

static int
is_hex(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isxdigit((unsigned char)p[i]) || isupper((unsigned char)p[i]))
			return 0;
	return 1;
}

/* --- the git program -------------------------------------------------- */

/* The git program: the first "git" in PATH's absolute directories that is
 * not in the workspace (a repository could ship one, and a PATH with "."
 * or a relative entry would run it). */
static char *
find_git(const char *work, struct ah_error *err)
{
	const char *path = getenv("PATH"), *p, *e;
	size_t wl = strlen(work);
	struct stat st;
	char *cand;

	if (!path || !*path)
		path = "/usr/bin:/bin";
	for (p = path; *p; p = *e ? e + 1 : e) {
		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		if (*p != '/')
			continue;
		if (asprintf(&cand, "%.*s/git", (int)(e - p), p) < 0) {
			ah_fail(err, AH_ENOMEM, "out of memory");
			return NULL;
		}
		{
			char *real = realpath(cand, NULL);
			int inside = real && !strncmp(real, work, wl) &&
				(real[wl] == '/' || !real[wl]);

			if (real && !inside && stat(real, &st) == 0 &&
			    S_ISREG(st.st_mode) && access(real, X_OK) == 0) {
				free(cand);
				return real;
			}
			free(real);
		}
		free(cand);
	}
	ah_fail(err, AH_EIO, "cannot find the git program in PATH (outside "
		"the workspace): install git");
	return NULL;
}

/* --- the owner mark ----------------------------------------------------- */

/* The directory of the user's key:
 * ${XDG_STATE_HOME:-$HOME/.local/state}/agent-harness (room left in dir
 * for a name of 80 bytes after it) */
int
user_key_dir(char *dir, size_t size, struct ah_error *err)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	int n;

	if (state && *state == '/')
		n = snprintf(dir, size, "%s/agent-harness", state);
	else if (home && *home == '/')
		n = snprintf(dir, size, "%s/.local/state/agent-harness", home);
	else
		return ah_fail(err, AH_EIO, "cannot keep the snapshot key: "
			       "neither XDG_STATE_HOME nor HOME is set");
	if (n < 0 || (size_t)n + 80 >= size)
		return ah_fail(err, AH_EFORMAT, "the state directory's name "
			       "is too long");
	return 0;
}

/* The user's key: 32 random bytes (hex) in
 * ${XDG_STATE_HOME:-$HOME/.local/state}/agent-harness/snap-key, made
 * once (also the key of a session record's mode_mark: sessdir.c). */
int
user_key(char key[65], struct ah_error *err)
{
	char dir[PATH_MAX - 16], file[PATH_MAX], *p;
	unsigned char r[32];
	int fd, i, n;

	if (user_key_dir(dir, sizeof dir, err) < 0)
		return -1;
	snprintf(file, sizeof file, "%s/snap-key", dir);
	for (i = 0; i < 2; i++) {
		fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t got = read(fd, key, 64);

			close(fd);
			if (got == 64 && is_hex(key, 64)) {
				key[64] = '\0';
				return 0;
			}
			return ah_fail(err, AH_EFORMAT, "'%s' is not a "
				       "snapshot key (64 hex digits): remove "
				       "it to make a new one", file);
		}
		if (errno != ENOENT)
			return ah_fail_errno(err, errno, "cannot read '%s'",
					     file);
		/* mkdir -p of the state directory, for us alone at the end */
		for (p = dir + 1; (p = strchr(p, '/')); p++) {
			*p = '\0';
			if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
				ah_fail_errno(err, errno, "cannot create '%s'",
					      dir);
				*p = '/';
				return -1;
			}
			*p = '/';
		}
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return ah_fail_errno(err, errno, "cannot create '%s'",
					     dir);
		if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
			return ah_fail_errno(err, errno, "no random bytes");
		for (n = 0; n < 32; n++)
			snprintf(key + 2 * n, 3, "%02x", r[n]);
		fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			  O_CLOEXEC, 0600);
		if (fd < 0) {
			if (errno == EEXIST)
				continue; /* made meanwhile: read it */
			return ah_fail_errno(err, errno, "cannot create '%s'",
					     file);
		}
		if (write(fd, key, 64) != 64 || fsync(fd) < 0) {
			int e = errno;

			close(fd);
			unlink(file);
			return ah_fail_errno(err, e, "cannot write '%s'", file);
		}
		close(fd);
		key[64] = '\0';
		return 0;
	}
	return ah_fail(err, AH_EIO, "cannot make the snapshot key");
}

/* The mark of the directory dfd: the SHA-256 of the user's key and its
 * device and inode.  Nobody without the key can make it, and it does not
 * survive a copy of the directory (a clone, an archive). */
static int
owner_mark(int dfd, char hex[65], struct ah_error *err)
{
	char key[65], text[128];
	struct stat st;
	int n;

	if (fstat(dfd, &st) < 0)
		return ah_fail_errno(err, errno, "cannot stat '" SNAP_DIR "'", SD);
	if (user_key(key, err) < 0)
		return -1;
	n = snprintf(text, sizeof text, "agent-snap %s %llu %llu", key,
		     (unsigned long long)st.st_dev,
		     (unsigned long long)st.st_ino);
	policy_hash(text, (size_t)n, hex);
	return 0;
}

/* --- files of .agent/snap ---------------------------------------------- */

/* Writes data as the new file name beneath dfd (O_EXCL: nothing there). */
static int
put_new(int dfd, const char *name, const char *data, size_t len,
	mode_t mode, struct ah_error *err)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			O_CLOEXEC, mode);
	ssize_t got;

	if (fd < 0)
		return ah_fail_errno(err, errno, "cannot create '%s'", name);
	got = write(fd, data, len);
	if (got != (ssize_t)len) {
		int e = got < 0 ? errno : EIO;

		close(fd);
		return ah_fail_errno(err, e, "cannot write '%s'", name);
	}
	close(fd);
	return 0;
}

/* Makes the repository in a new directory beside .agent/snap, then
 * renames it into place: a kill at any point leaves none or all of it
 * (a half-made one is a .agent/snap.new.* that nothing uses). */
static int
create_repo(int agentfd, struct ah_error *err)
{
	static const char *const dirs[] = { "git", "git/objects", "git/refs",
					    "git/refs/heads", "git/refs/snap",
					    "git/info" };
	char tmp[64], hex[65];
	unsigned char r[6];
	int dfd = -1, rc = -1;
	size_t i;

	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		return ah_fail_errno(err, errno, "no random bytes");
	snprintf(tmp, sizeof tmp, "snap.new.%02x%02x%02x%02x%02x%02x", r[0],
		 r[1], r[2], r[3], r[4], r[5]);
	if (mkdirat(agentfd, tmp, 0700) < 0)
		return ah_fail_errno(err, errno, "cannot create '%s/%s'",
				     SD, tmp);
	dfd = openat(agentfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		     O_CLOEXEC);
	if (dfd < 0) {
		ah_fail_errno(err, errno, "cannot open '%s/%s'", SD, tmp);
		goto out;
	}
	for (i = 0; i < sizeof dirs / sizeof *dirs; i++)
		if (mkdirat(dfd, dirs[i], 0700) < 0) {
			ah_fail_errno(err, errno, "cannot create '%s'", dirs[i]);
			goto out;
		}
	if (put_new(dfd, "git/HEAD", "ref: refs/heads/snap\n", 21, 0600,
		    err) < 0 ||
	    put_new(dfd, "git/config", config, sizeof config - 1, 0600,
		    err) < 0 ||
	    put_new(dfd, "git/info/attributes", attributes,
		    sizeof attributes - 1, 0600, err) < 0 ||
	    put_new(dfd, "git/info/exclude", exclude, sizeof exclude - 1,
		    0600, err) < 0 ||
	    /* the user's repository never sees (nor adds) ours */
	    put_new(dfd, ".gitignore", "*\n", 2, 0600, err) < 0 ||
	    owner_mark(dfd, hex, err) < 0)
		goto out;
	hex[64] = '\n';
	if (put_new(dfd, "owner", hex, 65, 0600, err) < 0)
		goto out;
	if (renameat(agentfd, tmp, agentfd, "snap") < 0) {
		ah_fail_errno(err, errno, "cannot create '" SNAP_DIR "'", SD);
		goto out;
	}
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	if (rc < 0) {
		/* what was made of it: left for gc, never used */
		;
	}
	return rc;
}

/* Reads the small file name beneath dfd into b (at most max bytes). */
static int
read_small(int dfd, const char *name, char *b, size_t max, size_t *len)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return -1;
	got = read(fd, b, max);
	close(fd);
	if (got < 0)
		return -1;
	*len = (size_t)got;
	return 0;
}

/* Compares the file name beneath dfd with want. */
static int
same_file(int dfd, const char *name, const char *want, size_t n)
{
	char b[512];
	size_t len;

	return n < sizeof b && read_small(dfd, name, b, sizeof b, &len) == 0 &&
		len == n && !memcmp(b, want, n);
}

int
snap_open(struct snap *s, int create, struct ah_error *err)
{
	char hex[65], have[80];
	size_t len;
	int agentfd = -1, dfd = -1, rc = -1;
	struct stat st;

	memset(s, 0, sizeof *s);
	s->lockfd = -1;
	s->dirfd = -1;
	s->work = getcwd(NULL, 0);
	if (!s->work)
		return ah_fail_errno(err, errno, "cannot tell the workspace");
	/* a state directory of its own: checked (and made) as for a
	 * session; it stands where .agent stands */
	if (state_dir_given()) {
		rc = state_dir_check(s->work, create, err);
		if (rc) {
			if (rc > 0)
				ah_fail(err, AH_EFORMAT, "no snapshots here: "
					"nothing in '%s'", state_dir());
			rc = -1;
			goto out;
		}
		agentfd = agent_open_dir(state_dir(), create, err);
		if (agentfd < 0)
			goto out;
	} else
		agentfd = open(".agent", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			       O_CLOEXEC);
	if (agentfd < 0 && errno == ENOENT && create) {
		if (mkdir(".agent", 0777) < 0 && errno != EEXIST) {
			ah_fail_errno(err, errno, "cannot create '.agent'");
			goto out;
		}
		agentfd = open(".agent", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			       O_CLOEXEC);
	}
	if (agentfd < 0) {
		if (errno == ENOENT)
			ah_fail(err, AH_EFORMAT, "no snapshots here: no "
				"'.agent'");
		else if (errno == ELOOP || errno == ENOTDIR)
			ah_fail(err, AH_EFORMAT, "'.agent' is not a directory "
				"(a symbolic link?): refusing to use it");
		else
			ah_fail_errno(err, errno, "cannot open '.agent'");
		goto out;
	}
	dfd = openat(agentfd, "snap", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		     O_CLOEXEC);
	if (dfd < 0 && errno == ENOENT && create) {
		if (create_repo(agentfd, err) < 0)
			goto out;
		dfd = openat(agentfd, "snap", O_RDONLY | O_DIRECTORY |
			     O_NOFOLLOW | O_CLOEXEC);
	}
	if (dfd < 0) {
		if (errno == ENOENT)
			ah_fail(err, AH_EFORMAT, "no snapshots here: no '"
				SNAP_DIR "'", SD);
		else if (errno == ELOOP || errno == ENOTDIR)
			ah_fail(err, AH_EFORMAT, "'" SNAP_DIR "' is not a "
				"directory (a symbolic link?): refusing to use "
				"it", SD);
		else
			ah_fail_errno(err, errno, "cannot open '" SNAP_DIR "'",
				      SD);
		goto out;
	}
	/* ours, for this user, made here: else none of it is used */
	if (owner_mark(dfd, hex, err) < 0)
		goto out;
	hex[64] = '\n';
	if (read_small(dfd, "owner", have, sizeof have, &len) < 0 ||
	    len != 65 || memcmp(have, hex, 65) ||
	    fstatat(dfd, "git", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(st.st_mode) ||
	    !same_file(dfd, "git/config", config, sizeof config - 1) ||
	    !same_file(dfd, "git/info/attributes", attributes,
		       sizeof attributes - 1)) {
		char aside[32];
		unsigned char r[6];

		if (!create) {
			ah_fail(err, AH_EFORMAT, "'%s%s" SNAP_DIR "' was not "
				"made by agent-snap for this user in this "
				"place (it came with the repository, or was "
				"copied): none of it is used (agent-snap take "
				"moves it aside and starts afresh)",
				*SD == '/' ? "" : s->work,
				*SD == '/' ? "" : "/", SD);
			goto out;
		}
		/* moved aside, whole and unused; a new one takes its place */
		if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
			ah_fail_errno(err, errno, "no random bytes");
			goto out;
		}
		snprintf(aside, sizeof aside, "snap.refused.%02x%02x%02x%02x"
			 "%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5]);
		close(dfd);
		dfd = -1;
		if (renameat(agentfd, "snap", agentfd, aside) < 0) {
			ah_fail_errno(err, errno, "cannot move '" SNAP_DIR "' "
				      "aside", SD);
			goto out;
		}
		snprintf(s->moved_aside, sizeof s->moved_aside, "%s/%s", SD,
			 aside);
		if (create_repo(agentfd, err) < 0)
			goto out;
		dfd = openat(agentfd, "snap", O_RDONLY | O_DIRECTORY |
			     O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0) {
			ah_fail_errno(err, errno, "cannot open '" SNAP_DIR "'",
				      SD);
			goto out;
		}
	}
	/* the lock: not close-on-exec, so that git, which dies with us,
	 * holds it until it is gone */
	s->lockfd = openat(dfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
	if (s->lockfd < 0) {
		ah_fail_errno(err, errno, "cannot open '" SNAP_DIR "/lock'",
			      SD);
		goto out;
	}
	while (flock(s->lockfd, LOCK_EX) < 0)
		if (errno != EINTR) {
			ah_fail_errno(err, errno, "cannot lock '" SNAP_DIR
				      "/lock'", SD);
			goto out;
		}
	/* under the lock, an index.lock is what a killed git left */
	if (unlinkat(dfd, "index.lock", 0) < 0 && errno != ENOENT) {
		ah_fail_errno(err, errno, "cannot remove '" SNAP_DIR
			      "/index.lock'", SD);
		goto out;
	}
	s->git = find_git(s->work, err);
	if (!s->git || make_env(s, err) < 0)
		goto out;
	s->dirfd = dfd;
	dfd = -1;
	rc = 0;
out:
	if (agentfd >= 0)
		close(agentfd);
	if (dfd >= 0)
		close(dfd);
	if (rc < 0)
		snap_close(s);
	return rc;
}

int
snap_lock(struct snap *s, struct ah_error *err)
{
	char path[PATH_MAX];
	struct stat a, b;

	while (flock(s->lockfd, LOCK_EX) < 0)
		if (errno != EINTR)
			return ah_fail_errno(err, errno, "cannot lock '" SNAP_DIR
					     "/lock'", SD);
	if (snprintf(path, sizeof path, SNAP_DIR, SD) >= (int)sizeof path ||
	    fstat(s->dirfd, &a) < 0 || lstat(path, &b) < 0 ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		flock(s->lockfd, LOCK_UN);
		return 1;
	}
	if (unlinkat(s->dirfd, "index.lock", 0) < 0 && errno != ENOENT) {
		flock(s->lockfd, LOCK_UN);
		return ah_fail_errno(err, errno, "cannot remove '" SNAP_DIR
				     "/index.lock'", SD);
	}
	return 0;
}

void
snap_unlock(struct snap *s)
{
	flock(s->lockfd, LOCK_UN);
}

void
snap_close(struct snap *s)
{
	size_t i;

	if (s->lockfd >= 0)
		close(s->lockfd);
	if (s->dirfd >= 0)
		close(s->dirfd);
	if (s->env)
		for (i = 0; s->env[i]; i++)
			free(s->env[i]);
	free(s->env);
	free(s->git);
	free(s->work);
	s->work = s->git = NULL;
	s->env = NULL;
	s->lockfd = s->dirfd = -1;
}

/* --- the refs ----------------------------------------------------------- */

struct ref {
	unsigned long seq;
	char hash[41];
};

static int
ref_cmp(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;

	return x->seq < y->seq ? 1 : x->seq > y->seq ? -1 : 0;
}

/* The snapshots, newest first.  A ref file that is not a hash and a
 * newline (a write a kill cut short) is removed. */
static int
read_refs(struct snap *s, struct ref **out, size_t *n, struct ah_error *err)
{
	int fd = openat(s->dirfd, "git/refs/snap", O_RDONLY | O_DIRECTORY |
			O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *de;
	struct ref *v = NULL, *nv;
	size_t cap = 0, len;
	char b[64], *end;

	*out = NULL;
	*n = 0;
	if (fd < 0)
		return ah_fail_errno(err, errno, "cannot open '" REFS_DIR "'",
				     SD);
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return ah_fail_errno(err, errno, "cannot read '" REFS_DIR "'",
				     SD);
	}
	while ((de = readdir(d))) {
		unsigned long seq;

		if (de->d_name[0] == '.')
			continue;
		errno = 0;
		seq = strtoul(de->d_name, &end, 10);
		if (*end || errno || strlen(de->d_name) != 10)
			continue;
		if (read_small(dirfd(d), de->d_name, b, sizeof b, &len) < 0 ||
		    len != 41 || b[40] != '\n' || !is_hex(b, 40)) {
			unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			nv = realloc(v, cap * sizeof *v);
			if (!nv) {
				free(v);
				closedir(d);
				return ah_fail(err, AH_ENOMEM, "out of memory");
			}
			v = nv;
		}
		v[*n].seq = seq;
		memcpy(v[*n].hash, b, 40);
		v[*n].hash[40] = '\0';
		(*n)++;
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof *v, ref_cmp);
	*out = v;
	return 0;
}

/* Names commit by the next sequence number: hint when that is free
 * (the caller's last one plus one: nobody wrote after it), else one past
 * the highest; *got (may be NULL) receives it. */
static int
write_ref_at(struct snap *s, const char *commit, unsigned long hint,
	     unsigned long *got, struct ah_error *err)
{
	struct ref *refs;
	size_t n;
	unsigned long seq;
	char name[48], line[41];
	int fd, tries;

	if (hint) {
		snprintf(name, sizeof name, "git/refs/snap/%010lu", hint);
		fd = openat(s->dirfd, name, O_WRONLY | O_CREAT | O_EXCL |
			    O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			memcpy(line, commit, 40);
			line[40] = '\n';
			if (write(fd, line, 41) != 41) {
				int e = errno;

				close(fd);
				unlinkat(s->dirfd, name, 0);
				return ah_fail_errno(err, e, "cannot write '"
						     SNAP_DIR "/%s'", SD,
						     name);
			}
			close(fd);
			if (got)
				*got = hint;
			s->seq = hint;
			return 0;
		}
	}
	if (read_refs(s, &refs, &n, err) < 0)
		return -1;
	seq = n ? refs[0].seq + 1 : 1;
	free(refs);
	memcpy(line, commit, 40);
	line[40] = '\n';
	for (tries = 0; tries < 1000; tries++, seq++) {
		snprintf(name, sizeof name, "git/refs/snap/%010lu", seq);
		fd = openat(s->dirfd, name, O_WRONLY | O_CREAT | O_EXCL |
			    O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno == EEXIST)
			continue;
		if (fd < 0)
			return ah_fail_errno(err, errno, "cannot create '"
					     SNAP_DIR "/%s'", SD, name);
		if (write(fd, line, 41) != 41) {
			int e = errno;

			close(fd);
			unlinkat(s->dirfd, name, 0);
			return ah_fail_errno(err, e, "cannot write '" SNAP_DIR
					     "/%s'", SD, name);
		}
		close(fd);
		if (got)
			*got = seq;
		s->seq = seq;
		return 0;
	}
	return ah_fail(err, AH_EIO, "cannot name the snapshot");
}

static int
write_ref(struct snap *s, const char *commit, struct ah_error *err)
{
	return write_ref_at(s, commit, 0, NULL, err);
}

int
snap_write_ref(struct snap *s, const char *commit, unsigned long hint,
	       unsigned long *seq, struct ah_error *err)
{
	return write_ref_at(s, commit, hint, seq, err);
}

int
snap_ref_is(struct snap *s, unsigned long seq, const char *commit)
{
	char name[48], b[64];
	size_t len;

	snprintf(name, sizeof name, "git/refs/snap/%010lu", seq);
	return read_small(s->dirfd, name, b, sizeof b, &len) == 0 &&
		len == 41 && !memcmp(b, commit, 40);
}

int
snap_resolve(struct snap *s, const char *id, char hash[41],
	     struct ah_error *err)
{
	struct ref *refs;
	size_t n, i, len = strlen(id), found = 0;

	if (len < 4 || len > 40 || !is_hex(id, len))
		return ah_fail(err, AH_EFORMAT, "'%s' is not a snapshot id "
			       "(4 to 40 hex digits)", id);
	if (read_refs(s, &refs, &n, err) < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (!strncmp(refs[i].hash, id, len) &&
		    (!found || strcmp(hash, refs[i].hash))) {
			found++;
			memcpy(hash, refs[i].hash, 41);
		}
	free(refs);
	if (found > 1)
		return ah_fail(err, AH_EFORMAT, "snapshot id '%s' is "
			       "ambiguous: give more of it", id);
	if (!found)
		return ah_fail(err, AH_EFORMAT, "no snapshot '%s' (agent-snap "
			       "list shows them)", id);
	return 0;
}

/* --- a snapshot's commit ------------------------------------------------ */

/* The tree and the message (parsed) of commit. */
static int
read_commit(struct snap *s, const char *commit, char tree[41], cJSON **meta,
	    struct ah_error *err)
{
	const char *args[] = { "cat-file", "commit", commit, NULL };
	struct buf out = BUF_INIT(0);
	char *msg;
	int rc = -1;

	if (git_out(s, args, NULL, 0, &out, err) < 0)
		goto out;
	msg = strstr(out.data, "\n\n");
	if (strncmp(out.data, "tree ", 5) || out.len < 45 ||
	    !is_hex(out.data + 5, 40) || !msg) {
		ah_fail(err, AH_EFORMAT, "snapshot %s is not one", commit);
		goto out;
	}
	memcpy(tree, out.data + 5, 40);
	tree[40] = '\0';
	*meta = cJSON_Parse(msg + 2);
	if (!cJSON_IsObject(*meta)) {
		cJSON_Delete(*meta);
		*meta = NULL;
		ah_fail(err, AH_EFORMAT, "snapshot %s has no record", commit);
		goto out;
	}
	rc = 0;
out:
	buf_free(&out);
	return rc;
}

/* --- empty directories -------------------------------------------------- */

/* Adds rel (a directory beneath dfd, which is it) and every directory
 * under it to arr; never through a symbolic link. */
static int
walk_dirs(int dfd, const char *rel, cJSON *arr, int depth,
	  struct ah_error *err)
{
	DIR *d;
	struct dirent *de;
	int rc = 0;

	if (cJSON_GetArraySize(arr) >= SNAP_MAX_DIRS || depth > 256) {
		close(dfd);
		return 0;
	}
	if (!cJSON_AddItemToArray(arr, cJSON_CreateString(rel))) {
		close(dfd);
		return ah_fail(err, AH_ENOMEM, "out of memory");
	}
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	while (rc == 0 && (de = readdir(d))) {
		char *sub;
		int fd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (asprintf(&sub, "%s/%s", rel, de->d_name) < 0) {
			close(fd);
			rc = ah_fail(err, AH_ENOMEM, "out of memory");
			break;
		}
		rc = walk_dirs(fd, sub, arr, depth + 1, err);
		free(sub);
	}
	closedir(d);
	return rc;
}

/* The directories git cannot record (with no file under them), into
 * arr: git lists them as untracked once every file is added. */
static int
empty_dirs(struct snap *s, cJSON *arr, struct ah_error *err)
{
	const char *with[] = { "ls-files", "-z", "-o", "--directory",
			       "--exclude-standard", "--", ".",
			       SNAP_EXCLUDE, NULL };
	const char *without[] = { "ls-files", "-z", "-o", "--directory",
				  "--", ".", SNAP_EXCLUDE, NULL };
	struct buf out = BUF_INIT(0);
	size_t i, n;
	int rc = -1;

	if (git_out(s, s->include_ignored ? without : with, NULL, 0, &out,
		    err) < 0)
		goto out;
	for (i = 0; i < out.len; i += n + 1) {
		char *p = out.data + i;
		int fd;

		n = strlen(p);
		if (!n || p[n - 1] != '/')
			continue;
		p[n - 1] = '\0';
		fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && walk_dirs(fd, p, arr, 0, err) < 0)
			goto out;
	}
	rc = 0;
out:
	buf_free(&out);
	return rc;
}

/* --- take --------------------------------------------------------------- */

/* git add of the whole workspace but .agent (with --force: ignored
 * files too) into args[0..8). */
static void
add_args(const struct snap *s, const char **args)
{
	size_t n = 0;

	args[n++] = "add";
	args[n++] = "-A";
	args[n++] = "--verbose";
	if (s->include_ignored)
		args[n++] = "--force";
	args[n++] = "--";
	args[n++] = ".";
	args[n++] = SNAP_EXCLUDE;
	args[n] = NULL;
}

static int
add_meta(cJSON *m, const struct snap_meta *in, long files)
{
	struct timespec ts;
	struct tm tm;
	char now[64];
	cJSON *calls = cJSON_CreateArray();
	const char *p, *e;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(now + strlen(now), sizeof now - strlen(now), ".%03ldZ",
		 ts.tv_nsec / 1000000);
	if (!calls || !cJSON_AddItemToObject(m, "calls", calls))
		return cJSON_Delete(calls), -1;
	for (p = in->calls ? in->calls : ""; *p; p = *e ? e + 1 : e) {
		e = strchr(p, ',');
		if (!e)
			e = p + strlen(p);
		if (e > p) {
			cJSON *c = cJSON_CreateString("");

			if (!c)
				return -1;
			free(c->valuestring);
			c->valuestring = strndup(p, (size_t)(e - p));
			if (!c->valuestring || !cJSON_AddItemToArray(calls, c)) {
				cJSON_Delete(c);
				return -1;
			}
		}
	}
	return ((in->session ? cJSON_AddStringToObject(m, "session",
						       in->session)
		 : cJSON_AddNullToObject(m, "session")) &&
		(in->step < 0 ? cJSON_AddNullToObject(m, "step")
		 : cJSON_AddNumberToObject(m, "step", (double)in->step)) &&
		cJSON_AddStringToObject(m, "time", now) &&
		cJSON_AddNumberToObject(m, "ns", (double)ts.tv_nsec) &&
		cJSON_AddNumberToObject(m, "files", (double)files) &&
		cJSON_AddStringToObject(m, "kind", in->kind ? in->kind
					: "step") &&
		(!in->of || cJSON_AddStringToObject(m, "of", in->of))) ? 0 : -1;
}

char *
snap_message(const struct snap_meta *in, long files, const char *scan,
	     const cJSON *dirs)
{
	cJSON *m = cJSON_CreateObject();
	char *msg = NULL;

	if (m && add_meta(m, in, files) == 0 &&
	    cJSON_AddStringToObject(m, "scan", scan) &&
	    cJSON_AddItemReferenceToObject(m, "dirs", (cJSON *)dirs))
		msg = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	return msg;
}

/* The snapshot, with its tree and its empty directories (dirs, taken,
 * may be NULL). */
static int
take(struct snap *s, const struct snap_meta *in, char commit[41],
     char tree[41], cJSON **dirs, struct ah_error *err)
{
	const char *add[8];
	const char *wt[] = { "write-tree", NULL };
	struct buf out = BUF_INIT(0);
	cJSON *d = cJSON_CreateArray();
	char *msg = NULL;
	long files = 0;
	size_t i;
	int rc = -1;

	add_args(s, add);
	if (!d) {
		ah_fail(err, AH_ENOMEM, "out of memory");
		goto out;
	}
	if (git_out(s, add, NULL, 0, &out, err) < 0)
		goto out;
	for (i = 0; i < out.len; i++)
		files += out.data[i] == '\n';
	if (out.len)
		files++;
	if (git_out(s, wt, NULL, 0, &out, err) < 0)
		goto out;
	if (out.len != 40 || !is_hex(out.data, 40)) {
		ah_fail(err, AH_EIO, "git write-tree: not a tree id");
		goto out;
	}
	memcpy(tree, out.data, 41);
	if (empty_dirs(s, d, err) < 0)
		goto out;
	if (!(msg = snap_message(in, files, "full", d))) {
		ah_fail(err, AH_ENOMEM, "out of memory");
		goto out;
	}
	{
		const char *ct[] = { "commit-tree", tree, NULL };
		size_t len = strlen(msg);

		/* (the message's NUL becomes its newline) */
		msg[len] = '\n';
		if (git_out(s, ct, msg, len + 1, &out, err) < 0)
			goto out;
	}
	if (out.len != 40 || !is_hex(out.data, 40)) {
		ah_fail(err, AH_EIO, "git commit-tree: not a commit id");
		goto out;
	}
	memcpy(commit, out.data, 41);
	if (write_ref(s, commit, err) < 0)
		goto out;
	if (dirs) {
		*dirs = d;
		d = NULL;
	}
	rc = 0;
out:
	free(msg);
	cJSON_Delete(d);
	buf_free(&out);
	return rc;
}

int
snap_take_full(struct snap *s, const struct snap_meta *in, char commit[41],
	       char tree[41], cJSON **dirs, struct ah_error *err)
{
	return take(s, in, commit, tree, dirs, err);
}

int
snap_take(struct snap *s, const struct snap_meta *in, char id[41],
	  struct ah_error *err)
{
	char tree[41];

	return take(s, in, id, tree, NULL, err);
}

/* --- list --------------------------------------------------------------- */

/* The records of refs[0..n) from one cat-file --batch, each given to fn
 * (which returns -1 to stop with an error). */
static int
each_record(struct snap *s, const struct ref *refs, size_t n,
	    int (*fn)(void *ctx, const struct ref *r, cJSON *meta),
	    void *ctx, struct ah_error *err)
{
	const char *args[] = { "cat-file", "--batch", NULL };
	struct buf in = BUF_INIT(0), out = BUF_INIT(0);
	size_t i, pos = 0;
	int rc = -1;

	for (i = 0; i < n; i++)
		if (buf_printf(&in, "%s\n", refs[i].hash) < 0) {
			ah_fail(err, AH_ENOMEM, "out of memory");
			goto out;
		}
	out.max = SNAP_MAX_OUT;
	if (n && run_git(s, args, in.data, in.len, &out, -1, 0, err) < 0)
		goto out;
	for (i = 0; i < n; i++) {
		char *hdr = out.data + pos, *nl, *body, *msg, save;
		unsigned long size;
		cJSON *meta;

		nl = pos < out.len ? memchr(hdr, '\n', out.len - pos) : NULL;
		if (!nl || sscanf(hdr, "%*40s commit %lu", &size) != 1 ||
		    (size_t)(nl + 1 - out.data) + size > out.len) {
			ah_fail(err, AH_EFORMAT, "snapshot %s is missing from "
				"the repository", refs[i].hash);
			goto out;
		}
		body = nl + 1;
		pos = (size_t)(body - out.data) + size + 1;
		save = body[size];
		body[size] = '\0';
		msg = strstr(body, "\n\n");
		meta = msg ? cJSON_Parse(msg + 2) : NULL;
		body[size] = save;
		if (!cJSON_IsObject(meta)) {
			cJSON_Delete(meta);
			continue;
		}
		if (fn(ctx, &refs[i], meta) < 0) {
			cJSON_Delete(meta);
			goto out;
		}
		cJSON_Delete(meta);
	}
	rc = 0;
out:
	buf_free(&in);
	buf_free(&out);
	return rc;
}

struct list_ctx {
	const char *session;
	struct buf *out;
	struct ah_error *err;
};

static int
list_one(void *vctx, const struct ref *r, cJSON *meta)
{
	static const char *const keep[] = { "session", "step", "calls",
					    "time", "files", "kind", "of",
					    "scan" };
	struct list_ctx *c = vctx;
	const cJSON *sess = cJSON_GetObjectItemCaseSensitive(meta, "session");
	cJSON *o;
	char id[SNAP_ID_LEN + 1], *line;
	size_t i;

	if (c->session && (!cJSON_IsString(sess) ||
			   strcmp(sess->valuestring, c->session)))
		return 0;
	memcpy(id, r->hash, SNAP_ID_LEN);
	id[SNAP_ID_LEN] = '\0';
	o = cJSON_CreateObject();
	if (!o || !cJSON_AddStringToObject(o, "id", id))
		goto oom;
	for (i = 0; i < sizeof keep / sizeof *keep; i++) {
		cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, keep[i]);

		if (v && !cJSON_AddItemToObject(o, keep[i],
						cJSON_Duplicate(v, 1)))
			goto oom;
	}
	line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	o = NULL;
	if (!line || buf_printf(c->out, "%s\n", line) < 0) {
		free(line);
		goto oom;
	}
	free(line);
	return 0;
oom:
	cJSON_Delete(o);
	return ah_fail(c->err, AH_ENOMEM, "out of memory");
}

int
snap_list(struct snap *s, const char *session, struct buf *out,
	  struct ah_error *err)
{
	struct list_ctx c = { session, out, err };
	struct ref *refs;
	size_t n;
	int rc;

	if (read_refs(s, &refs, &n, err) < 0)
		return -1;
	rc = each_record(s, refs, n, list_one, &c, err);
	free(refs);
	return rc;
}

/* --- diff --------------------------------------------------------------- */

int
snap_diff(struct snap *s, const char *id, const char *id2, int outfd,
	  struct ah_error *err)
{
	char a[41], b[41], tmpindex[PATH_MAX];
	int rc = -1, fd = -1, in = -1;
	char **e;

	if (snap_resolve(s, id, a, err) < 0 ||
	    (id2 && snap_resolve(s, id2, b, err) < 0))
		return -1;
	if (id2) {
		const char *args[] = { "diff", "--no-ext-diff", "--no-textconv",
				       "--no-color", "--no-renames", a, b, NULL };

		return run_git(s, args, NULL, 0, NULL, outfd, 0, err);
	}
	/* against the workspace: a copy of the index, brought up to date
	 * with it, so that new files show too and ours stays as it was */
	snprintf(tmpindex, sizeof tmpindex, "%s%s" SNAP_DIR "/index.diff",
		 *SD == '/' ? "" : s->work, *SD == '/' ? "" : "/", SD);
	unlinkat(s->dirfd, "index.diff", 0);
	fd = openat(s->dirfd, "index.diff", O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, 0600);
	in = openat(s->dirfd, "index", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ah_fail_errno(err, errno, "cannot create '" SNAP_DIR
			      "/index.diff'", SD);
		goto out;
	}
	if (in >= 0) {
		char chunk[65536];
		ssize_t got;

		while ((got = read(in, chunk, sizeof chunk)) > 0)
			if (write(fd, chunk, (size_t)got) != got) {
				ah_fail_errno(err, errno, "cannot copy the "
					      "index");
				goto out;
			}
	}
	/* the copy keeps the index's time: git takes an entry whose file
	 * changed in the second the index was written as possibly changed
	 * ("racily clean") by comparing with the index file's time, and a
	 * copy made a second later would have it trust the stat data and
	 * miss an edit of the same size made in that second */
	if (in >= 0) {
		struct stat st;
		struct timespec t[2];

		if (fstat(in, &st) < 0) {
			ah_fail_errno(err, errno, "cannot read the index");
			goto out;
		}
		t[0] = st.st_atim;
		t[1] = st.st_mtim;
		if (futimens(fd, t) < 0) {
			ah_fail_errno(err, errno, "cannot date the index "
				      "copy");
			goto out;
		}
	}
	close(fd);
	fd = -1;
	for (e = s->env; *e; e++)
		if (!strncmp(*e, "GIT_INDEX_FILE=", 15)) {
			char *nv;

			if (asprintf(&nv, "GIT_INDEX_FILE=%s", tmpindex) < 0) {
				ah_fail(err, AH_ENOMEM, "out of memory");
				goto out;
			}
			{
				char *old = *e;
				const char *add[8];
				const char *args[] = { "diff", "--cached",
						       "--no-ext-diff",
						       "--no-textconv",
						       "--no-color",
						       "--no-renames", a, NULL };
				struct buf o = BUF_INIT(0);

				add_args(s, add);
				*e = nv;
				rc = git_out(s, add, NULL, 0, &o, err);
				buf_free(&o);
				if (rc == 0)
					rc = run_git(s, args, NULL, 0, NULL,
						     outfd, 0, err);
				*e = old;
				free(nv);
			}
			break;
		}
out:
	if (fd >= 0)
		close(fd);
	if (in >= 0)
		close(in);
	unlinkat(s->dirfd, "index.diff", 0);
	return rc;
}

/* --- restore ------------------------------------------------------------ */

/* Opens the directory of rel's parent beneath the workspace, through no
 * symbolic link; *base is rel's last component.  mk: missing
 * directories are made. */
static int
open_parent(const char *rel, int mk, const char **base)
{
	char comp[NAME_MAX + 1];
	const char *p = rel, *slash;
	int dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), next;

	while (dfd >= 0 && (slash = strchr(p, '/'))) {
		size_t n = (size_t)(slash - p);

		if (n > NAME_MAX || !n || (n == 2 && !memcmp(p, "..", 2))) {
			close(dfd);
			errno = EINVAL;
			return -1;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		next = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			      O_CLOEXEC);
		if (next < 0 && errno == ENOENT && mk) {
			if (mkdirat(dfd, comp, 0777) < 0 && errno != EEXIST) {
				int e = errno;

				close(dfd);
				errno = e;
				return -1;
			}
			next = openat(dfd, comp, O_RDONLY | O_DIRECTORY |
				      O_NOFOLLOW | O_CLOEXEC);
		}
		close(dfd);
		dfd = next;
		p = slash + 1;
	}
	*base = p;
	return dfd;
}

/* Makes directory rel (and what leads to it), never through a link. */
static int
make_dir(const char *rel)
{
	const char *base;
	int dfd = open_parent(rel, 1, &base), rc;

	if (dfd < 0)
		return -1;
	rc = mkdirat(dfd, base, 0777);
	if (rc < 0 && errno == EEXIST)
		rc = 0;
	close(dfd);
	return rc;
}

/* Removes rel (AT_REMOVEDIR: a directory), never through a link. */
static int
remove_at(const char *rel, int flags)
{
	const char *base;
	int dfd = open_parent(rel, 0, &base), rc;

	if (dfd < 0)
		return errno == ENOENT ? 0 : -1;
	rc = unlinkat(dfd, base, flags);
	if (rc < 0 && errno == ENOENT)
		rc = 0;
	close(dfd);
	return rc;
}

static int
in_list(const cJSON *arr, const char *s)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, arr)
		if (cJSON_IsString(v) && !strcmp(v->valuestring, s))
			return 1;
	return 0;
}

/* rel is one of paths (or under one), or paths is empty. */
static int
under(const char *rel, char *const *paths, size_t npaths)
{
	size_t i, n;

	if (!npaths)
		return 1;
	for (i = 0; i < npaths; i++) {
		n = strlen(paths[i]);
		while (n > 1 && paths[i][n - 1] == '/')
			n--;
		if ((n == 1 && paths[i][0] == '.') ||
		    (!strncmp(rel, paths[i], n) && (!rel[n] || rel[n] == '/')))
			return 1;
	}
	return 0;
}

/* The empty directories: those made since (in now, not in want) are
 * removed when still empty, deepest first; want's are made. */
static int
restore_dirs(const cJSON *now, const cJSON *want, char *const *paths,
	     size_t npaths, struct ah_error *err)
{
	const cJSON *v;
	int i;

	for (i = cJSON_GetArraySize(now) - 1; i >= 0; i--) {
		char *dir, *slash;

		v = cJSON_GetArrayItem(now, i);
		if (!cJSON_IsString(v) || in_list(want, v->valuestring) ||
		    !under(v->valuestring, paths, npaths))
			continue;
		if (remove_at(v->valuestring, AT_REMOVEDIR) < 0) {
			if (errno != ENOTEMPTY && errno != EEXIST &&
			    errno != ENOTDIR)
				return ah_fail_errno(err, errno, "cannot remove "
						     "'%s'", v->valuestring);
			continue;
		}
		/* and the directories that held only it, as git does */
		if (!(dir = strdup(v->valuestring)))
			return ah_fail(err, AH_ENOMEM, "out of memory");
		while ((slash = strrchr(dir, '/'))) {
			*slash = '\0';
			if (in_list(want, dir) || !under(dir, paths, npaths) ||
			    remove_at(dir, AT_REMOVEDIR) < 0)
				break;
		}
		free(dir);
	}
	cJSON_ArrayForEach(v, want)
		if (cJSON_IsString(v) && under(v->valuestring, paths, npaths) &&
		    make_dir(v->valuestring) < 0)
			return ah_fail_errno(err, errno, "cannot create '%s'",
					     v->valuestring);
	return 0;
}

/* Restores only the paths: those in want's tree are checked out of it,
 * those only in now's removed. */
static int
restore_paths(struct snap *s, const char *now, const char *want,
	      char *const *paths, size_t npaths, struct ah_error *err)
{
	const char **args = calloc(npaths + 16, sizeof *args);
	struct buf out = BUF_INIT(0), list = BUF_INIT(0);
	size_t i, n = 0;
	int rc = -1;

	if (!args)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	args[n++] = "diff-tree";
	args[n++] = "-r";
	args[n++] = "-z";
	args[n++] = "--no-renames";
	args[n++] = "--name-status";
	args[n++] = now;
	args[n++] = want;
	args[n++] = "--";
	for (i = 0; i < npaths; i++)
		args[n++] = paths[i];
	args[n] = NULL;
	out.max = SNAP_MAX_OUT;
	if (run_git(s, args, NULL, 0, &out, -1, 1, err) < 0 ||
	    buf_putc(&out, '\0') < 0)
		goto out;
	for (i = 0; i + 1 < out.len;) {
		const char *st = out.data + i, *path;

		path = st + strlen(st) + 1;
		if (path >= out.data + out.len)
			break;
		i = (size_t)(path - out.data) + strlen(path) + 1;
		if (*st == 'D') {
			char *dir = strdup(path), *slash;

			if (!dir || remove_at(path, 0) < 0) {
				ah_fail_errno(err, dir ? errno : ENOMEM,
					      "cannot remove '%s'", path);
				free(dir);
				goto out;
			}
			/* and the directories it leaves empty, as git does */
			while ((slash = strrchr(dir, '/'))) {
				*slash = '\0';
				if (remove_at(dir, AT_REMOVEDIR) < 0)
					break;
			}
			free(dir);
		} else if (buf_append(&list, path, strlen(path) + 1) < 0) {
			ah_fail(err, AH_ENOMEM, "out of memory");
			goto out;
		}
	}
	if (list.len) {
		const char *co[] = { "checkout", "-q", want,
				     "--pathspec-from-file=-",
				     "--pathspec-file-nul", NULL };
		struct buf o = BUF_INIT(0);

		o.max = SNAP_MAX_OUT;
		rc = run_git(s, co, list.data, list.len, &o, -1, 1, err);
		buf_free(&o);
		if (rc < 0)
			goto out;
	}
	rc = 0;
out:
	free(args);
	buf_free(&out);
	buf_free(&list);
	return rc;
}

int
snap_restore(struct snap *s, const char *id, char *const *paths,
	     size_t npaths, char before[41], char after[41],
	     struct ah_error *err)
{
	struct snap_meta bm = { .kind = "before-restore", .step = -1 };
	char want[41], wtree[41], ntree[41], ptree[41];
	cJSON *wmeta = NULL, *ndirs = NULL, *pdirs = NULL;
	const cJSON *wdirs;
	int rc = -1;

	if (snap_resolve(s, id, want, err) < 0 ||
	    read_commit(s, want, wtree, &wmeta, err) < 0)
		goto out;
	bm.of = want;
	bm.session = getenv("AGENT_SESSION");
	/* what is there now, first: a restore can be undone too */
	if (take(s, &bm, before, ntree, &ndirs, err) < 0)
		goto out;
	wdirs = cJSON_GetObjectItemCaseSensitive(wmeta, "dirs");
	if (!npaths) {
		const char *rt[] = { "read-tree", "-m", "-u", ntree, wtree,
				     NULL };
		struct buf o = BUF_INIT(0);

		o.max = SNAP_MAX_OUT;
		rc = run_git(s, rt, NULL, 0, &o, -1, 0, err);
		buf_free(&o);
		if (rc < 0)
			goto out;
		rc = -1;
	} else if (restore_paths(s, ntree, wtree, paths, npaths, err) < 0)
		goto out;
	if (restore_dirs(ndirs, wdirs, paths, npaths, err) < 0)
		goto out;
	bm.kind = "restore";
	if (take(s, &bm, after, ptree, &pdirs, err) < 0)
		goto out;
	rc = 0;
out:
	cJSON_Delete(wmeta);
	cJSON_Delete(ndirs);
	cJSON_Delete(pdirs);
	return rc;
}

/* --- gc ----------------------------------------------------------------- */

/* Adds to keep (a string of "HASH12\n" lines) every checkpoint id the
 * transcript at path names. */
static int
scan_transcript(const char *path, struct buf *keep, struct ah_error *err)
{
	struct ah_error e2 = { 0 };
	int fd = agent_open(path, "the transcript ", O_RDONLY, 0, &e2);
	struct jsonl_reader r;
	int got, rc = 0;

	if (fd < 0)
		return 0; /* gone meanwhile, or not a file: nothing kept */
	jsonl_reader_init(&r, fd, path, 0);
	while ((got = jsonl_read_line(&r, &e2)) == 1) {
		const char *p = r.line.data;

		while ((p = strstr(p, "\"checkpoint\":\""))) {
			p += 14;
			if (is_hex(p, SNAP_ID_LEN) &&
			    (buf_append(keep, p, SNAP_ID_LEN) < 0 ||
			     buf_putc(keep, '\n') < 0)) {
				rc = ah_fail(err, AH_ENOMEM, "out of memory");
				break;
			}
		}
		if (rc)
			break;
	}
	jsonl_reader_free(&r);
	close(fd);
	return rc;
}

/* The checkpoints the transcripts of the state directory refer to. */
static int
referenced(struct buf *keep, struct ah_error *err)
{
	DIR *d;
	struct dirent *de;
	int fd, rc = 0;

	char path0[PATH_MAX];

	if (state_path(path0, sizeof path0, "transcript.jsonl", err) < 0 ||
	    scan_transcript(path0, keep, err) < 0 ||
	    state_path(path0, sizeof path0, "sessions", err) < 0)
		return -1;
	fd = agent_open_dir(path0, 0, NULL);
	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while (!rc && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char *path;

		if (n < 7 || strcmp(de->d_name + n - 6, ".jsonl"))
			continue;
		if (asprintf(&path, "%s/%s", path0, de->d_name) < 0) {
			rc = ah_fail(err, AH_ENOMEM, "out of memory");
			break;
		}
		rc = scan_transcript(path, keep, err);
		free(path);
	}
	closedir(d);
	return rc;
}

/* The bytes the objects take on disk. */
static long long
dir_bytes(int dfd, int depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	struct stat st;
	long long sum = 0;

	if (!d) {
		close(dfd);
		return 0;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		sum += (long long)st.st_blocks * 512;
		if (S_ISDIR(st.st_mode) && depth < 8) {
			int fd = openat(dirfd(d), de->d_name, O_RDONLY |
					O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd >= 0)
				sum += dir_bytes(fd, depth + 1);
		}
	}
	closedir(d);
	return sum;
}

static long long
objects_bytes(struct snap *s)
{
	int fd = openat(s->dirfd, "git/objects", O_RDONLY | O_DIRECTORY |
			O_NOFOLLOW | O_CLOEXEC);

	return fd < 0 ? 0 : dir_bytes(fd, 0);
}

struct gc_item {
	struct ref ref;
	time_t time;
	int kept;    /* a transcript refers to it */
	int dropped;
};

struct gc_ctx {
	struct gc_item *items;
	size_t n;
	const struct buf *keep;
};

static int
gc_one(void *vctx, const struct ref *r, cJSON *meta)
{
	struct gc_ctx *c = vctx;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(meta, "time");
	struct gc_item *it = &c->items[c->n++];
	struct tm tm = { 0 };
	char id[SNAP_ID_LEN + 2];

	it->ref = *r;
	it->time = 0;
	if (cJSON_IsString(t) && strptime(t->valuestring, "%Y-%m-%dT%H:%M:%S",
					  &tm))
		it->time = timegm(&tm);
	memcpy(id, r->hash, SNAP_ID_LEN);
	id[SNAP_ID_LEN] = '\n';
	id[SNAP_ID_LEN + 1] = '\0';
	it->kept = c->keep->data && (!strncmp(c->keep->data, id,
					       SNAP_ID_LEN + 1) ||
				     memmem(c->keep->data, c->keep->len, id,
					    SNAP_ID_LEN + 1));
	return 0;
}

static int
drop(struct snap *s, struct gc_item *it, struct ah_error *err)
{
	struct ref *refs;
	size_t n, i;
	char name[32];

	/* the file whose content is this hash and whose number is seq */
	if (read_refs(s, &refs, &n, err) < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (refs[i].seq == it->ref.seq) {
			snprintf(name, sizeof name, "git/refs/snap/%010lu",
				 refs[i].seq);
			if (unlinkat(s->dirfd, name, 0) < 0 && errno != ENOENT) {
				free(refs);
				return ah_fail_errno(err, errno, "cannot remove "
						     "'" SNAP_DIR "/%s'", SD,
						     name);
			}
		}
	free(refs);
	it->dropped = 1;
	return 0;
}

static int
git_gc(struct snap *s, struct ah_error *err)
{
	const char *args[] = { "gc", "-q", "--prune=now", NULL };
	struct buf o = BUF_INIT(0);
	int rc;

	o.max = SNAP_MAX_OUT;
	rc = run_git(s, args, NULL, 0, &o, -1, 0, err);
	buf_free(&o);
	return rc;
}

int
snap_gc(struct snap *s, const struct snap_budget *b, struct snap_gc_result *res,
	struct ah_error *err)
{
	struct buf keep = BUF_INIT(0);
	struct gc_ctx c = { 0 };
	struct ref *refs = NULL;
	size_t n, i;
	time_t now = time(NULL);
	int rc = -1, round;

	memset(res, 0, sizeof *res);
	if (referenced(&keep, err) < 0 || read_refs(s, &refs, &n, err) < 0)
		goto out;
	c.items = calloc(n ? n : 1, sizeof *c.items);
	c.keep = &keep;
	if (!c.items) {
		ah_fail(err, AH_ENOMEM, "out of memory");
		goto out;
	}
	if (each_record(s, refs, n, gc_one, &c, err) < 0)
		goto out;
	/* by age: older than the budget, and no transcript refers to it */
	for (i = 0; i < c.n; i++)
		if (!c.items[i].kept && b->max_age >= 0 &&
		    now - c.items[i].time >= b->max_age &&
		    drop(s, &c.items[i], err) < 0)
			goto out;
	if (git_gc(s, err) < 0)
		goto out;
	/* by size: the oldest first (items are newest first), a quarter
	 * of what is left each round */
	for (round = 0; round < 16; round++) {
		size_t left = 0, cut;

		res->bytes = objects_bytes(s);
		if (b->max_bytes < 0 || res->bytes <= b->max_bytes)
			break;
		for (i = 0; i < c.n; i++)
			left += !c.items[i].kept && !c.items[i].dropped;
		if (!left)
			break;
		cut = left / 4 ? left / 4 : 1;
		for (i = c.n; i-- > 0 && cut;)
			if (!c.items[i].kept && !c.items[i].dropped) {
				if (drop(s, &c.items[i], err) < 0)
					goto out;
				cut--;
			}
		if (git_gc(s, err) < 0)
			goto out;
	}
	res->bytes = objects_bytes(s);
	for (i = 0; i < c.n; i++) {
		res->dropped += c.items[i].dropped;
		res->kept += !c.items[i].dropped;
		res->referenced += c.items[i].kept;
	}
	rc = 0;
out:
	free(c.items);
	free(refs);
	buf_free(&keep);
	return rc;
}
