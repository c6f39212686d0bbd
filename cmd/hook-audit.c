/* hook-audit: passes messages through and appends an audit record for
 * each.  See hook-audit(1). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

const char *progname = "hook-audit";

static const char usage[] =
	"usage: hook-audit [--sync] [-C DIR] [--log FILE] [--session ID]\n"
	"                  [--tee FILE] [--message ROLE [--from-user]]\n"
	"                  [--events FD]\n"
	"                  < MESSAGES > MESSAGES\n"
	"\n"
	"Copies its input to its output byte for byte, and appends one record\n"
	"per message to the audit log, secrets redacted (and the message to\n"
	"the --tee file, with what looks like a key redacted too).\n"
	"\n"
	"  -C, --directory DIR  the working directory ($AGENT_WORKDIR, else .)\n"
	"      --log FILE       the log ($AGENT_AUDIT_LOG, else\n"
	"                       $AGENT_STATE_DIR/audit.jsonl when it is set,\n"
	"                       else DIR/.agent/audit.jsonl)\n"
	"      --session ID     the session id of the records ($AGENT_SESSION,\n"
	"                       else made from the time and the process id)\n"
	"      --sync           fdatasync the log after each record\n"
	"      --tee FILE       also append each line to FILE (a transcript),\n"
	"                       after its record and before it goes on\n"
	"      --message ROLE   the input is the text of one message of ROLE\n"
	"                       (system, developer, user or assistant), not\n"
	"                       messages: pass {\"role\":ROLE,\"content\":TEXT}\n"
	"      --from-user      with --message user: the text is the user's own\n"
	"                       words (a task, a follow-up): the message gets\n"
	"                       \"from\":\"user\", and a compaction keeps it\n"
	"                       word for word\n"
	"      --events FD      also write the events of each message to the\n"
	"                       open descriptor FD (see agent-harness(5)), and\n"
	"                       a todo event when the todo file\n"
	"                       ($AGENT_TODO_FILE, else todo.json) changes\n"
	"  -h, --help           print this help and exit\n"
	"      --version        print the version and exit\n"
	"\n"
	"The log and the --tee file are never opened through a symbolic link\n"
	"under .agent, nor with a link as last component elsewhere, and must\n"
	"be regular files.\n"
	"\n"
	"Exit status: 0 done, 2 usage, 3 the log or a stream failed,\n"
	"5 a line is not a JSON object.\n";

/* A crash left a torn last line, and the next append cut it: say so. */
static void
torn(const char *file, size_t cut)
{
	cli_warn("'%s': cut a torn last line (%zu bytes) that a crashed "
		 "writer left", file, cut);
}

struct pass {
	int fd, tfd, sync, gone;
	int efd;                 /* --events, or -1 */
	const char *path, *tee, *session, **secrets;
	unsigned long long seq;
	struct event_todo todo;  /* the todo file, as last seen */
};

/* --events: the events of msg to p->efd.  A reader that went away ends
 * the events, not the session: the transcript has everything. */
static int
pass_events(struct pass *p, const cJSON *msg)
{
	struct ah_error err = { 0 };
	struct buf out = BUF_INIT(0);
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
	int rc = ES_OK;

	if (events_of_message(&out, msg, p->session, p->secrets, &err) < 0 ||
	    (cJSON_IsString(role) && !strcmp(role->valuestring, "tool") &&
	     events_of_todo(&out, todo_default_path(), &p->todo, p->session,
			    &err) < 0)) {
		cli_report(&err);
		rc = ES_IO;
	} else if (out.len && events_write(p->efd, out.data, out.len) < 0) {
		if (errno == EPIPE) {
			p->efd = -1;
		} else {
			cli_warn("--events: %s", strerror(errno));
			rc = ES_IO;
		}
	}
	buf_free(&out);
	return rc;
}

/* Audits one line s[0..n) (s[n] must be writable), tees it and passes it
 * on; lineno and newline are those of the line read.  ES_OK to go on,
 * else the exit status. */
