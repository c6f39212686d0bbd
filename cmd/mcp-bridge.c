/* mcp-bridge: the MCP servers of a session, their tools for the model.
 * See mcp-bridge(1). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

const char *progname = "mcp-bridge";

static const char usage[] =
	"usage: mcp-bridge [-v] [-C DIR] [options] < CALLS\n"
	"       mcp-bridge [-C DIR] [options] --schema\n"
	"       mcp-bridge [-C DIR] [options] --serve SOCKET [--watch PID]\n"
	"       mcp-bridge [-C DIR] --trust [FILE]\n"
	"\n"
	"Starts the MCP servers of the configuration (stdio, Streamable HTTP over\n"
	"http:// or https://), and answers each tool call read (JSON Lines, a\n"
	"call of a tool mcp__SERVER__TOOL) with a tool message.  Protocol\n"
	"versions: 2025-06-18, 2025-03-26, 2024-11-05.\n"
	"\n"
	"  -C, --directory DIR   the workspace (default $AGENT_WORKDIR, else the\n"
	"                        current directory): its .mcp.json, once trusted\n"
	"      --mcp-config FILE servers of FILE too (may be repeated)\n"
	"      --no-user-config  not the servers of ~/.config/agent-harness/mcp.json\n"
	"      --trust [FILE]    trust DIR/.mcp.json (or FILE) as it is now, and\n"
	"                        list the servers it runs\n"
	"      --schema          print the tools (JSON) and exit\n"
	"      --serve SOCKET    serve calls on SOCKET; print the pid and the\n"
	"                        token clients must send, and exit\n"
	"      --watch PID       with --serve: stop when PID ends\n"
	"      --timeout SEC     a call without progress (120; $AGENT_MCP_TIMEOUT)\n"
	"      --max-timeout SEC a call, progress or not (600)\n"
	"      --start-timeout SEC  a server's start, and tools/list (30)\n"
	"      --max-output N    bytes of a result, head and tail kept (30000;\n"
	"                        $AGENT_MAX_OUTPUT)\n"
	"      --max-restarts N  starts again of a server that died (3)\n"
	"      --max-procs N     processes of a stdio server at once (512;\n"
	"                        $AGENT_MCP_MAX_PROCS; 0 for no limit)\n"
	"      --max-memory SIZE memory of a stdio server's processes (4G;\n"
	"                        $AGENT_MCP_MAX_MEMORY; 0 for no limit)\n"
	"      --ca-file FILE    check https:// servers' certificates against the\n"
	"                        CA certificates of FILE ($AGENT_MCP_CA_FILE)\n"
	"      --sandbox MODE    confine the servers as tool-exec confines\n"
	"                        commands: workspace-write (the default;\n"
	"                        $AGENT_SANDBOX), read-only or off\n"
	"  -v, --verbose         progress, logs and starts on stderr\n"
	"  -h, --help            print this help and exit\n"
	"      --version         print the version and exit\n"
	"\n"
	"Exit status: 0 done, 1 a configuration is not valid, 2 usage,\n"
	"3 I/O error, 5 bad input line, 130 or 143 interrupted.\n";

static volatile sig_atomic_t stop;

/* --serve: what a client must send in "token" (hex, from getrandom):
 * the session's tool-exec has it, the commands it runs do not. */
static char token[33];

static void
on_signal(int sig)
{
	stop = sig;
}

static void
on_note(void *ctx, const char *text)
{
	(void)ctx;
	cli_warn("%s", text);
}

struct opts {
	const char *dir, *serve, *trust;
	const char *files[32];
	const char *mode;
	int nfiles, trusting, schema, no_user;
	long watch, maxout, restarts;
};

/* The configurations: the user's, the workspace's once trusted, then
 * --mcp-config; a later one's server replaces an earlier one's of the
 * same name.  ES_OK, or the exit status (said). */
