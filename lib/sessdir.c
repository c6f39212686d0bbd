/* sessdir.c: agent-run's session bookkeeping: where a workspace keeps its
 * sessions (.agent, or the state directory AGENT_STATE_DIR), and which
 * session a run works on.  agent-session --prepare, --open and --close
 * run it for agent-run (agent-session(1)); what they decide comes back as
 * shell assignments (sd->out) for agent-run to eval, what agent-run says
 * on the way as notes (sd->notes), a failure as agent-run's message and
 * exit status (sd->err, sd->status).
 *
 * The state directory is the session's own: a cloned repository may ship
 * .agent, or files in it, as symbolic links (to ~/.bashrc, say), which
 * mkdir, the lock and the transcript would follow.  Each is refused
 * before anything is written (check_file, check_dir). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "priv.h"

const char *
sessdir_state(void)
{
	return state_dir();
}

/* fmt's text, malloc'd; NULL when out of memory */
static char *
format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *
format(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !(s = malloc((size_t)n + 1)))
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

/* Replaces *slot with v (taken). */
static void
take(char **slot, char *v)
{
	free(*slot);
	*slot = v;
}

static int
failed(struct sessdir *sd, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int
failed(struct sessdir *sd, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sd->err.msg, sizeof sd->err.msg, fmt, ap);
	va_end(ap);
	sd->err.code = AH_EFORMAT;
	sd->status = status;
	return -1;
}

static int
oom(struct sessdir *sd)
{
	return failed(sd, 1, "out of memory");
}

/* A note: kind 'q' is said unless agent-run is quiet, 'e' always */
static void
note(struct sessdir *sd, char kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void
note(struct sessdir *sd, char kind, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !(s = malloc((size_t)n + 1)))
		return;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	/* NUL-separated: a note may hold a newline (a path's) */
	if (buf_putc(&sd->notes, kind) == 0 &&
	    buf_append(&sd->notes, s, (size_t)n + 1) < 0)
		sd->notes.len--;
	free(s);
}

/* name='value' for the shell: any byte but NUL, quoted. */
static int
var(struct sessdir *sd, const char *name, const char *value)
{
	const char *p;
	int rc = buf_printf(&sd->out, "%s='", name);

	for (p = value ? value : ""; rc == 0 && *p; p++)
		rc = *p == '\'' ? buf_append(&sd->out, "'\\''", 4)
				: buf_putc(&sd->out, *p);
	if (rc == 0)
		rc = buf_append(&sd->out, "'\n", 2);
	return rc < 0 ? oom(sd) : 0;
}

/* path as messages show it: under the workspace, unless absolute */
static const char *
shown(struct sessdir *sd, const char *path)
{
	if (path[0] == '/')
		return path;
	snprintf(sd->shown, sizeof sd->shown, "%s/%s", sd->workdir, path);
	return sd->shown;
}

static int
unsafe(struct sessdir *sd, const char *path, const char *what)
{
	return failed(sd, 1, "'%s' %s: refusing to use it (remove it, or "
		      "work in another directory)", shown(sd, path), what);
}

/* check_kind: path, if it is there, is of the kind (S_IFREG, S_IFDIR),
 * not a link; 1 when it is there, 0 when not, -1 refused (said) */
static int
check_kind(struct sessdir *sd, const char *path, mode_t kind)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return 0;
	if (S_ISLNK(st.st_mode))
		return unsafe(sd, path, "is a symbolic link");
	if ((st.st_mode & S_IFMT) != kind)
		return unsafe(sd, path, kind == S_IFDIR ? "is not a directory"
			      : "is not a regular file");
	return 1;
}

/* check_file: path, if it is there, is a regular file (not a link) */
static int
check_file(struct sessdir *sd, const char *path)
{
	return check_kind(sd, path, S_IFREG);
}

/* check_dir: path, if it is there, is a directory (not a link); 1 when
 * it is there */
static int
check_dir(struct sessdir *sd, const char *path)
{
	return check_kind(sd, path, S_IFDIR);
}

