/* agent-snap: snapshots of the workspace in a shadow git repository
 * under .agent/snap, and the ring's checkpoint stage.  See agent-snap(1). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

const char *progname = "agent-snap";

static const char usage[] =
	"usage: agent-snap [-C DIR] take [--session ID] [--step N] [--calls IDS]\n"
	"       agent-snap [-C DIR] list [--session ID]\n"
	"       agent-snap [-C DIR] diff ID [ID2]\n"
	"       agent-snap [-C DIR] restore [--lock-fd FD] ID [PATH...]\n"
	"       agent-snap [-C DIR] gc [--max-age DAYS] [--max-size MB]\n"
	"       agent-snap [-C DIR] checkpoint [--session ID] [--step-from N] [--full]\n"
	"\n"
	"Keeps snapshots of the workspace (every file but .agent/, as\n"
	"git sees them: .gitignore followed) in a shadow git repository\n"
	"in .agent/snap ($AGENT_STATE_DIR/snap when it is set); the user's\n"
	".git is never touched.\n"
	"\n"
	"  take              take a snapshot; print its id\n"
	"  list              the snapshots, newest first, one JSON object a\n"
	"                    line: id, session, step, calls, time, files\n"
	"  diff ID [ID2]     unified diff from ID to the workspace (or ID2)\n"
	"  restore ID [PATH...]  put the workspace (or the PATHs) back as it\n"
	"                    was at ID, after a snapshot of it as it is;\n"
	"                    print {\"id\",\"before\",\"after\"}\n"
	"  gc                drop the snapshots past the budget that no\n"
	"                    transcript of .agent (or $AGENT_STATE_DIR)\n"
	"                    refers to\n"
	"  checkpoint        a stage of agent-run's ring: messages in and\n"
	"                    out; before an assistant message whose allowed\n"
	"                    calls can write passes, take a snapshot and\n"
	"                    put its id in the message as \"checkpoint\"\n"
	"\n"
	"  -C, --directory DIR  the workspace (default .)\n"
	"      --include-ignored  snapshots hold ignored files too\n"
	"      --session ID     the session a snapshot belongs to ($AGENT_SESSION)\n"
	"      --step N         the step of the session (take)\n"
	"      --calls IDS      the tool calls it is taken before, comma-separated\n"
	"      --step-from N    steps before this run (checkpoint; 0)\n"
	"      --full           checkpoint: every snapshot walks the whole\n"
	"                       workspace (by default only the paths changed\n"
	"                       since the last one are read, when they are\n"
	"                       known for sure)\n"
	"      --lock-fd FD     restore: the caller holds agent-run's lock\n"
	"                       (.agent/lock, $AGENT_STATE_DIR/lock) on FD\n"
	"      --max-age DAYS   gc: keep what is younger (30)\n"
	"      --max-size MB    gc: keep the store under this size (1024)\n"
	"  -h, --help           print this help and exit\n"
	"      --version        print the version and exit\n"
	"\n"
	"Exit status: 0 done, 1 refused (no such snapshot, a session holds\n"
	"the lock, a .agent/snap agent-snap did not make), 2 usage, 3 git or\n"
	"a file failed, 5 checkpoint's input is not JSON Lines.\n";

enum cmd { C_NONE, C_TAKE, C_LIST, C_DIFF, C_RESTORE, C_GC, C_CHECKPOINT };

struct opts {
	enum cmd cmd;
	const char *dir, *session, *calls;
	long step, step_from, lock_fd, max_age, max_size;
	int include_ignored, full;
	char **args;
	int nargs;
};

/* The status for a library error: a refusal (what the user named is not
 * there, or not ours) is 1, the rest 3. */
static int
status_of(const struct ah_error *err)
{
	return err->code == AH_EFORMAT ? ES_REJECTED : ES_IO;
}

static int
fail(const struct ah_error *err)
{
	cli_report(err);
	return status_of(err);
}

