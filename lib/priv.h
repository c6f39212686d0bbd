/*
 * priv.h: the plumbing between the files of lib/, which cmd/ and the unit
 * tests do not use (harness.h is their header): as mblaze keeps
 * blaze822_priv.h and jq jv_private.h.  The fuzz targets reach it too.
 * The same rules as harness.h: nothing prints or exits, errors go to a
 * struct ah_error, and what is returned as char * or cJSON * is the
 * caller's.
 */
#ifndef PRIV_H
#define PRIV_H

#include "harness.h"
#include <stdint.h>

/* --- the data of share/, compiled in (see the Makefile) ---------------- */

extern const char data_policy[]; /* share/policy.json */
extern const char data_tools[];  /* share/tools.json */
extern const char data_task[];   /* share/task.json: the task tool */
extern const char data_moretools[]; /* share/moretools.json: tools offered
				       by choice (apply_patch) or when
				       there is something (skill) */
extern const char data_prelude[]; /* share/prelude.jq: the rules' helpers */
extern const char data_prices[]; /* share/prices.json: the price table */
extern const char data_modes[];  /* share/modes.json: agent-run's modes */

/* --- text.c: bounded text for the model --------------------------------- */

/* Keeps the first and the last max/2 bytes of a stream of any length. */
struct capture {
	char *head, *tail;
	size_t hcap, hlen;
	size_t tcap, tlen, tpos; /* tail is a ring; tpos: next write */
	size_t total;            /* bytes seen */
};

int capture_init(struct capture *c, size_t max);
void capture_add(struct capture *c, const char *p, size_t n);
/* The text kept, as valid UTF-8 without NUL bytes: all of it when it fit,
 * else head, a line "[... N bytes cut ...]", and tail, cut on character
 * boundaries.  NULL when out of memory. */
char *capture_text(const struct capture *c, size_t *outlen);
void capture_free(struct capture *c);

/* capture_text of the string s[0..n), bounded to max bytes. */
char *text_bound(const char *s, size_t n, size_t max, size_t *outlen);

/* --- jsonl.c ------------------------------------------------------------ */

/* A file of lines whose last line was torn (a crash in the middle of a
 * write: no newline at the end) is cut back to its last complete line.
 * *cut receives the bytes removed (0 when the file was whole).  fd must
 * be open for reading and writing. */
int jsonl_repair_tail(int fd, size_t *cut, struct ah_error *err);

/* The numbers in sub, a part of root (parsed from text[0..n) by
 * json_parse), made raw items of their text as it came: printed again,
 * an integer past 2^53 is its digits, not a rounded double.  -1 when
 * out of memory. */
int json_exact_numbers(cJSON *root, const cJSON *sub, const char *text,
		       size_t n);

/* --- sse.c: server-sent events ----------------------------------------- */

/* max bounds a line and an event. */
void sse_init(struct sse *s, size_t max);
void sse_free(struct sse *s);
/* Reads p[0..n) up to the end of the next event: *used is the bytes
 * taken; 1 when s->data (and s->event) hold a whole event, to be taken
 * before the next call; 0 when all was taken and no event ended; -1 when
 * a line or an event is too large (err). */
int sse_feed(struct sse *s, const char *p, size_t n, size_t *used,
	     struct ah_error *err);
/* The end of the stream: 1 when a last event, not ended by a blank
 * line, is whole; 0 when none is left; -1 (err). */
int sse_end(struct sse *s, struct ah_error *err);

/* --- reply.c: the reply builder, for the files of the APIs ------------- */

/* A new call (NULL and err set when there are too many, or no memory);
 * the text of v appended to b (nothing when v is not a string); text of
 * the answer appended (and shown, when r->on_text is set); arguments
 * appended, text or an object as its JSON text; the usage object, a
 * copy of u when it is one. */
struct reply_call *reply_new_call(struct reply *r, int index, const char *id,
				  struct ah_error *err);
int reply_append(struct buf *b, const cJSON *v, struct ah_error *err);
int reply_text(struct reply *r, const cJSON *v, struct ah_error *err);
int reply_append_args(struct buf *b, const cJSON *v, struct ah_error *err);
void reply_set_usage(struct reply *r, const cJSON *u);
/* A line of an API's table of stop reasons. */
struct reply_stop {
	const char *word;     /* the reason, as the API spells it */
	enum reply_end end;
	const char *why;      /* END_FAILED: what it means, for a message */
};
/* The reason word (a string, else nothing is done) into r->finish, and
 * its meaning from the table into r->end: END_UNKNOWN when the table
 * does not have it. */