static int
there(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* a regular file, not through a link */
static int
regular(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* [ -s path ] */
static int
nonempty(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && st.st_size > 0;
}

/* Opens path to read, following a link (as the shell's tools did) but
 * never a FIFO or a device, which could hang us. */
static FILE *
open_read(const char *path)
{
	struct stat st;
	FILE *f;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    !(f = fdopen(fd, "r"))) {
		close(fd);
		return NULL;
	}
	return f;
}

/* The number of lines of path (wc -l), or -1 */
static long
lines_of(const char *path)
{
	FILE *f = open_read(path);
	long n = 0;
	int c;

	if (!f)
		return -1;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* session_of: the id in a session record, as the mark's check reads it
 * (session_read: the whole record parsed, never a line that looks like
 * its start, which a shipped record could hold under another id, and
 * the refusal would then name a session its claim does not take); NULL
 * when none, or one that --begin would not have written: a record a
 * repository shipped could name its session so that no file can be
 * named after it (300 bytes: put aside, it stopped every new session) */
static char *
session_of(const char *record)
{
	struct ah_error err = { 0 };
	cJSON *rec = there(record) ? session_read(record, &err) : NULL;
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(rec, "id");
	char *s = cJSON_IsString(id) && session_id_ok(id->valuestring)
		? strdup(id->valuestring) : NULL;

	cJSON_Delete(rec);
	return s;
}

/* the last value of "key":"[a-z]*" on each line of path that has one,
 * joined by newlines (as sed -n 's/.*"key":"\([a-z]*\)".* /\1/p' had
 * it); "" when none, NULL when out of memory */
static char *
field_of(const char *path, const char *key)
{
	struct buf out = BUF_INIT(0);
	FILE *f = open_read(path);
	char *line = NULL, *pat = format("\"%s\":\"", key), *p, *last;
	size_t cap = 0, n = 0, k, lines = 0;
	int ok = pat != NULL;

	while (ok && f && getline(&line, &cap, f) > 0) {
		last = NULL;
		for (p = line; (p = strstr(p, pat)); p++) {
			k = strspn(p + strlen(pat), "abcdefghijklmnopqrstuvwxyz");
			if (p[strlen(pat) + k] == '"') {
				last = p + strlen(pat);
				n = k;
			}
		}
		if (last)
			ok = (!lines++ || buf_putc(&out, '\n') == 0) &&
				buf_append(&out, last, n) == 0;
	}
	free(line);
	free(pat);
	if (f)
		fclose(f);
	if (!ok) {
		buf_free(&out);
		return NULL;
	}
	return out.data ? out.data : strdup("");
}

/* The whole of path (following a link, never a FIFO): 1 and *data, or 0 */
static int
slurp(const char *path, char **data, size_t *len)
{
	FILE *f = open_read(path);
	struct ah_error err = { 0 };
	int rc;

	*data = NULL;
	if (!f)
		return 0;
	rc = fd_read(fileno(f), path, JSONL_MAX_LINE, data, len, &err);
	fclose(f);
	return rc > 0;
}

/* mv from to: renamed, or copied and removed across file systems */
static int
move(struct sessdir *sd, const char *from, const char *to)
{
	char *data = NULL;
	size_t len;
	int fd, e;

	if (rename(from, to) == 0)
		return 0;
	e = errno;
	if (e == EXDEV && slurp(from, &data, &len)) {
		fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			  O_CLOEXEC, 0600);
		if (fd >= 0 && write_all(fd, data, len) == 0 &&
		    close(fd) == 0 && unlink(from) == 0) {
			free(data);
			return 0;
		}
		e = errno;
		if (fd >= 0)
			unlink(to);
	}
	free(data);
	return failed(sd, 1, "cannot move '%s' to '%s': %s", from, to,
		      strerror(e));
}

/* use_todo: the todo list of the session is path, for every program */
static int
use_todo(struct sessdir *sd, const char *path)
{
	take(&sd->todo, strdup(path));
	return sd->todo ? 0 : oom(sd);
}

/* the state directory's todo.json (a session's list kept there) */
static char *
state_todo(struct sessdir *sd)
{
	return format("%s/todo.json", sd->state);
}

/* session_todo: the todo file of the current session: the one the user
 * chose, else the one its record names (.agent/todo.json when the
 * directory had a todo.json of its own), else todo.json */
static int
session_todo(struct sessdir *sd)
{
	char *mine, *rec = NULL, *want = NULL;
	cJSON *s;
	size_t len;
	int rc;

	if (sd->todo_fixed && *sd->todo_fixed)
		return use_todo(sd, sd->todo_fixed);
	mine = state_todo(sd);
	s = cJSON_CreateString(mine ? mine : "");
	want = s ? cJSON_PrintUnformatted(s) : NULL;
	cJSON_Delete(s);
	if (!mine || !want) {
		free(mine);
		free(want);
		return oom(sd);
	}
	{
		char *w = format("\"todo\":%s", want);

		free(want);
		want = w;
	}
	rc = slurp(sd->S, &rec, &len);
	rc = use_todo(sd, rc > 0 && want && memmem(rec, len, want,
						   strlen(want)) ? mine
		      : "todo.json");
	free(rec);
	free(want);
	free(mine);
	return rc;
}

/* todos_ours: the todo file holds a list that a run_todo_write call of
 * this transcript stored: its rendering is the content of one of the
 * transcript's tool results, byte for byte (the rendering made a JSON
 * string as hook-audit makes it, redacted as the transcript keeps it,
 * as tool-exec makes its results).  A todo.json that came with a cloned
 * repository, or that a command wrote or put back, is not, and is never
 * sent to the model as the user's words.  Runs only when the model
 * stops, and when a session is put aside. */
int
sessdir_todos_ours(const char *transcript, const char *todo,
		   const char *const *secrets)
{
	static const char head[] = "{\"role\":\"user\",\"content\":";
	struct ah_error err = { 0 };
	cJSON *list = NULL, *msg = NULL;
	char *text = NULL, *line = NULL, *red = NULL, *want = NULL, *l = NULL;
	const char *kept, *rest;
	size_t n, cap = 0;
	ssize_t len;
	FILE *f = NULL;
	int ours = 0;

	if (!there(transcript) || todo_load(todo, &list, &err) < 0 ||
	    !(text = todo_render(list, 0)))
		goto out;
	/* as the shell's $(todo-write --show) had it */
	n = strlen(text);
	while (n && text[n - 1] == '\n')
		n--;
	if (!(line = chat_text_message("user", text, n, &n, &err)) ||
	    !(msg = json_parse(line, n, NULL)) ||
	    redact_line(msg, secrets, &red) < 0)
		goto out;
	kept = red ? red : line;
	rest = strncmp(kept, head, sizeof head - 1) ? kept
		: kept + sizeof head - 1;
	if (!(want = format(",\"content\":%s", rest)) ||
	    !(f = open_read(transcript)))
		goto out;
	while (!ours && (len = getline(&l, &cap, f)) > 0)
		ours = !strncmp(l, "{\"role\":\"tool\",", 15) &&
			memmem(l, (size_t)len, want, strlen(want));
out:
	if (f)
		fclose(f);
	free(l);
	free(want);
	free(red);
	cJSON_Delete(msg);
	free(line);
	free(text);
	cJSON_Delete(list);
	return ours;
}

/* sessions_dir: the sessions directory is there, a directory of its own */
static int
sessions_dir(struct sessdir *sd)
{
	struct stat st;

	if (stat(sd->A, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	if (mkdir(sd->A, 0777) == 0)
		return 0;
	/* made meanwhile by a child session of a task call in parallel */
	if (lstat(sd->A, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	return failed(sd, 1, "cannot create '%s'", shown(sd, sd->A));
}

/* The paths of the session: its state directory, and in it the
 * sessions directory, the transcript, the record and the lock (a
 * child's under sessions, named after its parent's session and the
 * task call). */
static int
paths(struct sessdir *sd)
{
	const char *env = getenv("AGENT_TODO_FILE");
	char *p;

	sd->state = strdup(sessdir_state());
	sd->A = format("%s/sessions", sd->state);
	sd->todo_fixed = strdup(env ? env : "");
	if (!sd->state || !sd->A || !sd->todo_fixed)
		return oom(sd);
	if (sd->child) {
		const char *parent = getenv("AGENT_SESSION");
		size_t i, n = strlen(sd->child);

		sd->parent = strdup(parent ? parent : "");
		sd->call = strndup(sd->child, n > 40 ? 40 : n);
		if (!sd->parent || !sd->call)
			return oom(sd);
		for (i = 0; sd->call[i]; i++)
			if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
				    "qrstuvwxyz0123456789_-", sd->call[i]))
				sd->call[i] = '_';
		sd->id = format("%s.%s", sd->parent, sd->call);
		p = sd->id ? format("%s/%s", sd->A, sd->id) : NULL;
		if (!p)
			return oom(sd);
		sd->T = format("%s.jsonl", p);
		sd->S = format("%s.json", p);
		sd->L = format("%s.lock", p);
		free(p);
	} else {
		sd->T = format("%s/transcript.jsonl", sd->state);
		sd->S = format("%s/session.json", sd->state);
		sd->L = format("%s/lock", sd->state);
	}
	if (!sd->T || !sd->S || !sd->L)
		return oom(sd);
	return use_todo(sd, *sd->todo_fixed ? sd->todo_fixed : "todo.json");
}

/* The lock is agent-run's, and only it holds one (the driver): we check
 * that lock_fd is the lock of this session, held. */
static int
lock_held(struct sessdir *sd)
{
	struct stat a, b;

	if (fstat(sd->lock_fd, &a) < 0 || stat(sd->L, &b) < 0 ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino ||
	    flock(sd->lock_fd, LOCK_EX | LOCK_NB) < 0)
		return failed(sd, 1, "--lock-fd %d: not the lock of this "
			      "session, held", sd->lock_fd);
	return 0;
}

/* no_session: -c or --resume finds no transcript to go on with */
static int
no_session(struct sessdir *sd)
{
	if (sd->resume)
		return failed(sd, 1, "nothing to resume: no '%s'",
			      shown(sd, sd->T));
	return failed(sd, 2, "no session to continue in '%s': start one with "
		      "a task", sd->workdir);
}

/* ours: the session whose record and transcript these are (id: that
 * session's, NULL: the one the record names) is the user's own, marked
 * for this state directory (sessmark.c says what the mark proves, and
 * what it does not); else it is not continued, and the user is told
 * why, and what to do.  The allow-list of what goes to the model as the
 * user's conversation: a session that carries no mark that checks, for
 * whatever reason, is refused. */
static int
ours(struct sessdir *sd, const char *record, const char *transcript,
     const char *id)
{
	struct ah_error err = { 0 };
	char *named = id ? NULL : session_of(record);
	const char *sid = id ? id : named ? named : "old-session";
	int rc = sessmark_check(record, transcript, id, &err);

	if (rc == 1)
		rc = 0;
	else if (rc < 0)
		rc = failed(sd, 1, "cannot tell whether session %s in '%s' is "
			    "yours (%s), so it does not go on: start a new "
			    "session", sid, sd->workdir, err.msg);
	else {
		/* (the why first, as a note: the error, bounded, keeps
		 * the command that claims it whole) */
		note(sd, 'e', "a cloned repository, an archive or a copied "
		     "tree may ship a session whose conversation someone else "
		     "wrote: only a session marked as yours goes on "
		     "(agent-run(1), Sessions)");
		rc = failed(sd, 1, "session %s in '%s' does not go on: %s. "
			    "Start a new session (a task, without -c, "
			    "--resume, --session, --fork or --rewind); if it "
			    "is yours (from before agent-run marked its "
			    "sessions, or from a state directory moved or "
			    "remounted), read %s first, then: agent-session "
			    "-C '%s' --claim %s", sid, sd->workdir, err.msg,
			    transcript, sd->workdir, sid);
		/* (a directory's name too long for that: the command run
		 * in it) */
		if (strlen(sd->err.msg) + 1 >= sizeof sd->err.msg)
			rc = failed(sd, 1, "session %s does not go on: %s. "
				    "Start a new session; if it is yours, read "
				    "%s first, then, in the directory: "
				    "agent-session --claim %s", sid, err.msg,
				    transcript, sid);
	}
	free(named);
	return rc;
}

/* kept_ours: ours for a transcript kept in sessions/ (ID.jsonl, its
 * record ID.json), or the current one */
static int
kept_ours(struct sessdir *sd, const char *transcript)
{
	size_t n = strlen(transcript), a = strlen(sd->A);
	char *rec, *id;
	int rc;

	if (!strcmp(transcript, sd->T))
		return ours(sd, sd->S, sd->T, NULL);
	if (n < a + 7 || strncmp(transcript, sd->A, a) ||
	    transcript[a] != '/' || strcmp(transcript + n - 6, ".jsonl"))
		return failed(sd, 1, "'%s' is not a session's transcript",
			      shown(sd, transcript));
	rec = strndup(transcript, n - 1);
	id = strndup(transcript + a + 1, n - a - 7);
	rc = rec && id ? ours(sd, rec, transcript, id) : oom(sd);
	free(rec);
	free(id);
	return rc;
}

/* going_on_with_none: -c or --resume of the last session, and there is
 * none; refused before anything is written (before the state directory
 * is made, and before its lock; --session names one put aside, found
 * later) */
static int
going_on_with_none(struct sessdir *sd)
{
	return !sd->child && !sd->session && !nonempty(sd->T) &&
		(sd->cont || sd->resume);
}

int
sessdir_prepare(struct sessdir *sd)
{
	int is, rc = -1;
	char *f = NULL, *parents = NULL;
	const char *env;

	if (paths(sd) < 0)
		return -1;
	/* AGENT_STATE_DIR: the user's own, for this workspace alone
	 * (state_dir_check says what it refuses, and why), made 0700 */
	if (state_dir_given()) {
		struct ah_error e = { 0 };

		is = state_dir_check(".", 0, &e);
		if (is < 0)
			return failed(sd, 1, "%s", e.msg);
		if (is == 1 && going_on_with_none(sd))
			return no_session(sd);
		if (state_dir_check(".", 1, &e) < 0)
			return failed(sd, 1, "%s", e.msg);
	}
	is = check_dir(sd, sd->state);
	if (is < 0)
		return -1;
	if (!is && going_on_with_none(sd))
		return no_session(sd);
	/* (a state directory of its own was made above: this is .agent,
	 * and a tree that cannot hold it can keep its session elsewhere) */
	if (!is && mkdir(sd->state, 0777) < 0 && errno != EEXIST)
		return failed(sd, 1, "cannot create '%s', where the session is "
			      "kept: %s; give --state-dir DIR to keep it "
			      "elsewhere", shown(sd, sd->state),
			      strerror(errno));
	/* the sessions before this one, and children's, are kept here */
	if (check_dir(sd, sd->A) < 0)
		return -1;
	if (sd->child) {
		char *todo;
		const char *old = getenv("AGENT_TODO_PARENTS");
		const char *ptodo = (env = getenv("AGENT_TODO_FILE")) && *env
			? env : "todo.json";

		/* A child session (a task call of the parent's model): its
		 * own transcript, record, todo list and lock under sessions,
		 * named after the parent's session and the call. */
		if (sessions_dir(sd) < 0)
			return -1;
		todo = format("%s/%s.todo.json", sd->A, sd->id);
		if (!todo || use_todo(sd, todo) < 0) {
			free(todo);
			return oom(sd);
		}
		free(todo);
		if (check_file(sd, sd->T) < 0 || check_file(sd, sd->S) < 0 ||
		    check_file(sd, sd->L) < 0 || check_file(sd, sd->todo) < 0)
			return -1;
		if (there(sd->T))
			return failed(sd, 1, "'%s': the task call '%s' of session "
				      "%s ran before; it is never run again",
				      shown(sd, sd->T), sd->child, sd->parent);
		/* the todo lists of the sessions above us stay theirs: our
		 * commands cannot write them (tool-exec keeps each line
		 * read-only) */
		if (strchr(ptodo, '\n'))
			return failed(sd, 1, "the parent's todo file '%s' has a "
				      "newline in its name: refusing to start a "
				      "child session", ptodo);
		parents = old && *old ? format("%s\n%s", old, ptodo)
			: strdup(ptodo);
		if (!parents)
			return oom(sd);
	} else {
		if (check_file(sd, sd->L) < 0 || check_file(sd, sd->T) < 0 ||
		    check_file(sd, sd->S) < 0)
			return -1;
		if (!(f = format("%s/audit.jsonl", sd->state)) ||
		    check_file(sd, f) < 0) {
			free(f);
			return f ? -1 : oom(sd);
		}
		free(f);
		if (!(f = state_todo(sd)) || check_file(sd, f) < 0) {
			free(f);
			return f ? -1 : oom(sd);
		}
		free(f);
		if (going_on_with_none(sd))
			return no_session(sd);
	}
	/* what the state directory holds (transcripts, records, the audit
	 * log, outputs) is never committed by a git add -A: it ignores
	 * itself, as a venv does */
	if (!(f = format("%s/.gitignore", sd->state))) {
		oom(sd);
		goto out;
	}
	if (check_file(sd, f) < 0)
		goto out;
	if (!there(f)) {
		int fd = open(f, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			      O_CLOEXEC, 0666);

		if (fd < 0 || write_all(fd, "*\n", 2) < 0 || close(fd) < 0) {
			failed(sd, 1, "cannot write '%s': %s", shown(sd, f),
			       strerror(errno));
			goto out;
		}
	}
	if (sd->child &&
	    (var(sd, "parent", sd->parent) < 0 ||
	     var(sd, "call", sd->call) < 0 || var(sd, "id", sd->id) < 0 ||
	     var(sd, "AGENT_TODO_PARENTS", parents) < 0 ||
	     var(sd, "AGENT_TODO_FILE", sd->todo) < 0 ||
	     buf_printf(&sd->out, "export AGENT_TODO_FILE "
			"AGENT_TODO_PARENTS\n") < 0))
		goto out;
	/* the todo file the user chose, if any (else see session_todo); a
	 * child's is its own */
	if (var(sd, "todo_fixed", sd->child ? sd->todo : sd->todo_fixed) < 0 ||
	    var(sd, "state", sd->state) < 0 ||
	    var(sd, "state_shown", shown(sd, sd->state)) < 0 ||
	    var(sd, "T_shown", shown(sd, sd->T)) < 0 ||
	    var(sd, "A", sd->A) < 0 ||
	    var(sd, "T", sd->T) < 0 || var(sd, "S", sd->S) < 0 ||
	    var(sd, "L", sd->L) < 0 || var(sd, "todo", sd->todo) < 0)
		goto out;
	rc = 0;
out:
	free(f);
	free(parents);
	return rc;
}

/* resolve_session: sd->session is the one session of the directory
 * whose id is the prefix given, or else starts with it (child sessions,
 * whose ids hold a dot, only by their whole id); none, or more than one,
 * is an error that says which */
static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in directory A ending in suffix, not starting with a dot
 * unless prefix does (as the shell's "$A/$prefix"*suffix), sorted. */
static char **
names(const char *dir, const char *prefix, const char *suffix, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL, **nv;
	size_t len, sl = strlen(suffix), cap = 0;

	*n = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		len = strlen(e->d_name);
		if ((e->d_name[0] == '.' && prefix[0] != '.') ||
		    strncmp(e->d_name, prefix, strlen(prefix)) ||
		    len < strlen(prefix) + sl ||
		    strcmp(e->d_name + len - sl, suffix))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			if (!(nv = realloc(v, cap * sizeof *v)))
				break;
			v = nv;
		}
		if (!(v[*n] = strdup(e->d_name)))
			break;
		++*n;
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof *v, name_cmp);
	return v;
}

static void
names_free(char **v, size_t n)
{
	while (n)
		free(v[--n]);
	free(v);
}

static int
resolve_session(struct sessdir *sd)
{
	const char *prefix = sd->session;
	char *cur = session_of(sd->S), *f, **v;
	struct buf all = BUF_INIT(0);
	size_t i, n, count = 0;
	int rc = 0, exact = 0;

	v = names(sd->A, prefix, ".jsonl", &n);
	for (i = 0; i < n && !exact; i++) {
		f = format("%s/%s", sd->A, v[i]);
		if (!f || !regular(f)) {
			free(f);
			continue;
		}
		free(f);
		v[i][strlen(v[i]) - 6] = '\0';
		if (!strcmp(v[i], prefix))
			exact = 1;
		else if (!strchr(v[i], '.') &&
			 buf_printf(&all, " %s", v[i]) == 0)
			count++;
	}
	names_free(v, n);
	if (exact || (cur && !strcmp(cur, prefix)))
		rc = (take(&sd->resolved, strdup(prefix)), 0);
	else {
		if (cur && !strncmp(cur, prefix, strlen(prefix)) &&
		    buf_printf(&all, " %s", cur) == 0)
			count++;
		if (count == 0)
			rc = failed(sd, 1, "no session '%s' in '%s' (agent-run "
				    "--sessions lists them)", prefix,
				    sd->workdir);
		else if (count == 1)
			take(&sd->resolved, strdup(all.data + 1));
		else
			rc = failed(sd, 2, "'%s' starts the ids of %zu sessions:"
				    "%s; give more of it", prefix, count,
				    all.data);
	}
	if (rc == 0 && !sd->resolved)
		rc = oom(sd);
	buf_free(&all);
	free(cur);
	return rc;
}

/* put_aside: the current session (transcript, record, and the todo list
 * it wrote) goes to sessions/ID.*, to make room for another; *old (when
 * not NULL) gets its id.  A todo.json it did not write stays where it
 * is. */
static int
put_aside(struct sessdir *sd, char **old_out)
{
	char *old = NULL, *f[3] = { NULL, NULL, NULL }, *mine = NULL;
	struct stat st;
	int i, n, named, rc = -1;

	if (!there(sd->T) || stat(sd->T, &st) < 0)
		return 0;
	if (session_todo(sd) < 0)
		return -1;
	if (!(mine = state_todo(sd))) {
		oom(sd);
		goto out;
	}
	if (sessions_dir(sd) < 0)
		goto out;
	/* a transcript without the record of its id (none, or an id no file
	 * can be named after) is named after its time, WHEN-N, with the
	 * first N whose names are free (two put aside in one second) */
	named = (old = session_of(sd->S)) != NULL;
	for (n = 0;; n++) {
		if (!named) {
			char when[32];
			struct tm tm;

			gmtime_r(&st.st_mtime, &tm);
			strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &tm);
			free(old);
			old = format("%s-%d", when, n);
		}
		for (i = 0; i < 3; i++) {
			free(f[i]);
			f[i] = NULL;
		}
		if (!old || !(f[0] = format("%s/%s.jsonl", sd->A, old)) ||
		    !(f[1] = format("%s/%s.json", sd->A, old)) ||
		    !(f[2] = format("%s/%s.todo.json", sd->A, old))) {
			oom(sd);
			goto out;
		}
		for (i = 0; i < 3 && !there(f[i]); i++)
			;
		if (i == 3)
			break;
		if (named || n == 99) {
			failed(sd, 1, "'%s' is in the way of the earlier session",
			       shown(sd, f[i]));
			goto out;
		}
	}
	if (stat(sd->todo, &st) == 0) {
		if (!strcmp(sd->todo, mine) ||
		    sessdir_todos_ours(sd->T, sd->todo, sd->secrets)) {
			if (move(sd, sd->todo, f[2]) < 0)
				goto out;
		} else
			note(sd, 'q', "'%s' was not written by session %s: it stays "
			     "where it is", sd->todo, old);
	}
	if (move(sd, sd->T, f[0]) < 0)
		goto out;
	if (stat(sd->S, &st) == 0 && move(sd, sd->S, f[1]) < 0)
		goto out;
	note(sd, 'q', "the earlier session %s is kept in %s", old, f[0]);
	if (old_out) {
		*old_out = old;
		old = NULL;
	}
	rc = 0;
out:
	for (i = 0; i < 3; i++)
		free(f[i]);
	free(mine);
	free(old);
	return rc;
}

/* take_up: session id of the sessions directory becomes the current
 * one */
static int
take_up(struct sessdir *sd, const char *id)
{
	char *t = format("%s/%s.jsonl", sd->A, id);
	char *r = format("%s/%s.json", sd->A, id);
	char *l = format("%s/%s.todo.json", sd->A, id);
	struct stat st;
	int rc = -1;

	if (!t || !r || !l) {
		oom(sd);
		goto out;
	}
	if (!regular(t)) {
		failed(sd, 1, "no session '%s' in '%s' (agent-run --sessions "
		       "lists them)", id, sd->workdir);
		goto out;
	}
	if (put_aside(sd, NULL) < 0 || check_file(sd, r) < 0 ||
	    check_file(sd, l) < 0 || move(sd, t, sd->T) < 0 ||
	    (stat(r, &st) == 0 && move(sd, r, sd->S) < 0) ||
	    session_todo(sd) < 0)
		goto out;
	if (stat(l, &st) == 0) {
		if (there(sd->todo)) {
			failed(sd, 1, "the todo list of session %s (%s) would "
			       "replace '%s': move that away first", id, l,
			       shown(sd, sd->todo));
			goto out;
		}
		if (move(sd, l, sd->todo) < 0)
			goto out;
	}
	rc = 0;
out:
	free(t);
	free(r);
	free(l);
	return rc;
}

/* fix_tail: the interrupted end of a transcript: a crash in the middle
 * of a write leaves a torn last line (cut here), a kill between the
 * system prompt and the task no task (the model would be called without
 * one). */
static int
fix_tail(struct sessdir *sd)
{
	char c, chunk[4096], *line = NULL;
	size_t cap = 0, torn = 0;
	ssize_t n;
	struct stat st;
	off_t at;
	FILE *f;
	int fd = open(sd->T, O_RDWR | O_NOCTTY | O_CLOEXEC), found = 0;

	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return failed(sd, 1, "cannot read '%s': %s", shown(sd, sd->T),
			      strerror(errno));
	}
	if (st.st_size == 0 || pread(fd, &c, 1, st.st_size - 1) != 1 ||
	    c != '\n') {
		/* the bytes after the last newline */
		for (at = st.st_size; at > 0; at -= n) {
			n = at < (off_t)sizeof chunk ? (ssize_t)at
				: (ssize_t)sizeof chunk;
			if (pread(fd, chunk, (size_t)n, at - n) != n)
				break;
			{
				char *nl = memrchr(chunk, '\n', (size_t)n);

				if (nl) {
					torn += (size_t)(chunk + n - nl - 1);
					break;
				}
			}
			torn += (size_t)n;
		}
		if (ftruncate(fd, st.st_size - (off_t)torn) < 0) {
			close(fd);
			return failed(sd, 1, "cannot cut the torn line of '%s': %s",
				      shown(sd, sd->T), strerror(errno));
		}
		note(sd, 'q', "the last line of %s was torn (%zu bytes): cut back "
		     "to the last complete line", sd->T, torn);
	}
	close(fd);
	/* grep '"role": *"user"' */
	f = open_read(sd->T);
	while (f && !found && getline(&line, &cap, f) > 0) {
		const char *p = line;

		while (!found && (p = strstr(p, "\"role\":"))) {
			p += 7;
			p += strspn(p, " ");
			found = !strncmp(p, "\"user\"", 6);
		}
	}
	free(line);
	if (f)
		fclose(f);
	if (!found)
		return failed(sd, 1, "cannot go on with '%s': it has no user "
			      "message (no task); start a new session with a "
			      "task", shown(sd, sd->T));
	return 0;
}