static int
pass_line(struct pass *p, char *s, size_t n, unsigned long lineno,
	  int newline)
{
	struct ah_error err = { 0 };
	size_t off, len, cut;
	cJSON *msg;
	char *rec, *red = NULL;
	int c;

	if (!jsonl_blank(s, n)) {
		msg = memchr(s, '\0', n) ? NULL : json_parse(s, n, &off);
		if (!cJSON_IsObject(msg)) {
			cli_warn("stdin: line %lu: not a JSON object%s", lineno,
				 msg ? "" : " (not valid JSON)");
			cJSON_Delete(msg);
			return ES_BADINPUT;
		}
		rec = audit_record(msg, n + newline, p->session, ++p->seq,
				   p->secrets);
		if (!rec) {
			cJSON_Delete(msg);
			cli_warn("cannot make an audit record: out of memory");
			return ES_IO;
		}
		/* the record is written before the message goes on: nothing
		 * passes unaudited */
		len = strlen(rec);
		rec[len] = '\n';
		c = audit_append(p->fd, rec, len + 1, p->sync, &cut, &err);
		free(rec);
		if (cut)
			torn(p->path, cut);
		if (c < 0) {
			cJSON_Delete(msg);
			cli_warn("audit log '%s': %s", p->path, err.msg);
			return ES_IO;
		}
		/* what looks like a key is redacted from the transcript, as
		 * from the log; the messages go on as they came: the stages
		 * after us act on them */
		if (p->tfd >= 0 && redact_line(msg, p->secrets, &red) < 0) {
			cJSON_Delete(msg);
			cli_warn("cannot redact a message: out of memory");
			return ES_IO;
		}
		/* the transcript gets the line before the next stage can
		 * fail: a closed pipe downstream never loses it */
		if (p->tfd >= 0) {
			if (red) {
				len = strlen(red);
				red[len] = '\n';
				c = audit_append(p->tfd, red, len + 1, p->sync,
						 &cut, &err);
				free(red);
			} else {
				s[n] = '\n';
				c = audit_append(p->tfd, s, n + 1, p->sync,
						 &cut, &err);
				s[n] = '\0';
			}
			if (cut)
				torn(p->tee, cut);
			if (c < 0) {
				cJSON_Delete(msg);
				cli_warn("'%s': %s", p->tee, err.msg);
				return ES_IO;
			}
		}
		c = p->efd >= 0 ? pass_events(p, msg) : ES_OK;
		cJSON_Delete(msg);
		if (c != ES_OK)
			return c;
	}
	if (p->gone)
		return ES_OK;
	if (cli_put_line(s, n, newline)) {
		/* With --tee the transcript is the record: the reader
		 * downstream is gone, but what still comes in (the results of
		 * interrupted calls) is kept to the end. */
		if (p->tfd < 0 || errno != EPIPE)
			return ES_IO;
		p->gone = 1;
		if (!freopen("/dev/null", "w", stdout))
			return ES_IO;
	}
	return ES_OK;
}

/* --message: the text on stdin made into one message of role. */
static int
pass_text(struct pass *p, const char *role, int from_user)
{
	struct ah_error err = { 0 };
	char *text, *line = NULL, *marked;
	static const char from[] = ",\"from\":\"user\"}";
	size_t len;
	int rc;

	if (fd_read(STDIN_FILENO, "stdin", JSONL_MAX_LINE, &text, &len,
		    &err) < 0) {
		cli_report(&err);
		rc = cli_status(&err, ES_BADINPUT);
	} else if (!(line = chat_text_message(role, text, len, &len, &err))) {
		cli_report(&err);
		rc = ES_IO;
	} else if (from_user && !(marked = realloc(line, len + sizeof from))) {
		cli_warn("out of memory");
		rc = ES_IO;
	} else {
		/* the object's closing brace gives way to the mark */
		if (from_user) {
			line = marked;
			memcpy(line + len - 1, from, sizeof from);
			len += sizeof from - 2;
		}
		rc = pass_line(p, line, len, 1, 1);
	}
	free(line);
	free(text);
	return rc;
}

/* Each line of stdin, as it arrives. */
static int
pass_lines(struct pass *p)
{
	struct ah_error err = { 0 };
	struct jsonl_reader in;
	int c, rc = ES_OK;

	jsonl_reader_init(&in, STDIN_FILENO, "stdin", 0);
	while (rc == ES_OK && (c = jsonl_read_line(&in, &err)) != 0) {
		if (c < 0) {
			cli_report(&err);
			rc = cli_status(&err, ES_BADINPUT);
		} else
			rc = pass_line(p, in.line.data, in.line.len, in.lineno,
				       !in.partial);
	}
	jsonl_reader_free(&in);
	return rc;
}