void reply_set_stop(struct reply *r, const cJSON *word,
		    const struct reply_stop *table, size_t n);

/* --- the files of the APIs: each turns the transcript into its request,
 * and its events and whole answers into the reply.  v, a whole answer,
 * is a JSON object without "error", parsed from text[0..n). */

/* completions.c: Chat Completions.  event is the SSE event: field. */
int completions_event(struct reply *r, const char *event, const char *data,
		      size_t n, struct ah_error *err);
int completions_parse(struct reply *r, const cJSON *v, struct ah_error *err);

/* anthropic.c: the Messages API.  Text, tool calls, thinking blocks,
 * the stop reason and usage (prompt_tokens counts cached input too). */
int anthropic_event(struct reply *r, const char *data, size_t n,
		    struct ah_error *err);
int anthropic_parse(struct reply *r, cJSON *v, const char *text, size_t n,
		    struct ah_error *err);

/* responses.c: the Responses API.  Text, function calls, reasoning
 * items (kept, to be sent back) and their summaries, refusals, the
 * status (incomplete_details.reason for an incomplete one) and usage. */
int responses_event(struct reply *r, const char *data, size_t n,
		    struct ah_error *err);
int responses_parse(struct reply *r, const cJSON *v, struct ah_error *err);

/* --- answer.c: the answer of the API of the reply ---------------------- */

/* A whole answer's body. */
int answer_parse(struct reply *r, const char *body, size_t n,
		 struct ah_error *err);
/* Bytes of a text/event-stream answer, as they come. */
int answer_feed(struct reply *r, const char *p, size_t n, struct ah_error *err);
/* The end of a stream. */
int answer_end(struct reply *r, struct ah_error *err);
/* The path of the API's endpoint below the base URL. */
const char *answer_path(enum model_api api);

/* --- http.c: HTTP/1.1 for a plain http:// URL ---------------------------- */

enum { HTTP_FAILED = -1, HTTP_STOPPED = -2 };

struct http;

/* What the caller does with the answer as it comes, and gives of the
 * request. */
struct http_io {
	/* the status line and each header line, without CR LF */
	void (*header)(void *ctx, const char *line, size_t len);
	/* bytes of the body (unchunked): nonzero stops the answer */
	int (*body)(void *ctx, const char *p, size_t len);
	/* the request's body read out into dst: bytes, 0 at its end, -1
	 * stops; unused when the body is given whole */
	ssize_t (*read)(void *ctx, char *dst, size_t max);
	/* back to the body's start, for a new connection: nonzero cannot */
	int (*rewind)(void *ctx);
	/* at least once a second, and as data comes: how many bytes of the
	 * request went out; nonzero stops */
	int (*tick)(void *ctx, long long sent);
	void *ctx;
	/* redacted from the server's bytes a message shows */
	const char *const *secrets;
};

/* Is url one for http_new: http://, no user name or password? */
int http_url_plain(const char *url);
/* A client for url (http_url_plain), connecting within connect_timeout
 * seconds; NULL (err) when the host or port cannot be read. */
struct http *http_new(const char *url, double connect_timeout,
		      struct ah_error *err);
/* A client for url, any http:// or https:// one: over http_new's when
 * it can (http_needs_curl says not), else over libcurl, loaded then, which
 * reads the proxy variables and checks the server's certificate against
 * cafile (NULL: libcurl's own CA bundle).  NULL (err) when it cannot. */
struct http *http_open(const char *url, double connect_timeout,
		       const char *cafile, struct ah_error *err);
/* Closes the connection kept, frees h. */
void http_free(struct http *h);
/* POSTs the body (flat, else read out by io->read; len bytes either way)
 * with headers ("Name: value", NULL-ended) to h's URL; the answer goes to
 * io, its status to *status.  0 when the answer came whole (whatever its
 * status); HTTP_FAILED (errbuf says why) or HTTP_STOPPED (a callback
 * stopped it). */
int http_post(struct http *h, const char *const *headers, const char *flat,
	      size_t len, const struct http_io *io, long *status,
	      char *errbuf, size_t errsize);
/* Reads one answer from fd (a connected stream socket) as http_post reads
 * it: the same returns; *keep, whether the connection could serve the
 * next request.  For the fuzz target. */