/* An id of rewind's in line: "checkpoint":"REWIND[0-9a-f]*" with its
 * closing quote, each one found (as grep -o) added to ids. */
static int
checkpoints_in(const char *line, const char *rewind, struct buf *ids,
	       size_t *count)
{
	char *pat = format("\"checkpoint\":\"%s", rewind), *id;
	const char *p = line;
	size_t k, n;

	if (!pat)
		return -1;
	n = strlen(pat);
	while ((p = strstr(p, pat))) {
		k = strspn(p + n, "0123456789abcdef");
		if (p[n + k] != '"') {
			p++;
			continue;
		}
		if (!(id = strndup(p, n + k + 1)))
			break;
		/* ids: NUL-separated, each once */
		{
			const char *q = ids->data;
			int seen = 0;

			while (q && q < ids->data + ids->len && !seen) {
				seen = !strcmp(q, id);
				q += strlen(q) + 1;
			}
			if (!seen && buf_append(ids, id, strlen(id) + 1) == 0)
				++*count;
		}
		free(id);
		p += n + k + 1;
	}
	free(pat);
	return 0;
}

/* the files a checkpoint is looked for in: the transcript, then the
 * sessions kept, in order */
static char **
branch_files(struct sessdir *sd, size_t *n)
{
	char **v = names(sd->A, "", ".jsonl", n), **all;
	size_t i;

	all = calloc(*n + 1, sizeof *all);
	if (all && (all[0] = strdup(sd->T)))
		for (i = 0; i < *n; i++) {
			all[i + 1] = format("%s/%s", sd->A, v[i]);
			if (!all[i + 1]) {
				names_free(all, i + 1);
				all = NULL;
				break;
			}
		}
	names_free(v, *n);
	if (all)
		++*n;
	else
		*n = 0;
	return all;
}