/* Says that a STATE/snap agent-snap did not make was moved aside. */
static void
moved_aside(const struct snap *s)
{
	if (s->moved_aside[0])
		cli_warn("'%s/snap' was not made by agent-snap for this user "
			 "in this place (it came with the repository, or was "
			 "copied): moved aside, unused, to '%s'; the snapshots "
			 "start afresh", state_dir(), s->moved_aside);
}

/* Is there no STATE/snap yet (no snapshots: an empty list, nothing to
 * collect)? */
static int
no_snapshots(void)
{
	char path[PATH_MAX];

	if (state_path(path, sizeof path, "snap", NULL) < 0)
		return 0; /* snap_open says why */
	return access(path, F_OK) < 0 && errno == ENOENT;
}

static int
open_snap(struct snap *s, const struct opts *o, int create)
{
	struct ah_error err = { 0 };

	if (snap_open(s, create, &err) < 0)
		return fail(&err);
	s->include_ignored = o->include_ignored;
	moved_aside(s);
	return ES_OK;
}

static int
do_take(const struct opts *o)
{
	struct ah_error err = { 0 };
	struct snap_meta m = { o->session, o->step, o->calls, NULL, NULL };
	struct snap s;
	char id[41];
	int rc = open_snap(&s, o, 1);

	if (rc != ES_OK)
		return rc;
	if (snap_take(&s, &m, id, &err) < 0)
		rc = fail(&err);
	else if (cli_put_line(id, SNAP_ID_LEN, 1) < 0)
		rc = ES_IO;
	snap_close(&s);
	return rc;
}

static int
do_list(const struct opts *o)
{
	struct ah_error err = { 0 };
	struct buf out = BUF_INIT(0);
	struct snap s;
	int rc;

	/* no snapshots yet is an empty list, not an error */
	if (no_snapshots())
		return ES_OK;
	rc = open_snap(&s, o, 0);
	if (rc != ES_OK)
		return rc;
	if (snap_list(&s, o->session, &out, &err) < 0)
		rc = fail(&err);
	else if (out.len && cli_put_line(out.data, out.len, 0) < 0)
		rc = ES_IO;
	buf_free(&out);
	snap_close(&s);
	return rc;
}

static int
do_diff(const struct opts *o)
{
	struct ah_error err = { 0 };
	struct snap s;
	int rc;

	if (o->nargs < 1 || o->nargs > 2)
		return cli_usage_error("diff takes one or two snapshot ids");
	rc = open_snap(&s, o, 0);
	if (rc != ES_OK)
		return rc;
	if (fflush(stdout) == EOF ||
	    snap_diff(&s, o->args[0], o->nargs > 1 ? o->args[1] : NULL,
		      STDOUT_FILENO, &err) < 0)
		rc = err.code ? fail(&err) : ES_IO;
	snap_close(&s);
	return rc;
}

/* The session lock of agent-run: held by the caller on fd (checked), or
 * taken here and kept until we exit.  1 when a session holds it. */
static int
session_lock(const struct opts *o)
{
	struct ah_error err = { 0 };
	char lock[PATH_MAX];
	struct stat a, b;
	int fd;

	if (state_path(lock, sizeof lock, "lock", &err) < 0)
		return fail(&err);
	if (o->lock_fd >= 0) {
		if (fstat((int)o->lock_fd, &a) < 0 || stat(lock, &b) < 0 ||
		    a.st_dev != b.st_dev || a.st_ino != b.st_ino ||
		    flock((int)o->lock_fd, LOCK_EX | LOCK_NB) < 0) {
			cli_warn("--lock-fd %ld: not agent-run's lock of this "
				 "workspace, held", o->lock_fd);
			return ES_REJECTED;
		}
		return ES_OK;
	}
	fd = agent_open(lock, "the session lock ", O_RDONLY, 0, &err);
	if (fd < 0) {
		if (err.code == AH_EIO && access(lock, F_OK) < 0 &&
		    errno == ENOENT)
			return ES_OK; /* no session ever ran here */
		return fail(&err);
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		cli_warn("a session of agent-run is working here (%s): wait "
			 "for it to end, or stop it, before a restore", lock);
		close(fd);
		return ES_REJECTED;
	}
	/* kept, unlocked at our exit: no session starts mid-restore */
	return ES_OK;
}