int http_read(int fd, const struct http_io *io, long *status, int *keep,
	      char *errbuf, size_t errsize);

/* --- curl.c: libcurl, for what http.c does not speak -------------------- */

/* Does url need libcurl: not plain http://, or a proxy set for it
 * (libcurl's variables for http://: http_proxy, lowercase only, and
 * all_proxy in either case), or AGENT_HTTP=curl (the tests run every
 * request through both clients)? */
int http_needs_curl(const char *url);
struct hcurl;
/* http_new, http_post and http_free over libcurl (see http_open). */
struct hcurl *hcurl_new(const char *url, double connect_timeout,
			const char *cafile, struct ah_error *err);
int hcurl_post(struct hcurl *c, const char *const *headers, const char *flat,
	       size_t len, const struct http_io *io, long *status,
	       char *errbuf, size_t errsize);
void hcurl_free(struct hcurl *c);

/* --- model.c ------------------------------------------------------------ */

/* Whether an API error (status, error.code or .type, message) says the
 * request is longer than the model's context: the words of OpenAI,
 * Azure, Anthropic, vLLM, llama.cpp, Ollama, Mistral, DeepSeek, Groq,
 * Gemini and others. */
int model_too_long(long status, const char *code, const char *msg);

/* --- policy.c: the worker that evaluates -------------------------------- */

/* The jq program of all rules, into p->prog.  -1: out of memory. */
int policy_program(struct policy *p);
/* Evaluates input lines from in, writing results to out, until in ends;
 * an evaluation longer than limit seconds (0: no limit) kills it.  For
 * forked children only: it never returns. */
void policy_worker(struct policy *p, int in, int out, double limit)
	__attribute__((noreturn));
/* From now on p is evaluated by the server's worker at the other end of
 * the socket fd, which p owns. */
void policy_attach(struct policy *p, int fd);
/* The store's path; -1 when there is no absolute one. */
int policy_trust_store(char *path, size_t size);

/* --- redact.c ----------------------------------------------------------- */


/* --- patch.c: the patch format of apply_patch ---------------------------- */

enum { PATCH_ADD, PATCH_DELETE, PATCH_UPDATE };

/* One hunk of an Update File: the lines of the @@ anchors, the lines it
 * expects (context and removed) and those it puts in their place
 * (context and added), and of what kind each line was, in order; eof:
 * *** End of File (it ends the file). */
struct patch_hunk {
	const char **anchors, **old, **new;
	size_t nanchors, nold, nnew;
	struct buf kinds;         /* ' ', '-', '+': the order of the lines */
	int eof;
};

/* One file operation; its strings point into the patch's text. */
struct patch_file {
	int kind;
	const char *path, *move;  /* move: *** Move to, or NULL */
	struct patch_hunk *hunks; /* PATCH_UPDATE */
	size_t nhunks;
	const char **new;         /* PATCH_ADD: the lines of the file */
	size_t nnew;
};

struct patch {
	char *text;               /* a copy of the patch, cut into lines */
	struct patch_file *files;
	size_t n;
};

/* Parses a patch ("*** Begin Patch" ... "*** End Patch"): 0, 1 with the
 * reason in msg (p is empty), -1 out of memory.  patch_free frees it. */
int patch_parse(const char *text, struct patch *p, char *msg, size_t size);
void patch_free(struct patch *p);

/* The new text of the file of an Add or Update File, its text now
 * data[0..len) (none for an Add), appended to out: 0, 1 with the reason
 * in msg (a hunk does not match), -1 out of memory. */
int patch_apply(const struct patch_file *f, const char *data, size_t len,
		struct buf *out, char *msg, size_t size);

/* --- skills.c ----------------------------------------------------------- */

/* Reads the front matter of a SKILL.md, text[0..len): its name: and
 * description: (the caller frees them) and where the instructions start
 * (*body).  0; 1 with the reason in msg (what this strict reader does not
 * take: see agent-run(1), Skills); -1 out of memory. */
int skill_front_matter(const char *text, size_t len, char **name,
		       char **desc, size_t *body, char *msg, size_t size);

/* --- file.c ------------------------------------------------------------- */


/* The same for the entry name in the open directory dfd (not closed);
 * shown is the path to use in messages. */
int file_replace_at(int dfd, const char *name, const char *shown,
		    const void *data, size_t len, struct ah_error *err);