/* agent-snap restore --lock-fd FD ID: the workspace put back, under our
 * lock; *before gets the id of the snapshot taken before (to undo it).
 * The agent-snap installed beside us (harness_program), never one found
 * on PATH: it runs outside the sandbox. */
static int
restore(struct sessdir *sd, char **before)
{
	char fd[16], *out = NULL, *p, *q, snap[PATH_MAX];
	size_t len = 0;
	struct ah_error err = { 0 };
	int pfd[2], st = -1, null;
	pid_t pid;

	snprintf(fd, sizeof fd, "%d", sd->lock_fd);
	if (harness_program("agent-snap", snap, sizeof snap, &err) < 0) {
		note(sd, 'e', "%s", err.msg);
		return -1;
	}
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		null = open("/dev/null", O_RDONLY);
		if (dup2(pfd[1], 1) < 0 || (null >= 0 && dup2(null, 0) < 0))
			_exit(127);
		execl(snap, "agent-snap", "restore", "--lock-fd", fd,
		      sd->rewind, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	if (pid > 0 &&
	    fd_read(pfd[0], "agent-snap", 1 << 20, &out, &len, &err) < 0)
		out = NULL;
	close(pfd[0]);
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		free(out);
		return -1;
	}
	/* sed 's/.*"before":"\([0-9a-f]*\)".* /\1/' */
	if (!out)
		out = strdup("");
	while (out && (len = strlen(out)) && out[len - 1] == '\n')
		out[len - 1] = '\0';
	p = NULL;
	for (q = out; q && (q = strstr(q, "\"before\":\"")); q++)
		if (q[10 + strspn(q + 10, "0123456789abcdef")] == '"')
			p = q + 10;
	if (p) {
		len = strspn(p, "0123456789abcdef");
		memmove(out, p, len);
		out[len] = '\0';
	}
	*before = out;
	return out ? 0 : -1;
}