static int
load(struct mcp *m, const struct opts *o, const char *workdir)
{
	struct ah_error err = { 0 };
	char path[PATH_MAX + 64], *text;
	const char *x = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	size_t len;
	int i, rc;

	path[0] = '\0';
	if (o->no_user)
		;
	else if (x && *x == '/')
		snprintf(path, sizeof path, "%s/agent-harness/mcp.json", x);
	else if (home && *home == '/')
		snprintf(path, sizeof path, "%s/.config/agent-harness/mcp.json",
			 home);
	if (path[0]) {
		rc = file_read(path, 1u << 20, &text, &len, &err);
		if (rc < 0)
			goto bad;
		if (rc > 0) {
			rc = mcp_config_add(m, path, text, len, 1, &err);
			free(text);
			if (rc < 0)
				goto bad;
		}
	}
	snprintf(path, sizeof path, "%s/.mcp.json", workdir);
	rc = file_read(path, 1u << 20, &text, &len, &err);
	if (rc < 0)
		goto bad;
	if (rc > 0) {
		rc = policy_is_trusted(path, text, len, &err);
		if (rc > 0)
			rc = mcp_config_add(m, path, text, len, 1, &err);
		else if (rc == 0)
			cli_warn("ignoring '%s': it is not trusted (new, or "
				 "changed since trusted), so its servers are "
				 "not started; review it, then run: mcp-bridge "
				 "-C '%s' --trust", path, workdir);
		free(text);
		if (rc < 0)
			goto bad;
	}
	for (i = 0; i < o->nfiles; i++) {
		rc = file_read(o->files[i], 1u << 20, &text, &len, &err);
		if (rc == 0) {
			cli_warn("cannot read '%s': %s", o->files[i],
				 strerror(ENOENT));
			return ES_IO;
		}
		if (rc < 0)
			goto bad;
		rc = mcp_config_add(m, o->files[i], text, len, 1, &err);
		free(text);
		if (rc < 0)
			goto bad;
	}
	return ES_OK;
bad:
	cli_report(&err);
	return err.code == AH_EFORMAT || err.code == AH_ETOOBIG ? ES_REJECTED
								 : ES_IO;
}

/* --trust: the user has read the workspace's .mcp.json (or FILE). */
static int
trust(struct mcp *m, const char *workdir, const char *arg)
{
	struct ah_error err = { 0 };
	char path[PATH_MAX + 64], abs[PATH_MAX], hex[65], *text = NULL;
	size_t len;
	int rc;

	if (arg)
		snprintf(path, sizeof path, "%s", arg);
	else
		snprintf(path, sizeof path, "%s/.mcp.json", workdir);
	if (!realpath(path, abs)) {
		cli_warn("nothing to trust: '%s': %s", path, strerror(errno));
		return ES_IO;
	}
	rc = file_read(abs, 1u << 20, &text, &len, &err);
	if (rc <= 0 || mcp_config_add(m, abs, text, len, 1, &err) < 0 ||
	    policy_trust(abs, text, len, &err) < 0) {
		if (rc == 0)
			cli_warn("nothing to trust: '%s' went away", abs);
		else
			cli_report(&err);
		free(text);
		return err.code == AH_EFORMAT ? ES_REJECTED : ES_IO;
	}
	policy_hash(text, len, hex);
	free(text);
	printf("trusted '%s' (sha256:%s)\n", abs, hex);
	text = mcp_describe(m);
	if (!text) {
		cli_warn("out of memory");
		return ES_IO;
	}
	fputs(text, stdout);
	free(text);
	return ES_OK;
}

/* One input line: a tool call (Chat Completions' shape), answered with
 * a tool message; or a request of the socket's ({"op": "schema"},
 * {"op": "call", "name", "arguments"}).  The answer line in *out. */