/* The first half of file_replace_at: data written and synced in a new
 * temporary file beside name (its name, at most NAME_MAX bytes, into
 * tmp[size]), which the caller renames into place or unlinks.  0, or -1
 * with err set (no temporary file left). */
int file_stage_at(int dfd, const char *name, const char *shown,
		  const void *data, size_t len, char *tmp, size_t size,
		  struct ah_error *err);

/* --- agentdir.c --------------------------------------------------------- */

/* Nonzero when a component of path is named ".agent". */
int agent_path_inside(const char *path);

/* --- path.c: beneath the root ------------------------------------------- */

/* Is path the directory dir, or beneath it, by their components (both
 * spelled alike, resolved: /w/p does not hold /w/project)?  / holds
 * everything. */
int path_within(const char *path, const char *dir);

/* Turns a path the model gave into one relative to the root, without "."
 * or empty components ("." for the root itself).  An absolute path is
 * accepted only when the root's components are its first ones.  Returns 0
 * and sets *rel; 1 with an "Error: ..." text in msg; -1 out of memory. */
int root_relative(const struct root *rt, const char *path, char **rel,
		  char *msg, size_t size);

/* openat(2) of rel beneath the root: ".." and symbolic links (of the file
 * or of a directory on the way) that lead outside fail with EXDEV.  Uses
 * openat2 RESOLVE_BENEATH where the kernel has it. */
int root_openat(const struct root *rt, const char *rel, int flags,
		mode_t mode);

/* The path of an open descriptor, relative to the root (EXDEV when it is
 * not inside).  -1 with errno set on failure. */
int root_realpath(const struct root *rt, int fd, char **rel);

/* The path the kernel gives the open descriptor fd (its /proc/self/fd
 * link), into real[size]: 1 when it is the directory dir or beneath it,
 * *rest then pointing past dir in real ("" or "/..."), 0 when it is
 * not, -1 with errno set when it cannot be read.  root_realpath and the
 * sandbox's .git check share it. */
int fd_path_beneath(int fd, const char *dir, char *real, size_t size,
		    const char **rest);

/* mkdir -p of rel beneath the root.  -1 with errno set on failure. */
int root_mkdirs(const struct root *rt, const char *rel);

/* --- sandbox.c and its files: the internals ----------------------------- */

/* A .git found in the workspace, or a git directory one points to. */
struct sandbox_git {
	char *path;       /* absolute */
	dev_t dev;
	ino_t ino;
	int kind;         /* GIT_ENTRY, GIT_LINK (a .git that is a symbolic
			     link: not bound, its target is), GIT_TARGET */
};

enum { GIT_ENTRY = 1, GIT_LINK, GIT_TARGET };

/* A directory watched since a walk read it (see sandbox_scan). */
struct sandbox_watch {
	int wd;           /* its inotify watch */
	int git;          /* a git directory (only its commondir matters) */
	char *path;       /* absolute, when it was read */
};

/* Creates the private temporary directory if it is not there yet, and
 * looks for the .git entries of the workspace again (sandbox_scan).
 * Called before each command, in the parent. */
int sandbox_prepare(struct sandbox *sb, struct ah_error *err);

/* Finds every entry named .git (in any case) in the workspace, not
 * following symbolic links, and the git directories that a .git file
 * ("gitdir: PATH"), a .git symlink or a commondir file points to inside
 * the workspace: sb->git, kept read-only from then on.  A no-op but in
 * workspace-write mode.  The first is a whole walk; after it, where the
 * directories can be watched (inotify), only what changed since is
 * looked at, and anything unclear is a whole walk again. */
int sandbox_scan(struct sandbox *sb, struct ah_error *err);

/* After a command: removes every .git entry that the last sandbox_scan
 * did not see (created, or replaced, by the command), and says so in
 * report, one line each.  -1 only when memory ran out. */
int sandbox_check_git(struct sandbox *sb, struct buf *report);

/* Is one of the components of the relative path rel named .git (in any
 * case)? */
int sandbox_git_path(const char *rel);

/* In the helper that forks the commands (proc.c), once: a mount
 * namespace in which all is read-only but the write roots (nosuid), and
 * the protected paths in them are read-only too (a user namespace first,
 * without privilege: *userns set); checked against the snapshot snap
 * unless NULL (taken by the caller before the helper started: 1 when
 * what it describes changed meanwhile); then the commands' view built from it
 * and made the root (see sandbox.c); the bounding set emptied,
 * no_new_privs, and a seccomp filter (no inet sockets unless
 * sb->network, no io_uring, no ioctl TIOCSTI or TIOCLINUX); the Landlock
 * ruleset of the write roots is built, its fd in *ruleset.  On failure
 * the process is in an unknown state and must not run a command. */