/* branch_find: --rewind ID, --fork: bfile, the transcript the new
 * session starts from, and bkeep, how many of its lines (for --rewind,
 * those before the step whose message names checkpoint ID).  --rewind
 * and --rewind-code put the files back first (agent-snap restore, under
 * our lock); --rewind-code ends there (*done). */
static int
branch_find(struct sessdir *sd, int *done)
{
	struct buf ids = BUF_INIT(0);
	char **files = NULL, *line = NULL, *before = NULL, *cur = NULL;
	size_t n = 0, count = 0, cap = 0, i;
	long lineno = 0, hit = 0;
	FILE *f;
	int rc = -1;

	if (sd->fork) {
		cur = session_of(sd->S);
		if (!sd->session || (cur && !strcmp(sd->session, cur))) {
			take(&sd->bfile, strdup(sd->T));
			take(&sd->bsrc, cur ? strdup(cur) : strdup(""));
		} else {
			take(&sd->bfile, format("%s/%s.jsonl", sd->A,
						sd->session));
			take(&sd->bsrc, strdup(sd->session));
		}
		if (!sd->bfile || !sd->bsrc ||
		    !(sd->bmsg = strdup(sd->task ? sd->task : ""))) {
			oom(sd);
			goto out;
		}
		if (!regular(sd->bfile) || !nonempty(sd->bfile)) {
			failed(sd, 1, "no session %s in '%s' (agent-run --sessions "
			       "lists them)", sd->session ? sd->session
			       : "to fork", sd->workdir);
			goto out;
		}
		if (kept_ours(sd, sd->bfile) < 0)
			goto out;
		sd->bkeep = lines_of(sd->bfile);
		rc = sd->bkeep < 0 ? failed(sd, 1, "cannot read '%s'",
					    shown(sd, sd->bfile)) : 0;
		goto out;
	}
	/* the line that names the checkpoint, in the sessions kept here:
	 * the current one's if it has it (a rewound or forked session
	 * shares the lines before with the one it came from) */
	files = branch_files(sd, &n);
	for (i = 0; i < n; i++) {
		if (!(f = open_read(files[i])))
			continue;
		while (getline(&line, &cap, f) > 0)
			checkpoints_in(line, sd->rewind, &ids, &count);
		fclose(f);
	}
	if (count == 0) {
		failed(sd, 1, "no step of a session in '%s' has checkpoint '%s' "
		       "(agent-snap list shows the snapshots; agent-snap "
		       "restore puts back one of a session no longer kept)",
		       sd->workdir, sd->rewind);
		goto out;
	}
	if (count > 1) {
		failed(sd, 1, "checkpoint '%s' is ambiguous: give more of its id",
		       sd->rewind);
		goto out;
	}
	for (i = 0; i < n && !hit; i++) {
		if (!(f = open_read(files[i])))
			continue;
		lineno = 0;
		sd->bstep = 0;
		while (!hit && getline(&line, &cap, f) > 0) {
			lineno++;
			if (!strncmp(line, "{\"role\":\"assistant\"", 19))
				sd->bstep++;
			if (strstr(line, ids.data))
				hit = lineno;
		}
		fclose(f);
		if (hit)
			take(&sd->bfile, strdup(files[i]));
	}
	if (!hit) {
		failed(sd, 1, "checkpoint '%s' is ambiguous: give more of its id",
		       sd->rewind);
		goto out;
	}
	if (!sd->bfile) {
		oom(sd);
		goto out;
	}
	if (!regular(sd->bfile)) {
		failed(sd, 1, "'%s' is not a regular file", shown(sd, sd->bfile));
		goto out;
	}
	/* (--rewind-code puts back the files only, from the user's own
	 * snapshots: agent-snap(1) checks those; no conversation goes on) */
	if (strcmp(sd->rewind_what, "code") && kept_ours(sd, sd->bfile) < 0)
		goto out;
	sd->bkeep = hit - 1;
	if (!strcmp(sd->bfile, sd->T))
		take(&sd->bsrc, (cur = session_of(sd->S)) ? cur : strdup(""));
	else
		take(&sd->bsrc, strndup(sd->bfile + strlen(sd->A) + 1,
					strlen(sd->bfile) - strlen(sd->A) - 7));
	cur = NULL;
	if (!sd->bsrc) {
		oom(sd);
		goto out;
	}
	if (strcmp(sd->rewind_what, "conversation")) {
		if (restore(sd, &before) < 0) {
			failed(sd, 1, "the workspace could not be put back to "
			       "checkpoint '%s'; nothing was changed",
			       sd->rewind);
			goto out;
		}
		note(sd, 'q', "the workspace is back to checkpoint %s, before step %ld "
		     "of session %s (undo: agent-snap restore %s)", sd->rewind,
		     sd->bstep, sd->bsrc, before);
	}
	if (!strcmp(sd->rewind_what, "code")) {
		*done = 1;
		rc = 0;
		goto out;
	}
	if (!strcmp(sd->rewind_what, "both"))
		sd->bmsg = format("[agent-run] The workspace was restored to "
				  "checkpoint %s, the snapshot taken just before "
				  "step %ld of session %s, and this conversation "
				  "was rewound to that point: what that step and "
				  "the later ones did is undone, in the files and "
				  "here.\n\n%s", sd->rewind, sd->bstep, sd->bsrc,
				  sd->task && *sd->task ? sd->task
				  : "Go on with the task from here.");
	else
		sd->bmsg = format("[agent-run] This conversation was rewound to "
				  "just before step %ld of session %s (checkpoint "
				  "%s). The workspace was not restored: the files "
				  "are as that step and the later ones left them."
				  "\n\n%s", sd->bstep, sd->bsrc, sd->rewind,
				  sd->task && *sd->task ? sd->task
				  : "Go on with the task from here.");
	rc = sd->bmsg ? 0 : oom(sd);
out:
	if (files)
		names_free(files, n);
	free(cur);
	free(line);
	free(before);
	buf_free(&ids);
	return rc;
}