static int
handle(struct mcp *m, const cJSON *in, int client, char **out)
{
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(in, "op");
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(in, "function");
	const cJSON *name, *args;
	cJSON *ans = NULL;
	char *res = NULL, *owned = NULL;
	const char *argtext;
	int rc;

	*out = NULL;
	if (token[0]) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(in, "token");
		unsigned char diff = 0;
		size_t i;

		if (!cJSON_IsString(t) || strlen(t->valuestring) != 32)
			diff = 1;
		for (i = 0; !diff && i < 32; i++)
			diff |= (unsigned char)(t->valuestring[i] ^ token[i]);
		if (diff) {
			cli_warn("refused a client without the session's token");
			ans = cJSON_CreateObject();
			if (!ans || !cJSON_AddStringToObject(ans, "content",
				"Error: refused: the request does not carry this "
				"session's token") ||
			    !cJSON_AddStringToObject(ans, "status", "error"))
				goto fail;
			goto print;
		}
	}
	if (cJSON_IsString(op) && !strcmp(op->valuestring, "schema")) {
		ans = mcp_schema(m);
		goto print;
	}
	if (cJSON_IsString(op) && !strcmp(op->valuestring, "call")) {
		name = cJSON_GetObjectItemCaseSensitive(in, "name");
		args = cJSON_GetObjectItemCaseSensitive(in, "arguments");
		argtext = cJSON_IsString(args) ? args->valuestring : "{}";
	} else if (fn) {
		name = cJSON_GetObjectItemCaseSensitive(fn, "name");
		argtext = call_arguments_text(in, "{}", &owned);
		if (!argtext)
			return -1;
	} else {
		name = NULL;
		argtext = "{}";
	}
	if (!cJSON_IsString(name))
		rc = asprintf(&res, "Error: the call names no tool.") < 0
			     ? -1 : TOOL_ERROR;
	else
		rc = mcp_call(m, name->valuestring, argtext, client, &res);
	free(owned);
	if (rc < 0)
		return -1;
	ans = cJSON_CreateObject();
	if (!ans)
		goto fail;
	if (fn) {
		if (!cJSON_AddStringToObject(ans, "role", "tool") ||
		    !cJSON_AddStringToObject(ans, "tool_call_id", call_id(in)))
			goto fail;
	}
	if (!cJSON_AddStringToObject(ans, "content", res) ||
	    !cJSON_AddStringToObject(ans, "status", rc == TOOL_OK ? "ok"
				     : rc == TOOL_INTERRUPTED ? "interrupted"
				     : "error"))
		goto fail;
	if (m->opts.verbose)
		cli_warn("%s -> %s", cJSON_IsString(name) ? name->valuestring
							  : "?",
			 rc == TOOL_OK ? "ok" : rc == TOOL_INTERRUPTED
			 ? "interrupted" : "error");
print:
	if (!ans || !(*out = cJSON_PrintUnformatted(ans)))
		goto fail;
	free(res);
	cJSON_Delete(ans);
	return 0;
fail:
	free(res);
	cJSON_Delete(ans);
	return -1;
}