int sandbox_setup(const struct sandbox *sb, const struct buf *snap,
		  int *ruleset, int *userns, struct ah_error *err);

/* In the helper, once its mounts are made: 0 if it protects what the
 * snapshot snap describes, 1 if that changed meanwhile, -1 if a
 * protected path is not read-only. */
int sandbox_verify(const struct sandbox *sb, const struct buf *snap,
		   struct ah_error *err);

/* What the sandbox protects, as it is now on disk (each path, whether it
 * is there, its device and inode), into out: a helper set up for one
 * snapshot must not serve another. */
int sandbox_snapshot(const struct sandbox *sb, struct buf *out);

/* Per command, in the pid 1 of its PID namespace, in a mount namespace
 * of its own: mounts the namespace's /proc; on failure the command must
 * not run. */
int sandbox_fresh_proc(struct ah_error *err);

/* Per command, between fork and exec: every capability dropped, the
 * Landlock ruleset enforced (and closed).  On failure the command must
 * not run. */
int sandbox_restrict(const struct sandbox *sb, int ruleset,
		     struct ah_error *err);

/* May the file tools write the entry name of the open directory dirfd?
 * Returns 0 if so, 1 with the reason in msg if the sandbox forbids it
 * (read-only mode, a protected path or one beneath it, a .git or a path
 * through one), -1 with errno set if a check failed. */
int sandbox_may_write(const struct sandbox *sb, int dirfd, const char *name,
		      char *msg, size_t size);

/* --- between the sandbox's files: sandbox.c (the sandbox, what the helper
 * protects, the file tools), gitwalk.c (the .git walk and its watches),
 * mountview.c (the mount namespace, the view), landlock.c, seccomp.c
 * (the filter, the capabilities) */

/* gitwalk.c: is name ".git", in any case? */
int sb_is_git_name(const char *name);
/* gitwalk.c: stops watching the directories walked. */
void sb_unwatch_all(struct sandbox *sb);
/* sandbox.c: frees n .git entries and g. */
void sb_free_git(struct sandbox_git *g, size_t n);
/* mountview.c: is p strictly beneath the directory dir? */
int sb_beneath(const char *dir, const char *p);
/* mountview.c: the mount namespace and the view (see sandbox_setup). */
int sb_confine_mounts(const struct sandbox *sb, const struct buf *snap,
		      int *userns, struct ah_error *err);
/* landlock.c: the kernel's Landlock ABI, 0 without it. */
int sb_landlock_abi(void);
/* landlock.c: the ruleset of the write roots, its fd; -1 on failure. */
int sb_landlock_ruleset(const struct sandbox *sb, struct ah_error *err);
/* landlock.c: the ruleset enforced on the process, and closed. */
int sb_landlock_enforce(int ruleset, struct ah_error *err);
/* seccomp.c: nonzero when the filter knows this architecture. */
int sb_seccomp_arch(void);
/* seccomp.c: the bounding set emptied (the helper keeps its own). */
void sb_drop_bounding(void);
/* seccomp.c: every capability dropped, the ambient set cleared. */
int sb_drop_capabilities(struct ah_error *err);
/* seccomp.c: the filter loaded (see sandbox_setup). */
int sb_seccomp(const struct sandbox *sb, struct ah_error *err);

/* --- proc.c: running a command ------------------------------------------ */

struct proc_opts {
	const char *shell;    /* run as: shell -c command */
	const char *command;
	const char *dir;      /* working directory, NULL for the current */
	double timeout;       /* seconds before TERM */
	double term_grace;    /* seconds from TERM to KILL */
	double grace;         /* seconds to wait for output after the shell
				 exits (background children) */
	size_t max_output;    /* bytes kept, head and tail */
	volatile sig_atomic_t *interrupted; /* nonzero: stop (a signal) */
	const struct sandbox *sandbox; /* entered by the child, or NULL */
	char *const *env;     /* the command's whole environment, "NAME=value"
				 strings, NULL-terminated; NULL: none */
	const struct proc_limits *limits; /* NULL: none */
	struct proc_helper *helper; /* forks the command; needed when
				       sandbox is set */
};