/* branch_begin's first part: the kept lines of bfile as the new
 * session's transcript, made beside it and renamed into place */
static int
branch_copy(struct sessdir *sd)
{
	/* (named after our caller, the subshell of agent-run's $(...): a
	 * pid no other run's reaper has while we run, and never a sibling
	 * session's prefix; made and renamed by us, it is left only if we
	 * are killed on the way) */
	char *tmp = format("%s/.transcript-new.%ld.XXXXXX", sd->state,
			   (long)sd->pid);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	long n = 0;
	FILE *in = NULL;
	int fd = -1, rc = -1;

	if (!tmp)
		return oom(sd);
	if ((fd = mkstemp(tmp)) < 0) {
		failed(sd, 1, "cannot create '%s': %s", shown(sd, tmp),
		       strerror(errno));
		free(tmp);
		return -1;
	}
	if (!(in = open_read(sd->bfile))) {
		failed(sd, 1, "cannot read '%s'", shown(sd, sd->bfile));
		goto out;
	}
	while (n < sd->bkeep && (len = getline(&line, &cap, in)) > 0) {
		n++;
		if (write_all(fd, line, (size_t)len) < 0) {
			failed(sd, 1, "cannot write '%s': %s", shown(sd, tmp),
			       strerror(errno));
			goto out;
		}
	}
	if (close(fd) < 0 || rename(tmp, sd->T) < 0) {
		fd = -1;
		failed(sd, 1, "cannot make '%s': %s", shown(sd, sd->T),
		       strerror(errno));
		goto out;
	}
	fd = -1;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		unlink(tmp);
	if (in)
		fclose(in);
	free(line);
	free(tmp);
	return rc;
}