static int
do_restore(const struct opts *o)
{
	struct ah_error err = { 0 };
	struct snap s;
	char before[41], after[41], want[41];
	char *line = NULL;
	int rc, i;

	if (o->nargs < 1)
		return cli_usage_error("restore takes a snapshot id");
	for (i = 1; i < o->nargs; i++) {
		const char *p = o->args[i];

		if (!*p || *p == '/' || !strcmp(p, "..") || !strncmp(p, "../", 3) ||
		    strstr(p, "/../") || (strlen(p) >= 3 &&
					  !strcmp(p + strlen(p) - 3, "/..")))
			return cli_usage_error("restore: '%s' is not a path "
					       "in the workspace", p);
	}
	rc = session_lock(o);
	if (rc != ES_OK)
		return rc;
	rc = open_snap(&s, o, 0);
	if (rc != ES_OK)
		return rc;
	if (snap_resolve(&s, o->args[0], want, &err) < 0 ||
	    snap_restore(&s, want, o->args + 1, (size_t)(o->nargs - 1),
			 before, after, &err) < 0) {
		rc = fail(&err);
		goto out;
	}
	if (asprintf(&line, "{\"id\":\"%.12s\",\"before\":\"%.12s\","
		     "\"after\":\"%.12s\"}", want, before, after) < 0) {
		cli_warn("out of memory");
		rc = ES_IO;
		goto out;
	}
	if (cli_put_line(line, strlen(line), 1) < 0)
		rc = ES_IO;
out:
	free(line);
	snap_close(&s);
	return rc;
}

static int
do_gc(const struct opts *o)
{
	struct ah_error err = { 0 };
	struct snap_budget b = { o->max_age * 86400LL,
				 o->max_size * 1024LL * 1024 };
	struct snap_gc_result r;
	struct snap s;
	char line[256];
	int rc;

	if (no_snapshots())
		return ES_OK;
	rc = open_snap(&s, o, 0);
	if (rc != ES_OK)
		return rc;
	if (snap_gc(&s, &b, &r, &err) < 0)
		rc = fail(&err);
	else {
		snprintf(line, sizeof line, "{\"kept\":%zu,\"dropped\":%zu,"
			 "\"referenced\":%zu,\"bytes\":%lld}", r.kept,
			 r.dropped, r.referenced, r.bytes);
		if (cli_put_line(line, strlen(line), 1) < 0)
			rc = ES_IO;
	}
	snap_close(&s);
	return rc;
}

/* The tools that only read: a batch of nothing else needs no snapshot.
 * Any other tool (an MCP server's, one added later) may write. */
static int
reads_only(const char *name)
{
	static const char *const ro[] = { "list_dir", "read_file", "grep",
					  "glob", "run_todo_write", "skill" };
	size_t i;

	for (i = 0; i < sizeof ro / sizeof *ro; i++)
		if (!strcmp(name, ro[i]))
			return 1;
	return 0;
}

/* The ids of the calls of msg that will run (allowed) and can write,
 * comma-separated, into b; 0 when there are none. */
static int
writing_calls(const cJSON *msg, struct buf *b)
{
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
	const cJSON *calls = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	const cJSON *c;
	int n = 0;

	buf_reset(b);
	if (!cJSON_IsString(role) || strcmp(role->valuestring, "assistant") ||
	    !cJSON_IsArray(calls))
		return 0;
	cJSON_ArrayForEach(c, calls) {
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
		const cJSON *perm = cJSON_GetObjectItemCaseSensitive(c, "permission");
		const cJSON *dec = cJSON_GetObjectItemCaseSensitive(perm, "decision");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");

		if (!cJSON_IsString(dec) || strcmp(dec->valuestring, "allow"))
			continue;
		if (cJSON_IsString(name) && reads_only(name->valuestring))
			continue;
		if (buf_printf(b, "%s%s", n ? "," : "", cJSON_IsString(id) ?
			       id->valuestring : "") < 0)
			return -1;
		n++;
	}
	return n;
}