struct proc_result {
	int status;         /* wait status of the shell */
	int timed_out;
	int interrupted;    /* the signal that stopped it, or 0 */
	int left_running;   /* background processes held the output open */
	int limit;          /* the PROC_LIMIT_* the call went over (killed),
			       or 0 */
	char *output;       /* bounded, valid UTF-8; the caller frees */
	size_t len;
};

/* Seconds on the monotonic clock, for deadlines. */
double mono_now(void);

/* Finds how the limits can be enforced here (a cgroup v2 or v1 of our
 * own beneath this process's, else rlimits and a count of the call's
 * processes) and creates the cgroup.  Idempotent.  Fails only when
 * memory runs out; a weaker enforcement is said in l->warning. */
int proc_limits_prepare(struct proc_limits *l, struct ah_error *err);
/* Sets l's rlimits on this process, for what it starts: the file size,
 * the memory (RLIMIT_DATA) where no cgroup bounds it, the processes
 * (RLIMIT_NPROC) when nproc, the processes outside the limit that the
 * user namespace counts too, is not 0. */
void proc_limits_set(const struct proc_limits *l, int nproc);

/* Does NAME look like it holds a secret (a key, token, password, cloud or
 * forge credential, an agent socket)?  Such a variable never reaches a
 * command. */
int proc_env_secret(const char *name);

/* Starts the helper for the commands of o (its shell, env, sandbox and
 * limits; limits prepared and the sandbox's temporary directory made),
 * and returns without waiting for it to be ready: it sets itself up while
 * the caller goes on.  proc_run starts it again when what the sandbox
 * protects changed (a new .git, a protected path created or replaced), or
 * when it died. */
int proc_helper_start(struct proc_helper *h, const struct proc_opts *o,
		      struct ah_error *err);


/* Starts the next call's supervisor and shell now, while nothing waits
 * for them, so that the call does not wait for bash to start: the shell,
 * set up like a call's (sandbox, limits, environment, session), waits
 * for its command, which proc_run gives it.  Only with o->helper, a
 * shell named bash (it runs the command with eval: see tool-exec(1)) and
 * an environment without SHELLOPTS, BASHOPTS or BASH_ENV; else, or when
 * one waits already, it does nothing.  The shell dies with
 * the helper, and so with the caller.  -1 (err set) when it could not be
 * started: proc_run then starts the call's shell itself. */
int proc_prestart(const struct proc_opts *o, struct ah_error *err);

/* Runs the command in a new session with no controlling terminal, under a
 * supervisor that is the init of a new PID namespace (where the kernel
 * allows one; see tool-exec(1)) and dies with the caller, stdin from
 * /dev/null, stdout and stderr together, no other file descriptor.
 * Returns when the shell has exited (plus the grace), on timeout, when a
 * limit is reached, or when *interrupted is set; in every case every
 * process it started is killed and reaped before it returns. */
int proc_run(const struct proc_opts *o, struct proc_result *r,
	     struct ah_error *err);

/* --- between proc.c's files: proc.c (running a call), environ.c (the
 * environment), cgroup.c (limits, cgroups), supervisor.c (the supervisor
 * and the command), helper.c (the helper and its protocol) */

/* proc.c: the children of process pid (0: this process, which as a
 * subreaper has every orphan its commands left), as /proc lists them:
 * their number, at most max; 0 when the list cannot be read. */
int pr_children(pid_t pid, pid_t *pids, int max);
/* proc.c: kills what is left of a command: its process group, then
 * every orphan reparented to us, but spare (the helper). */
void pr_kill_all(pid_t pgid, pid_t spare);
/* proc.c: kills every child of this process but spare (0: none), over
 * and over until none is left: as a subreaper, the orphans of what it
 * started (mcp.c's keeper too). */
void pr_kill_children(pid_t spare);
/* cgroup.c: how many processes descend from pid, up to about max. */
long cg_count_tree(pid_t pid, long max);
/* cgroup.c: moves pid (what: the command, or the helper) into the
 * limits' cgroups. */
int cg_join(const struct proc_limits *l, pid_t pid, const char *what,
	    struct ah_error *err);
/* cgroup.c: the memory cgroup's OOM kills, the pids cgroup's refusals so
 * far, or -1. */
long long cg_oom_kills(const struct proc_limits *l);
long long cg_pids_hits(const struct proc_limits *l);
/* cgroup.c: the limit of the cgroup counting processes (extra: one for
 * a shell started ahead). */