int
main(int argc, char **argv)
{
	enum { OPT_LOG = 256, OPT_SESSION, OPT_SYNC, OPT_TEE, OPT_MESSAGE,
	       OPT_EVENTS, OPT_FROM_USER };
	static const struct option longopts[] = {
		{ "directory", required_argument, NULL, 'C' },
		{ "log", required_argument, NULL, OPT_LOG },
		{ "session", required_argument, NULL, OPT_SESSION },
		{ "sync", no_argument, NULL, OPT_SYNC },
		{ "tee", required_argument, NULL, OPT_TEE },
		{ "message", required_argument, NULL, OPT_MESSAGE },
		{ "from-user", no_argument, NULL, OPT_FROM_USER },
		{ "events", required_argument, NULL, OPT_EVENTS },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = getenv("AGENT_WORKDIR"), *log = getenv("AGENT_AUDIT_LOG");
	const char *session = getenv("AGENT_SESSION"), *tee = NULL;
	const char *role = NULL;
	/* the keys we may hold, starred out wherever they appear */
	const char *const keys[] = { getenv("AGENT_API_KEY"),
		getenv("OPENAI_API_KEY"), getenv("ANTHROPIC_API_KEY") };
	const char *secrets[4] = { NULL };
	size_t nsecrets = 0, k;
	char path[PATH_MAX + 32], sid[64];
	struct ah_error err = { 0 };
	struct pass p = { .tfd = -1, .efd = -1, .todo = { .quiet = 1 } };
	int c, rc = ES_OK, from_user = 0;

	if (cli_no_core() < 0)
		return ES_IO;
	while ((c = getopt_long(argc, argv, ":C:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'C':
			dir = optarg;
			break;
		case OPT_LOG:
			log = optarg;
			break;
		case OPT_SESSION:
			session = optarg;
			break;
		case OPT_SYNC:
			p.sync = 1;
			break;
		case OPT_TEE:
			tee = optarg;
			break;
		case OPT_MESSAGE:
			role = optarg;
			break;
		case OPT_FROM_USER:
			from_user = 1;
			break;
		case OPT_EVENTS: {
			char *end;
			long fd;

			errno = 0;
			fd = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || fd < 0 ||
			    fd > INT_MAX)
				return cli_usage_error("--events: '%s' is not a "
						       "descriptor number", optarg);
			if (fcntl((int)fd, F_GETFD) < 0)
				return cli_usage_error("--events: descriptor %ld "
						       "is not open", fd);
			p.efd = (int)fd;
			break;
		}
		case CLI_OPT_VERSION:
			return cli_version();
		case 'h':
			fputs(usage, stdout);
			return cli_finish(ES_OK);
		default:
			return cli_bad_option(argv, c);
		}
	}
	if (optind < argc)
		return cli_usage_error("unexpected argument '%s'", argv[optind]);
	if (role && !chat_text_role(role))
		return cli_usage_error("--message: unknown role '%s' (use system, "
				       "developer, user or assistant)", role);
	if (from_user && (!role || strcmp(role, "user")))
		return cli_usage_error("--from-user goes with --message user");
	for (k = 0; k < sizeof keys / sizeof *keys; k++)
		if (keys[k] && *keys[k])
			secrets[nsecrets++] = keys[k];
	if (!dir || !*dir)
		dir = ".";
	/* agent_open makes a missing .agent of the default log; a state
	 * directory of its own is checked (and made) first */
	if (log && *log)
		snprintf(path, sizeof path, "%s", log);
	else if (state_dir_given()) {
		if (state_dir_check(dir, 1, &err) < 0 ||
		    state_path(path, sizeof path, "audit.jsonl", &err) < 0) {
			cli_report(&err);
			return ES_IO;
		}
	} else
		snprintf(path, sizeof path, "%s/.agent/audit.jsonl", dir);
	if (!session || !*session) {
		char when[32];
		time_t t = time(NULL);
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &tm);
		snprintf(sid, sizeof sid, "%s-%ld", when, (long)getpid());
		session = sid;
	}
	/* The log may hold what the model saw: readable by its owner only.
	 * Both files are opened without following a symbolic link, and
	 * must be regular files (see agent_open): a repository's
	 * .agent/audit.jsonl -> ~/.bashrc gets an error, not our records. */
	p.fd = agent_open(path, "the audit log ", O_RDWR | O_APPEND | O_CREAT,
			  0600, &err);
	if (p.fd < 0) {
		cli_report(&err);
		return ES_IO;
	}
	if (tee) {
		p.tfd = agent_open(tee, NULL, O_RDWR | O_APPEND | O_CREAT, 0600,
				   &err);
		if (p.tfd < 0) {
			cli_report(&err);
			close(p.fd);
			return ES_IO;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (p.efd >= 0) {
		/* the todo list as it is before the first message: only a
		 * change is told */
		struct buf none = BUF_INIT(0);

		events_of_todo(&none, todo_default_path(), &p.todo, session,
			       &err);
		buf_free(&none);
	}
	p.path = path;
	p.tee = tee;
	p.session = session;
	p.secrets = secrets;
	rc = role ? pass_text(&p, role, from_user) : pass_lines(&p);
	if (p.tfd >= 0)
		close(p.tfd);
	if (close(p.fd) < 0 && rc == ES_OK) {
		cli_warn("audit log '%s': %s", path, strerror(errno));
		rc = ES_IO;
	}
	return cli_finish(rc);
}