static int
put_long(struct sessdir *sd, const char *name, long v)
{
	char s[32];

	snprintf(s, sizeof s, "%ld", v);
	return var(sd, name, s);
}

int
sessdir_mode_mark(const char *id, const char *mode, char hex[65],
		  struct ah_error *err)
{
	char key[65], *text;
	struct stat st;

	if (stat(sessdir_state(), &st) < 0)
		return ah_fail_errno(err, errno, "cannot stat '%s'",
				     sessdir_state());
	if (user_key(key, err) < 0)
		return -1;
	if (!(text = format("agent-run mode %s %llu %llu %s %s", key,
			    (unsigned long long)st.st_dev,
			    (unsigned long long)st.st_ino, id, mode)))
		return ah_fail(err, AH_ENOMEM, "out of memory");
	policy_hash(text, strlen(text), hex);
	free(text);
	return 0;
}

/* The record at path names mode with its own mode_mark. */
static int
mode_marked(const char *path, const char *mode)
{
	struct ah_error err = { 0 };
	cJSON *rec = path ? session_read(path, &err) : NULL;
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(rec, "id");
	const cJSON *mark = cJSON_GetObjectItemCaseSensitive(rec, "mode_mark");
	char want[65];
	int ok = cJSON_IsString(id) && cJSON_IsString(mark) &&
		sessdir_mode_mark(id->valuestring, mode, want, &err) == 0 &&
		!strcmp(mark->valuestring, want);

	cJSON_Delete(rec);
	return ok;
}

/* A session that goes on in another mode is told so, into or out of plan
 * mode (what the model can do changes): mode_note, "" else. */
static int
mode_note(struct sessdir *sd, const char *amode, const char *was)
{
	struct ah_error err = { 0 };
	char *text = NULL, *msg = NULL;
	size_t len = 0;
	int rc;

	if (!strcmp(amode, "plan")) {
		if (!sd->plan_text ||
		    file_read(sd->plan_text, 1 << 20, &text, &len, &err) < 1)
			return failed(sd, 1, "cannot read plan mode's text '%s'%s%s",
				      sd->plan_text ? sd->plan_text : "",
				      *err.msg ? ": " : "", err.msg);
		/* (as $(cat) reads it: up to a NUL, less the line ends) */
		len = strlen(text);
		while (len && text[len - 1] == '\n')
			text[--len] = '\0';
		rc = asprintf(&msg, "[agent-run] This session is in plan mode "
			      "now. %s", text);
	} else if (!strcmp(was, "plan"))
		rc = asprintf(&msg, "[agent-run] This session left plan mode: it "
			      "is in %s mode now, and the workspace can be "
			      "written. The plan you made is your last answer "
			      "above: carry it out.", amode);
	else
		return 0;
	free(text);
	if (rc < 0)
		return oom(sd);
	rc = var(sd, "mode_note", msg);
	free(msg);
	return rc;
}

/* The mode: the one given (--mode, -y), else the session's own when it
 * goes on (its record; for --fork and --rewind, that of the session it
 * starts from), else AGENT_MODE, else ask.  hook-perm adds its rules to
 * the policy, tool-exec holds a plan session in the read-only sandbox
 * whatever AGENT_SANDBOX says; a child session of a task call inherits
 * it. */
static int
permission_mode(struct sessdir *sd, const char *mode)
{
	char *was = NULL, *rec = NULL, *amode;
	const char *sandbox = sd->sandbox ? sd->sandbox : "";
	int rc = -1;

	/* (--fork, --rewind: the mode of the session it starts from) */
	if (!strcmp(mode, "continue") || !strcmp(mode, "resume"))
		rec = strdup(sd->S);
	else if (!strcmp(mode, "branch")) {
		rec = strdup(sd->bfile);
		if (rec && *rec && rec[strlen(rec) - 1] == 'l')
			rec[strlen(rec) - 1] = '\0';
	}
	was = rec ? field_of(rec, "permission_mode") : strdup("");
	if (!was) {
		free(rec);
		return oom(sd);
	}
	/* A mode that lets calls run without asking (edit, auto) is kept
	 * only from a record that agent-run wrote, for this user, in this
	 * state directory: a cloned repository, an archive or a copied tree
	 * may ship .agent with a session and its record, whose mode would
	 * otherwise decide the calls of the session that goes on with it.
	 * Else the session goes on in the mode a new one gets. */
	if ((!strcmp(was, "edit") || !strcmp(was, "auto")) &&
	    !mode_marked(rec, was)) {
		note(sd, 'e', "the mode '%s' of %s was not set by agent-run here "
		     "(the record came with the directory, or was copied): "
		     "not kept; --mode or -y chooses one", was, shown(sd, rec));
		free(was);
		if (!(was = strdup(""))) {
			free(rec);
			return oom(sd);
		}
	}
	free(rec);
	rec = NULL;
	/* (AGENT_MODE, a default, is the mode of new sessions: only --mode
	 * or -y changes that of a session that goes on) */
	amode = strdup(*was && !sd->amode_given ? was : sd->amode && *sd->amode
		       ? sd->amode : *was ? was : "ask");
	if (!amode) {
		oom(sd);
		goto out;
	}
	if (var(sd, "was", was) < 0 || var(sd, "amode", amode) < 0)
		goto out;
	if (strcmp(amode, "plan") && strcmp(amode, "ask") &&
	    strcmp(amode, "edit") && strcmp(amode, "auto")) {
		failed(sd, 1, "the session's mode '%s' (in %s) is unknown", amode,
		       sd->S);
		goto out;
	}
	if (!strcmp(amode, "plan")) {
		if (sd->sandbox_given && strcmp(sandbox, "read-only")) {
			failed(sd, 2, "session %s is in plan mode, which runs "
			       "everything in the read-only sandbox: --sandbox "
			       "%s does not go with it (give --mode too)", sd->id,
			       sandbox);
			sd->usage = 1;
			goto out;
		}
		if (var(sd, "sandbox", "read-only") < 0)
			goto out;
	}
	if (!strcmp(amode, "auto") && var(sd, "yes", "1") < 0)
		goto out;
	if (strcmp(mode, "new") && strcmp(mode, "code") &&
	    strcmp(amode, *was ? was : "ask") &&
	    mode_note(sd, amode, *was ? was : "ask") < 0)
		goto out;
	rc = 0;
out:
	free(amode);
	free(was);
	return rc;
}