static int
do_checkpoint(const struct opts *o)
{
	struct ah_error err = { 0 };
	struct jsonl_reader r;
	struct buf calls = BUF_INIT(1 << 20);
	struct snap_fast *fast = NULL;
	struct snap s;
	long step = o->step_from;
	int rc = ES_OK, got, opened = 0;

	jsonl_reader_init(&r, STDIN_FILENO, "stdin", 0);
	while ((got = jsonl_read_line(&r, &err)) == 1) {
		cJSON *msg;
		char *line = NULL;
		int n;

		if (jsonl_blank(r.line.data, r.line.len))
			continue;
		msg = json_parse(r.line.data, r.line.len, NULL);
		if (!cJSON_IsObject(msg)) {
			cJSON_Delete(msg);
			cli_warn("stdin: line %lu is not a JSON object", r.lineno);
			rc = ES_BADINPUT;
			break;
		}
		{
			const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");

			if (cJSON_IsString(role) &&
			    !strcmp(role->valuestring, "assistant"))
				step++;
		}
		n = writing_calls(msg, &calls);
		if (n < 0) {
			cJSON_Delete(msg);
			cli_warn("out of memory");
			rc = ES_IO;
			break;
		}
		if (n > 0) {
			struct snap_meta m = { o->session, step, calls.data,
					       NULL, NULL };
			struct ah_error terr = { 0 };
			char id[41];

			/* opened once, locked only while a snapshot is
			 * taken (1: .agent/snap is another one now) */
			if (opened && snap_lock(&s, &terr) == 1) {
				snap_close(&s);
				opened = 0;
			}
			if (!opened && !terr.code &&
			    snap_open(&s, 1, &terr) == 0) {
				opened = 1;
				s.include_ignored = o->include_ignored;
				moved_aside(&s);
			}
			if (!fast && !terr.code &&
			    !(fast = snap_fast_new(o->full)))
				terr.code = AH_ENOMEM;
			if (!terr.code) {
				if (snap_fast_take(&s, fast, &m, id, &terr) == 0) {
					id[SNAP_ID_LEN] = '\0';
					if (!cJSON_AddStringToObject(msg,
								     "checkpoint",
								     id))
						terr.code = AH_ENOMEM;
					else
						line = cJSON_PrintUnformatted(msg);
				}
			}
			if (opened)
				snap_unlock(&s);
			/* a step without its checkpoint still runs: said */
			if (terr.code)
				cli_warn("no checkpoint before step %ld: %s",
					 step, terr.msg[0] ? terr.msg
					 : "out of memory");
		}
		cJSON_Delete(msg);
		if (line ? cli_put_line(line, strlen(line), 1)
		    : cli_put_line(r.line.data, r.line.len, 1)) {
			free(line);
			rc = ES_IO;
			break;
		}
		free(line);
	}
	if (got < 0) {
		cli_report(&err);
		rc = err.code == AH_EINTR ? ES_IO : ES_BADINPUT;
	}
	jsonl_reader_free(&r);
	buf_free(&calls);
	snap_fast_free(fast);
	if (opened)
		snap_close(&s);
	return rc;
}

static const struct {
	const char *name;
	enum cmd cmd;
} commands[] = {
	{ "take", C_TAKE }, { "list", C_LIST }, { "diff", C_DIFF },
	{ "restore", C_RESTORE }, { "gc", C_GC },
	{ "checkpoint", C_CHECKPOINT },
};