/* Calls from stdin, answers to stdout. */
static int
filter(struct mcp *m)
{
	struct ah_error err = { 0 };
	struct jsonl_reader in;
	cJSON *msg;
	char *line;
	int c = 0, rc = ES_OK;

	jsonl_reader_init(&in, STDIN_FILENO, "stdin", 0);
	while (!stop && (c = jsonl_read_object(&in, &msg, &err)) > 0) {
		if (handle(m, msg, -1, &line) < 0) {
			cJSON_Delete(msg);
			cli_warn("out of memory");
			rc = ES_IO;
			break;
		}
		cJSON_Delete(msg);
		if (cli_put_line(line, strlen(line), 1) < 0) {
			free(line);
			rc = ES_IO;
			break;
		}
		free(line);
	}
	if (rc == ES_OK && !stop && c < 0) {
		cli_report(&err);
		rc = cli_status(&err, ES_BADINPUT);
	}
	if (stop && rc == ES_OK) {
		cli_warn("interrupted by signal %d", (int)stop);
		rc = 128 + (int)stop;
	}
	jsonl_reader_free(&in);
	return rc;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads one request line from a client, within a few seconds. */
static int
read_request(int fd, struct buf *b)
{
	double until = now() + 10;
	struct pollfd p;
	char chunk[65536];
	ssize_t n;

	buf_reset(b);
	while (!b->len || b->data[b->len - 1] != '\n') {
		int t = (int)((until - now()) * 1000);

		if (t <= 0 || stop)
			return -1;
		p.fd = fd;
		p.events = POLLIN;
		if (poll(&p, 1, t) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || buf_append(b, chunk, (size_t)n) < 0)
			return -1;
	}
	return 0;
}

/* One client at a time: a request, its answer.  Until stop, or the
 * watched process ends. */
static int
serve_loop(struct mcp *m, int lfd, pid_t watch)
{
	struct buf req = BUF_INIT(JSONL_MAX_LINE);
	struct pollfd p[2];
	int pidfd = -1, fd, np;
	char *line;
	cJSON *msg;

	if (watch > 1)
		pidfd = (int)syscall(SYS_pidfd_open, watch, 0);
	while (!stop) {
		if (watch > 1 && pidfd < 0 && kill(watch, 0) < 0 &&
		    errno == ESRCH)
			break;
		p[0].fd = lfd;
		p[0].events = POLLIN;
		p[1].fd = pidfd;
		p[1].events = POLLIN;
		np = pidfd >= 0 ? 2 : 1;
		if (poll(p, (nfds_t)np, pidfd >= 0 ? -1 : 500) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (np == 2 && p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (read_request(fd, &req) == 0) {
			msg = json_parse(req.data, req.len, NULL);
			if (cJSON_IsObject(msg) &&
			    handle(m, msg, fd, &line) == 0) {
				/* a client gone has nobody to tell */
				(void)(write_all(fd, line, strlen(line)) < 0 ||
				       write_all(fd, "\n", 1) < 0);
				free(line);
			}
			cJSON_Delete(msg);
		}
		close(fd);
	}
	if (pidfd >= 0)
		close(pidfd);
	buf_free(&req);
	return ES_OK;
}

/* --serve: the socket is made first (clients wait in its backlog while
 * the servers start), then the parent prints the child's pid and
 * returns. */
static int
serve(struct mcp *m, const char *path, pid_t watch)
{
	struct sockaddr_un a;
	struct stat st, now;
	pid_t pid;
	mode_t old;
	int lfd, null, rc;

	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof a.sun_path) {
		cli_warn("the socket path '%s' is too long", path);
		return ES_USAGE;
	}
	memcpy(a.sun_path, path, strlen(path) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	old = umask(077);
	rc = lfd < 0 ? -1 : bind(lfd, (struct sockaddr *)&a, sizeof a);
	umask(old);
	if (rc < 0 || listen(lfd, 64) < 0) {
		cli_warn("cannot listen on '%s': %s", path, strerror(errno));
		if (lfd >= 0)
			close(lfd);
		return ES_IO;
	}
	{
		unsigned char r[16];
		size_t i;

		if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
			cli_warn("cannot make a token: %s", strerror(errno));
			close(lfd);
			unlink(path);
			return ES_IO;
		}
		for (i = 0; i < sizeof r; i++)
			snprintf(token + 2 * i, 3, "%02x", r[i]);
	}
	if (fflush(stdout) == EOF || (pid = fork()) < 0) {
		cli_warn("cannot start the server: %s", strerror(errno));
		close(lfd);
		unlink(path);
		return ES_IO;
	}
	if (pid > 0) {
		close(lfd);
		printf("%ld %s\n", (long)pid, token);
		return cli_finish(ES_OK);
	}
	/* stdin and stdout are nobody's to wait for; stderr stays, for
	 * what the user should hear */
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		close(null);
	}
	if (stat(path, &st) < 0)
		memset(&st, 0, sizeof st);
	mcp_start(m);
	rc = serve_loop(m, lfd, watch);
	close(lfd);
	if (stat(path, &now) == 0 && now.st_ino == st.st_ino &&
	    now.st_dev == st.st_dev)
		unlink(path);
	return rc;
}

/* The servers' sandbox: the one of the model's commands (mode), its
 * network each server's own.  One that cannot be had is said when a
 * server asks for it; off: servers run unconfined, as commands do. */
static void
sandbox_setup_for(struct mcp *m, struct sandbox *sb, const char *mode,
		  const char *workdir)
{
	static char why[sizeof ((struct ah_error *)0)->msg];
	struct ah_error err = { 0 };
	int md = sandbox_mode_parse(mode);

	if (md == SANDBOX_OFF) {
		m->opts.sandbox_off = 1;
		return;
	}
	if (sandbox_init(sb, md, workdir, todo_default_path(), &err) < 0) {
		sandbox_free(sb);
		snprintf(why, sizeof why, "%s", err.msg);
		m->opts.sandbox_error = why;
		return;
	}
	m->opts.sandbox = sb;
}

int
main(int argc, char **argv)
{
	enum { OPT_CONFIG = 256, OPT_NOUSER, OPT_TRUST, OPT_SCHEMA, OPT_SERVE,
	       OPT_WATCH, OPT_TIMEOUT, OPT_MAXTIMEOUT, OPT_START, OPT_MAXOUT,
	       OPT_RESTARTS, OPT_SANDBOX, OPT_CAFILE, OPT_MAXPROCS, OPT_MAXMEM };
	static const struct option longopts[] = {
		{ "directory", required_argument, NULL, 'C' },
		{ "mcp-config", required_argument, NULL, OPT_CONFIG },
		{ "no-user-config", no_argument, NULL, OPT_NOUSER },
		{ "trust", optional_argument, NULL, OPT_TRUST },
		{ "schema", no_argument, NULL, OPT_SCHEMA },
		{ "serve", required_argument, NULL, OPT_SERVE },
		{ "watch", required_argument, NULL, OPT_WATCH },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "max-timeout", required_argument, NULL, OPT_MAXTIMEOUT },
		{ "start-timeout", required_argument, NULL, OPT_START },
		{ "max-output", required_argument, NULL, OPT_MAXOUT },
		{ "max-restarts", required_argument, NULL, OPT_RESTARTS },
		{ "sandbox", required_argument, NULL, OPT_SANDBOX },
		{ "ca-file", required_argument, NULL, OPT_CAFILE },
		{ "max-procs", required_argument, NULL, OPT_MAXPROCS },
		{ "max-memory", required_argument, NULL, OPT_MAXMEM },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { 0 };
	struct sandbox sb;
	struct mcp m;
	struct sigaction sa;
	char workdir[PATH_MAX];
	const char *v;
	int c, rc;

	if (cli_no_core() < 0)
		return ES_IO;
	mcp_init(&m);
	o.dir = getenv("AGENT_WORKDIR");
	o.mode = getenv("AGENT_SANDBOX");
	m.opts.cafile = getenv("AGENT_MCP_CA_FILE");
	o.maxout = 30000;
	o.restarts = 3;
	v = getenv("AGENT_MCP_TIMEOUT");
	if (v && *v && cli_number("AGENT_MCP_TIMEOUT", v, 0.001, 1e6,
				  &m.opts.call_timeout))
		return ES_USAGE;
	if (cli_env_whole("AGENT_MAX_OUTPUT", 64, 1000000000, &o.maxout) ||
	    cli_env_whole("AGENT_MCP_MAX_PROCS", 0, 1000000,
			  &m.opts.max_procs) ||
	    cli_size("AGENT_MCP_MAX_MEMORY", getenv("AGENT_MCP_MAX_MEMORY"),
		     &m.opts.max_memory))
		return ES_USAGE;
	while ((c = getopt_long(argc, argv, ":C:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'C':
			o.dir = optarg;
			break;
		case OPT_CONFIG:
			if (o.nfiles == (int)(sizeof o.files / sizeof *o.files))
				return cli_usage_error("too many --mcp-config");
			o.files[o.nfiles++] = optarg;
			break;
		case OPT_NOUSER:
			o.no_user = 1;
			break;
		case OPT_TRUST:
			o.trusting = 1;
			o.trust = optarg;
			break;
		case OPT_SCHEMA:
			o.schema = 1;
			break;
		case OPT_SERVE:
			o.serve = optarg;
			break;
		case OPT_WATCH:
			if (cli_whole("--watch", optarg, 1, 4194304, &o.watch))
				return ES_USAGE;
			break;
		case OPT_TIMEOUT:
			if (cli_number("--timeout", optarg, 0.001, 1e6,
				       &m.opts.call_timeout))
				return ES_USAGE;
			break;
		case OPT_MAXTIMEOUT:
			if (cli_number("--max-timeout", optarg, 0.001, 1e6,
				       &m.opts.max_timeout))
				return ES_USAGE;
			break;
		case OPT_START:
			if (cli_number("--start-timeout", optarg, 0.001, 1e6,
				       &m.opts.start_timeout))
				return ES_USAGE;
			break;
		case OPT_MAXOUT:
			if (cli_whole("--max-output", optarg, 64, 1000000000,
				      &o.maxout))
				return ES_USAGE;
			break;
		case OPT_RESTARTS:
			if (cli_whole("--max-restarts", optarg, 0, 1000,
				      &o.restarts))
				return ES_USAGE;
			break;
		case OPT_SANDBOX:
			o.mode = optarg;
			break;
		case OPT_CAFILE:
			m.opts.cafile = optarg;
			break;
		case OPT_MAXPROCS:
			if (cli_whole("--max-procs", optarg, 0, 1000000,
				      &m.opts.max_procs))
				return ES_USAGE;
			break;
		case OPT_MAXMEM:
			if (cli_size("--max-memory", optarg, &m.opts.max_memory))
				return ES_USAGE;
			break;
		case 'v':
			m.opts.verbose = 1;
			break;
		case CLI_OPT_VERSION:
			return cli_version();
		case 'h':
			fputs(usage, stdout);
			return cli_finish(ES_OK);
		default:
			return cli_bad_option(argv, c);
		}
	}
	/* --trust FILE as two words, as hook-perm takes it */
	if (o.trusting && !o.trust && optind < argc)
		o.trust = argv[optind++];
	if (optind < argc)
		return cli_usage_error("unexpected argument '%s'", argv[optind]);
	if ((o.trusting && (o.schema || o.serve)) || (o.schema && o.serve))
		return cli_usage_error("--trust, --schema and --serve go alone");
	if (o.watch && !o.serve)
		return cli_usage_error("--watch goes with --serve");
	if (!o.mode || !*o.mode)
		o.mode = "workspace-write";
	if (sandbox_mode_parse(o.mode) < 0)
		return cli_usage_error("unknown sandbox mode '%s' (use "
				       "workspace-write, read-only or off)",
				       o.mode);
	if (!o.dir || !*o.dir)
		o.dir = ".";
	if (!realpath(o.dir, workdir)) {
		cli_warn("cannot use '%s': %s", o.dir, strerror(errno));
		return ES_IO;
	}
	m.opts.max_output = (size_t)o.maxout;
	m.opts.max_restarts = (int)o.restarts;
	m.opts.workdir = workdir;
	m.opts.interrupted = &stop;
	m.opts.note = on_note;
	if (m.opts.max_timeout < m.opts.call_timeout)
		m.opts.max_timeout = m.opts.call_timeout;
	if (o.trusting) {
		rc = trust(&m, workdir, o.trust);
		mcp_free(&m);
		return cli_finish(rc);
	}
	rc = load(&m, &o, workdir);
	if (rc != ES_OK) {
		mcp_free(&m);
		return rc;
	}
	sandbox_setup_for(&m, &sb, o.mode, workdir);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal; /* no SA_RESTART: a blocked read returns */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (o.serve) {
		rc = serve(&m, o.serve, (pid_t)o.watch);
		mcp_free(&m);
		if (m.opts.sandbox)
			sandbox_free(&sb);
		return rc;
	}
	mcp_start(&m);
	if (o.schema) {
		cJSON *s = mcp_schema(&m);
		char *text = s ? cJSON_PrintUnformatted(s) : NULL;

		cJSON_Delete(s);
		rc = !text ? ES_IO : cli_put_line(text, strlen(text), 1) < 0
			? ES_IO : ES_OK;
		if (!text)
			cli_warn("out of memory");
		free(text);
	} else
		rc = filter(&m);
	mcp_free(&m);
	if (m.opts.sandbox)
		sandbox_free(&sb);
	return cli_finish(rc);
}