int
sessdir_open(struct sessdir *sd)
{
	const char *mode;
	char *old = NULL, *cur = NULL;
	long from = 0;
	int done = 0, checked = 0, rc = -1;

	if (paths(sd) < 0 || lock_held(sd) < 0)
		return -1;
	if (sd->child) {
		mode = "new";
	} else if (sd->resume || sd->cont) {
		mode = sd->resume ? "resume" : "continue";
		if (var(sd, "mode", mode) < 0)
			goto out;
		if (sd->session) {
			if (resolve_session(sd) < 0)
				goto out;
			cur = session_of(sd->S);
			if (!cur || strcmp(sd->resolved, cur)) {
				/* (checked before it is taken up) */
				char *t = format("%s/%s.jsonl", sd->A,
						 sd->resolved);

				checked = 1;
				if (!t || !regular(t)) {
					free(t);
					t = NULL;
				}
				if (t && kept_ours(sd, t) < 0) {
					free(t);
					goto out;
				}
				free(t);
				if (take_up(sd, sd->resolved) < 0)
					goto out;
			}
		}
		if (!nonempty(sd->T)) {
			no_session(sd);
			goto out;
		}
		if (!checked && ours(sd, sd->S, sd->T, NULL) < 0)
			goto out;
		if (fix_tail(sd) < 0)
			goto out;
		from = lines_of(sd->T);
		free(sd->id);
		sd->id = session_of(sd->S);
		if (session_todo(sd) < 0)
			goto out;
	} else {
		mode = "new";
		if (var(sd, "mode", mode) < 0)
			goto out;
		if ((sd->rewind || sd->fork) && branch_find(sd, &done) < 0)
			goto out;
		if (done) {
			rc = var(sd, "mode", "code");
			goto out;
		}
		if (put_aside(sd, &old) < 0 || var(sd, "prev", old) < 0)
			goto out;
		/* A todo.json that no session here wrote (it came with the
		 * repository, or is the project's own data) is never
		 * overwritten nor shown to the model: the session keeps its
		 * list in the state directory. */
		{
			char *mine = state_todo(sd);

			if (!mine) {
				oom(sd);
				goto out;
			}
			if (*sd->todo_fixed)
				rc = use_todo(sd, sd->todo_fixed);
			else if ((sd->amode && !strcmp(sd->amode, "plan")) ||
				 (sd->sandbox &&
				  !strcmp(sd->sandbox, "read-only")))
				/* (the workspace stays as it is: the list
				 * goes in the state directory) */
				rc = use_todo(sd, mine);
			else if (there("todo.json")) {
				rc = use_todo(sd, mine);
				note(sd, 'q', "'%s/todo.json' was not written by a "
				     "session here: it is left alone and not "
				     "shown to the model; this session keeps "
				     "its todo list in %s (AGENT_TODO_FILE "
				     "chooses another)", sd->workdir, mine);
			} else
				rc = use_todo(sd, "todo.json");
			free(mine);
			if (rc < 0)
				goto out;
			rc = -1;
		}
		/* (the session put aside may be the one to start from) */
		if (sd->bfile && !strcmp(sd->bfile, sd->T))
			take(&sd->bfile, format("%s/%s.jsonl", sd->A,
						old ? old : ""));
		if (sd->bfile) {
			mode = "branch";
			if (var(sd, "mode", mode) < 0)
				goto out;
		}
	}
	if (!sd->id || !*sd->id) {
		char when[32];
		time_t t = time(NULL);
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &tm);
		take(&sd->id, format("%s-%ld", when, (long)sd->pid));
	}
	if (!sd->id) {
		oom(sd);
		goto out;
	}
	if (var(sd, "mode", mode) < 0 || var(sd, "id", sd->id) < 0 ||
	    var(sd, "todo", sd->todo) < 0 ||
	    var(sd, "AGENT_TODO_FILE", sd->todo) < 0 ||
	    buf_printf(&sd->out, "export AGENT_TODO_FILE\n") < 0 ||
	    permission_mode(sd, mode) < 0)
		goto out;
	if (!strcmp(mode, "branch")) {
		if (branch_copy(sd) < 0 || fix_tail(sd) < 0)
			goto out;
		from = lines_of(sd->T);
		if (var(sd, "bmsg", sd->bmsg) < 0 ||
		    var(sd, "bsrc", sd->bsrc) < 0 ||
		    put_long(sd, "bstep", sd->bstep) < 0)
			goto out;
	}
	rc = put_long(sd, "from", from);
out:
	free(old);
	free(cur);
	return rc;
}

int
sessdir_close(struct sessdir *sd, int status, const char *prev)
{
	int rc = 0;

	if (paths(sd) < 0 || lock_held(sd) < 0)
		return -1;
	if (sd->close_todo && use_todo(sd, sd->close_todo) < 0)
		return -1;
	/* --ephemeral: the session is not kept (nor the list it wrote);
	 * the one before it is the last again */
	if (sd->ephemeral) {
		if (sessdir_todos_ours(sd->T, sd->todo, sd->secrets))
			unlink(sd->todo);
		unlink(sd->T);
		unlink(sd->S);
		return prev && *prev ? take_up(sd, prev) : 0;
	}
	/* a new session that failed before its model answered once does
	 * not take the place of the last one: it is put aside, that one is
	 * back */
	if (status != 0 && prev && *prev) {
		FILE *f = open_read(sd->T);
		char *line = NULL;
		size_t cap = 0;
		int answered = 0;

		while (f && !answered && getline(&line, &cap, f) > 0)
			answered = !strncmp(line, "{\"role\":\"assistant\"", 19);
		free(line);
		if (f)
			fclose(f);
		if (answered)
			return 0;
		rc = take_up(sd, prev);
		if (rc == 0)
			note(sd, 'e', "session %s failed before the model answered: "
			     "%s is the last session again (agent-run -c goes on "
			     "with it)", sd->close_id && *sd->close_id
			     ? sd->close_id : "?", prev);
	}
	return rc;
}

void
sessdir_free(struct sessdir *sd)
{
	buf_free(&sd->out);
	buf_free(&sd->notes);
	free(sd->state);
	free(sd->A);
	free(sd->T);
	free(sd->S);
	free(sd->L);
	free(sd->todo);
	free(sd->todo_fixed);
	free(sd->parent);
	free(sd->call);
	free(sd->id);
	free(sd->resolved);
	free(sd->bfile);
	free(sd->bsrc);
	free(sd->bmsg);
}