int cg_pids_max(const struct proc_limits *l, int extra);
/* supervisor.c: closes every descriptor above 2 but the n in keep. */
void sv_close_except(int *keep, int n);
/* supervisor.c: closes both ends of a pipe that are open. */
void sv_close_pair(int p[2]);
/* supervisor.c: starts the supervisor of an unconfined call. */
pid_t sv_start(int *pidns, struct ah_error *err);
/* supervisor.c: the supervisor's life; never returns. */
void sv_supervisor(const struct proc_opts *o, int pidns, int nproc, int out,
		   int errfd, int statfd, int go, int ruleset, int warm);
/* helper.c: the helper that serves what the sandbox protects now. */
int hp_current(struct proc_helper *h, const struct proc_opts *o,
	       struct ah_error *err);
/* helper.c: has the helper start a call's supervisor with these pipe
 * ends (kind 'w': the shell ahead). */
pid_t hp_spawn(struct proc_helper *h, const char *kind, const int fds[4],
	       struct ah_error *err);
/* helper.c: kills what is left of a call. */
void hp_end_call(const struct proc_opts *o, pid_t pid);

/* --- todo.c ------------------------------------------------------------- */

/* Validates TodoWrite arguments ({"todos": [...]}) by the seed's rules.
 * text[0..len) is the JSON args was parsed from, or NULL: with it, a
 * number becomes the text Python's str() gives ("1.0", "0.1", all the
 * digits of a large integer), and a string holding U+0000 is refused;
 * without it, an integral number reads as an integer.
 * Returns 0 and sets *out to the normalised {"todos": [...]} to store;
 * 1 when a rule is broken, with the seed's "Error: ..." answer in msg;
 * -1 when memory runs out (msg says so). */
int todo_validate(const cJSON *args, const char *text, size_t len,
		  cJSON **out, char *msg, size_t msgsize);

/* Stores a normalised list at path (file_replace). */
int todo_store(const char *path, const cJSON *list, struct ah_error *err);

/* --- snap.c, for snapfast.c ------------------------------------------ */

/* The whole walk: snap_take, and the tree and empty directories (dirs,
 * the caller's) of the snapshot. */
int snap_take_full(struct snap *s, const struct snap_meta *in, char commit[41],
		   char tree[41], cJSON **dirs, struct ah_error *err);
/* A snapshot's message: one line of JSON, malloc'd (NULL: no memory). */
char *snap_message(const struct snap_meta *in, long files, const char *scan,
		   const cJSON *dirs);
/* Names commit as the newest snapshot, at number hint if that is free
 * (s->seq receives the number). */
int snap_write_ref(struct snap *s, const char *commit, unsigned long hint,
		   unsigned long *seq, struct ah_error *err);
/* Does snapshot number seq name commit? */
int snap_ref_is(struct snap *s, unsigned long seq, const char *commit);
/* git with args, its output into out (trailing newlines cut). */
int snap_git_out(struct snap *s, const char *const *args, struct buf *out,
		 struct ah_error *err);
/* What git ignores, untracked (ls-files -o -i --directory -z): each path
 * followed by a NUL, a directory's with a '/' before it. */
int snap_ignored(struct snap *s, struct buf *out, struct ah_error *err);
/* The message fmt into msg (size bytes, cut to fit); returns rc: the
 * reporting of the parsers that answer in a caller's buffer. */
int say_into(char *msg, size_t size, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The start of the file at path (a /proc or cgroup file), one read of
 * at most size - 1 bytes, into buf with a NUL after: its length, or -1
 * when it cannot be opened or read or is empty. */
ssize_t read_text(const char *path, char *buf, size_t size);
/* SHA-256 a piece at a time (policy.c): init, update as the data comes,
 * then sha256_hex for the digest of what came so far (c goes on). */
struct sha256 {
	uint32_t h[8];
	unsigned char buf[64];
	size_t n;
	uint64_t len;
};
void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t len);
void sha256_hex(const struct sha256 *c, char hex[65]);
/* The user's secret key (64 hex digits), made once, for marks that only
 * the harness can make for this user (snap.c). */
int user_key(char key[65], struct ah_error *err);
/* Its directory (dir: room for a name of 80 bytes after it). */
int user_key_dir(char *dir, size_t size, struct ah_error *err);
#endif