int
main(int argc, char **argv)
{
	enum { OPT_SESSION = 256, OPT_STEP, OPT_CALLS, OPT_STEP_FROM,
	       OPT_LOCK_FD, OPT_MAX_AGE, OPT_MAX_SIZE, OPT_IGNORED,
	       OPT_FULL };
	static const struct option longopts[] = {
		{ "directory", required_argument, NULL, 'C' },
		{ "session", required_argument, NULL, OPT_SESSION },
		{ "step", required_argument, NULL, OPT_STEP },
		{ "calls", required_argument, NULL, OPT_CALLS },
		{ "step-from", required_argument, NULL, OPT_STEP_FROM },
		{ "lock-fd", required_argument, NULL, OPT_LOCK_FD },
		{ "max-age", required_argument, NULL, OPT_MAX_AGE },
		{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
		{ "include-ignored", no_argument, NULL, OPT_IGNORED },
		{ "full", no_argument, NULL, OPT_FULL },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .dir = ".", .step = -1, .lock_fd = -1,
			  .max_age = 30, .max_size = 1024 };
	size_t i;
	int c, rc;

	if (cli_no_core() < 0)
		return ES_IO;
	signal(SIGPIPE, SIG_IGN);
	o.session = getenv("AGENT_SESSION");
	while ((c = getopt_long(argc, argv, ":C:h", longopts, NULL)) != -1) {
		rc = ES_OK;
		switch (c) {
		case 'C':
			o.dir = optarg;
			break;
		case OPT_SESSION:
			o.session = optarg;
			break;
		case OPT_STEP:
			rc = cli_whole("--step", optarg, 0, LONG_MAX, &o.step);
			break;
		case OPT_CALLS:
			o.calls = optarg;
			break;
		case OPT_STEP_FROM:
			rc = cli_whole("--step-from", optarg, 0, LONG_MAX,
				       &o.step_from);
			break;
		case OPT_LOCK_FD:
			rc = cli_whole("--lock-fd", optarg, 3, INT_MAX,
				       &o.lock_fd);
			break;
		case OPT_MAX_AGE:
			rc = cli_whole("--max-age", optarg, 0, 100000, &o.max_age);
			break;
		case OPT_MAX_SIZE:
			rc = cli_whole("--max-size", optarg, 1, 1 << 30,
				       &o.max_size);
			break;
		case OPT_IGNORED:
			o.include_ignored = 1;
			break;
		case OPT_FULL:
			o.full = 1;
			break;
		case CLI_OPT_VERSION:
			return cli_version();
		case 'h':
			fputs(usage, stdout);
			return cli_finish(ES_OK);
		default:
			return cli_bad_option(argv, c);
		}
		if (rc != ES_OK)
			return ES_USAGE;
	}
	if (optind >= argc)
		return cli_usage_error("say what to do: take, list, diff, "
				       "restore, gc or checkpoint");
	for (i = 0; i < sizeof commands / sizeof *commands; i++)
		if (!strcmp(argv[optind], commands[i].name))
			o.cmd = commands[i].cmd;
	if (o.cmd == C_NONE)
		return cli_usage_error("unknown command '%s'", argv[optind]);
	o.args = argv + optind + 1;
	o.nargs = argc - optind - 1;
	if (o.nargs && o.cmd != C_DIFF && o.cmd != C_RESTORE)
		return cli_usage_error("unexpected argument '%s'", o.args[0]);
	if (o.session && *o.session && !session_id_ok(o.session))
		return cli_usage_error("--session: '%s' is not a session id",
				       o.session);
	if (o.session && !*o.session)
		o.session = NULL;
	if (o.lock_fd >= 0 && o.cmd != C_RESTORE)
		return cli_usage_error("--lock-fd goes with restore");
	if (strcmp(o.dir, ".") && chdir(o.dir) < 0) {
		cli_warn("cannot change to '%s': %s", o.dir, strerror(errno));
		return ES_IO;
	}
	switch (o.cmd) {
	case C_TAKE:
		rc = do_take(&o);
		break;
	case C_LIST:
		rc = do_list(&o);
		break;
	case C_DIFF:
		rc = do_diff(&o);
		break;
	case C_RESTORE:
		rc = do_restore(&o);
		break;
	case C_GC:
		rc = do_gc(&o);
		break;
	default:
		rc = do_checkpoint(&o);
		break;
	}
	return cli_finish(rc);
}
