/* mcp.c: a client of Model Context Protocol servers over stdio (JSON-RPC
 * 2.0, one message a line): their start, the lifecycle, tools/list and
 * tools/call, and what a call's result becomes for the model.  See
 * mcp-bridge(1). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "priv.h"

/* The versions of the protocol spoken, the newest first: initialize asks
 * for the first; a server may answer with any of them. */
const char *const mcp_versions[] = { "2025-06-18", "2025-03-26",
				     "2024-11-05", NULL };

#define MCP_MAX_PAGES 100    /* tools/list pages of one server */
#define MCP_MAX_TOOLS 1000   /* tools of one server */
#define MCP_TAIL 2048        /* bytes of a server's stderr kept */

enum { S_DOWN = 0, S_UP, S_FAILED };

struct mcp_server {
	char *name;
	char **argv;          /* command and args */
	char **envset;        /* "NAME=value" of the configuration */
	int sandbox, network;
	char *source;         /* the configuration file */
	int state;            /* S_* */
	pid_t pid;
	pid_t pgid;           /* its process group (the keepers' too) */
	int in, out, err;     /* its stdin (ours to write), stdout, stderr */
	struct buf rbuf;      /* bytes of stdout not yet a whole line */
	char errtail[MCP_TAIL]; /* the end of its stderr, a ring */
	size_t errpos, errlen;
	long next_id;
	int restarts;
	int dead;             /* it broke a limit: not started again */
	struct proc_limits limits; /* its processes' (stdio) */
	int list_changed;     /* notifications/tools/list_changed came */
	char version[16];     /* negotiated */
	char *url;            /* Streamable HTTP: the endpoint, else NULL */
	char **headers;       /* its configured headers, "Name: value" */
	char *session;        /* its Mcp-Session-Id, once given */
	struct http *http;    /* the connection */
	int busy;             /* a POST's answer is being read on it */
	cJSON *tools;         /* its tools (MCP's shape), or NULL */
	char why[512];        /* why it is down */
};

static void
note(const struct mcp *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
note(const struct mcp *m, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	if (!m->opts.note)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	redact(text, (const char *const *)m->secrets);
	m->opts.note(m->opts.note_ctx, text);
}

void
mcp_init(struct mcp *m)
{
	memset(m, 0, sizeof *m);
	m->opts.start_timeout = 30;
	m->opts.call_timeout = 120;
	m->opts.max_timeout = 600;
	m->opts.max_output = 30000;
	m->opts.max_message = 16u << 20;
	m->opts.max_restarts = 3;
	m->opts.max_procs = 512;
	m->opts.max_memory = 4LL << 30;
}

static void
strv_free(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Adds a secret (a value of the configuration's env or headers): kept out
 * of every text we give. */
static int
add_secret(struct mcp *m, const char *s)
{
	char **v;

	if (strlen(s) < 4)
		return 0;
	v = realloc(m->secrets, (m->nsecrets + 2) * sizeof *v);
	if (!v)
		return -1;
	m->secrets = v;
	if (!(v[m->nsecrets] = strdup(s)))
		return -1;
	v[++m->nsecrets] = NULL;
	return 0;
}

static int
name_ok(const char *s, size_t max)
{
	size_t i, n = strlen(s);

	if (!n || n > max)
		return 0;
	for (i = 0; i < n; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
		    !(s[i] >= '0' && s[i] <= '9') && s[i] != '_' && s[i] != '-')
			return 0;
	return 1;
}

static struct mcp_server *
find_server(const struct mcp *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!strcmp(m->servers[i]->name, name))
			return m->servers[i];
	return NULL;
}

static void
server_free(struct mcp_server *s)
{
	if (!s)
		return;
	free(s->name);
	strv_free(s->argv);
	strv_free(s->envset);
	free(s->url);
	strv_free(s->headers);
	free(s->session);
	if (s->http)
		http_free(s->http);
	proc_limits_free(&s->limits);
	free(s->source);
	buf_free(&s->rbuf);
	cJSON_Delete(s->tools);
	free(s);
}

/* The members of obj (a server's "headers" or "env") as NAME SEP VALUE
 * into out (room for them all and the NULL), each value a secret:
 * redacted wherever it shows.  0; 1 with *bad the member that is not a
 * name of at most max letters, digits, _ and - with a string (one_line:
 * a string of one line); -1 out of memory. */
static int
secret_pairs(struct mcp *m, const cJSON *obj, const char *sep, size_t max,
	     int one_line, char **out, const char **bad)
{
	const cJSON *v;
	size_t i = 0;

	cJSON_ArrayForEach(v, obj) {
		if (!cJSON_IsString(v) || !name_ok(v->string, max) ||
		    (one_line && strpbrk(v->valuestring, "\r\n"))) {
			*bad = v->string;
			return 1;
		}
		if (asprintf(&out[i], "%s%s%s", v->string, sep,
			     v->valuestring) < 0) {
			out[i] = NULL;
			return -1;
		}
		i++;
		if (add_secret(m, v->valuestring) < 0)
			return -1;
	}
	return 0;
}

/* Is url one a Streamable HTTP server may have: http:// or https://, a
 * host, no user name or password (they would show in messages)? */
static int
url_ok(const char *url)
{
	const char *a, *end;

	if (!strncasecmp(url, "http://", 7))
		a = url + 7;
	else if (!strncasecmp(url, "https://", 8))
		a = url + 8;
	else
		return 0;
	end = a + strcspn(a, "/?#");
	return end > a && !memchr(a, '@', (size_t)(end - a));
}

/* A Streamable HTTP server: {"type": "http", "url", "headers"}; the
 * values of headers are secrets. */
static int
parse_http(struct mcp *m, const char *file, const cJSON *def,
	   struct mcp_server **out, struct ah_error *err)
{
	const char *name = def->string;
	const cJSON *url = cJSON_GetObjectItemCaseSensitive(def, "url");
	const cJSON *hd = cJSON_GetObjectItemCaseSensitive(def, "headers");
	const cJSON *v;
	const char *bad = NULL;
	struct mcp_server *s;
	int rc;

	cJSON_ArrayForEach(v, def)
		if (strcmp(v->string, "type") && strcmp(v->string, "url") &&
		    strcmp(v->string, "headers"))
			return ah_fail(err, AH_EFORMAT, "'%s': server '%s': "
				       "unknown key '%.100s' (known for http: "
				       "type, url, headers)", file, name,
				       v->string);
	if (!cJSON_IsString(url))
		return ah_fail(err, AH_EFORMAT, "'%s': server '%s': \"url\" "
			       "must be a string", file, name);
	if (!url_ok(url->valuestring))
		return ah_fail(err, AH_EFORMAT, "'%s': server '%s': '%.200s': "
			       "not an http:// or https:// URL without a user "
			       "name (give credentials in \"headers\")", file,
			       name, url->valuestring);
	if (hd && !cJSON_IsObject(hd))
		return ah_fail(err, AH_EFORMAT, "'%s': server '%s': \"headers\" "
			       "must be an object of strings", file, name);
	s = calloc(1, sizeof *s);
	if (!s)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	s->in = s->out = s->err = -1;
	s->rbuf.max = m->opts.max_message;
	s->headers = calloc((size_t)cJSON_GetArraySize(hd) + 1,
			    sizeof *s->headers);
	s->envset = calloc(1, sizeof *s->envset);
	s->argv = calloc(2, sizeof *s->argv);
	if (!s->headers || !s->envset || !s->argv ||
	    !(s->name = strdup(name)) || !(s->source = strdup(file)) ||
	    !(s->url = strdup(url->valuestring)) ||
	    !(s->argv[0] = strdup(url->valuestring)))
		goto nomem;
	rc = secret_pairs(m, hd, ": ", 100, 1, s->headers, &bad);
	if (rc > 0) {
		server_free(s);
		return ah_fail(err, AH_EFORMAT, "'%s': server '%s': header "
			       "'%.100s' must be a name with a one-line string",
			       file, name, bad);
	}
	if (rc < 0)
		goto nomem;
	*out = s;
	return 0;
nomem:
	server_free(s);
	return ah_fail(err, AH_ENOMEM, "out of memory");
}

/* One server of a configuration: ES-style errors name the file and the
 * server.  Only the keys below are known; any other is refused. */
static int
parse_server(struct mcp *m, const char *file, const cJSON *def, int trusted,
	     struct mcp_server **out, struct ah_error *err)
{
	static const char *const keys[] = { "type", "command", "args", "env",
					     "sandbox", "network", NULL };
	static const char *const hkeys[] = { "type", "url", "headers", NULL };
	const char *name = def->string;
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(def, "type");
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(def, "command");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(def, "args");
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(def, "env");
	const cJSON *sb = cJSON_GetObjectItemCaseSensitive(def, "sandbox");
	const cJSON *net = cJSON_GetObjectItemCaseSensitive(def, "network");
	const cJSON *v;
	const char *bad = NULL;
	struct mcp_server *s;
	size_t n, i, k;
	int rc;

	(void)trusted;
	if (!cJSON_IsObject(def))
		return ah_fail(err, AH_EFORMAT, "'%s': server '%s': not an "
			       "object", file, name);
	if (cJSON_IsString(type) && !strcmp(type->valuestring, "http"))
		return parse_http(m, file, def, out, err);
	(void)hkeys;
	cJSON_ArrayForEach(v, def) {
		for (k = 0; keys[k] && strcmp(keys[k], v->string); k++)
			;
		if (!keys[k]) {
			if (!strcmp(v->string, "url") || !strcmp(v->string,
								"headers"))
				return ah_fail(err, AH_EFORMAT, "'%s': server "
					       "'%s': \"url\" and \"headers\" "
					       "go with \"type\": \"http\"",
					       file, name);
			return ah_fail(err, AH_EFORMAT, "'%s': server '%s': "
				       "unknown key '%.100s' (known: type, "
				       "command, args, env, sandbox, network)",
				       file, name, v->string);
		}
	}
	if (type && !(cJSON_IsString(type) &&
		      !strcmp(type->valuestring, "stdio")))
		return ah_fail(err, AH_EFORMAT, "'%s': server '%s': type must "
			       "be \"stdio\" or \"http\"", file, name);
	if (!cJSON_IsString(cmd) || !*cmd->valuestring)
		return ah_fail(err, AH_EFORMAT, "'%s': server '%s': \"command\" "
			       "must be a non-empty string", file, name);
	if (args && !cJSON_IsArray(args))
		return ah_fail(err, AH_EFORMAT, "'%s': server '%s': \"args\" "
			       "must be an array of strings", file, name);
	if (env && !cJSON_IsObject(env))
		return ah_fail(err, AH_EFORMAT, "'%s': server '%s': \"env\" "
			       "must be an object of strings", file, name);
	if ((sb && !cJSON_IsBool(sb)) || (net && !cJSON_IsBool(net)))
		return ah_fail(err, AH_EFORMAT, "'%s': server '%s': \"sandbox\" "
			       "and \"network\" are true or false", file, name);
	s = calloc(1, sizeof *s);
	if (!s)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	s->in = s->out = s->err = -1;
	s->rbuf.max = m->opts.max_message;
	s->sandbox = !cJSON_IsFalse(sb);
	s->network = cJSON_IsTrue(net);
	n = (size_t)cJSON_GetArraySize(args);
	s->argv = calloc(n + 2, sizeof *s->argv);
	k = (size_t)cJSON_GetArraySize(env);
	s->envset = calloc(k + 1, sizeof *s->envset);
	if (!s->argv || !s->envset || !(s->name = strdup(name)) ||
	    !(s->source = strdup(file)) ||
	    !(s->argv[0] = strdup(cmd->valuestring)))
		goto nomem;
	for (i = 0; i < n; i++) {
		v = cJSON_GetArrayItem(args, (int)i);
		if (!cJSON_IsString(v)) {
			server_free(s);
			return ah_fail(err, AH_EFORMAT, "'%s': server '%s': "
				       "\"args\" must be an array of strings",
				       file, name);
		}
		if (!(s->argv[i + 1] = strdup(v->valuestring)))
			goto nomem;
	}
	rc = secret_pairs(m, env, "=", 200, 0, s->envset, &bad);
	if (rc > 0) {
		server_free(s);
		return ah_fail(err, AH_EFORMAT, "'%s': server '%s': \"env\": "
			       "'%.100s' must be a name of letters, digits, _ "
			       "and - with a string", file, name, bad);
	}
	if (rc < 0)
		goto nomem;
	*out = s;
	return 0;
nomem:
	server_free(s);
	return ah_fail(err, AH_ENOMEM, "out of memory");
}

int
mcp_config_add(struct mcp *m, const char *file, const char *text, size_t len,
	       int trusted, struct ah_error *err)
{
	cJSON *root, *servers, *def;
	struct mcp_server *s = NULL, **v, *old;
	const char *dup = NULL;
	size_t i;
	int rc = -1;

	root = json_parse(text, len, NULL);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return ah_fail(err, AH_EFORMAT, "'%s': not a JSON object", file);
	}
	if (json_has_duplicate_keys(root, &dup)) {
		ah_fail(err, AH_EFORMAT, "'%s': the key '%.100s' is given more "
			"than once", file, dup);
		goto out;
	}
	servers = cJSON_GetObjectItemCaseSensitive(root, "mcpServers");
	if (!cJSON_IsObject(servers)) {
		ah_fail(err, AH_EFORMAT, "'%s': no \"mcpServers\" object", file);
		goto out;
	}
	cJSON_ArrayForEach(def, servers) {
		if (!name_ok(def->string, 40) || strstr(def->string, "__")) {
			ah_fail(err, AH_EFORMAT, "'%s': server name '%.100s': "
				"use 1 to 40 letters, digits, _ and -, without "
				"\"__\" (tools are named mcp__SERVER__TOOL)",
				file, def->string);
			goto out;
		}
		if (parse_server(m, file, def, trusted, &s, err) < 0)
			goto out;
		/* a later file overrides an earlier one's server */
		old = find_server(m, s->name);
		if (old) {
			note(m, "server '%s' of '%s' replaces the one of '%s'",
			     s->name, file, old->source);
			for (i = 0; m->servers[i] != old; i++)
				;
			server_free(old);
			m->servers[i] = s;
			continue;
		}
		v = realloc(m->servers, (m->n + 1) * sizeof *v);
		if (!v) {
			server_free(s);
			ah_fail(err, AH_ENOMEM, "out of memory");
			goto out;
		}
		m->servers = v;
		m->servers[m->n++] = s;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

size_t
mcp_count(const struct mcp *m)
{
	return m->n;
}

char *
mcp_describe(const struct mcp *m)
{
	struct buf b = BUF_INIT(0);
	size_t i, k;
	int rc = 0;

	for (i = 0; i < m->n; i++) {
		const struct mcp_server *s = m->servers[i];

		rc |= buf_printf(&b, "%s: runs", s->name);
		for (k = 0; s->argv[k]; k++)
			rc |= buf_printf(&b, " %s", s->argv[k]);
		for (k = 0; s->envset[k]; k++)
			rc |= buf_printf(&b, "%s%.*s", k ? ", " : "; sets ",
					 (int)(strchr(s->envset[k], '=') -
					       s->envset[k]), s->envset[k]);
		rc |= buf_printf(&b, "; %s%s\n", s->sandbox ? "sandboxed"
				 : "NOT sandboxed (\"sandbox\": false): it runs "
				 "with all your rights", s->network
				 ? ", with the network" : "");
	}
	if (rc || (!b.data && buf_putc(&b, 0) < 0)) {
		buf_free(&b);
		return NULL;
	}
	redact(b.data, (const char *const *)m->secrets);
	return buf_detach(&b, NULL);
}

/* --- the process ------------------------------------------------------ */

static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Removes the server's cgroups, once its processes are gone: the keeper
 * in the namespace ends after all the others, and its group (the keepers
 * and the server) is empty when it has. */
static void
limits_free(struct mcp_server *s)
{
	double until = mono_now() + 1;

	if (!s->limits.prepared)
		return;
	while (s->pgid > 0 && kill(-s->pgid, 0) == 0 && mono_now() < until)
		usleep(2000);
	s->pgid = 0;
	proc_limits_free(&s->limits);
}

/* Ends the server: its stdin closed first (the clean way the
 * specification gives), then SIGTERM, then SIGKILL, to its whole
 * process group. */
static void
server_stop(struct mcp_server *s, double grace)
{
	double until;
	int st, i;

	close_fd(&s->in);
	if (s->http) {
		http_free(s->http);
		s->http = NULL;
	}
	free(s->session);
	s->session = NULL;
	if (s->pid > 0) {
		for (i = 0; i < 2; i++) {
			until = mono_now() + grace;
			while (mono_now() < until) {
				if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
					kill(-s->pid, SIGKILL);
					s->pid = 0;
					break;
				}
				usleep(5000);
			}
			if (!s->pid)
				break;
			kill(-s->pid, i ? SIGKILL : SIGTERM);
			kill(s->pid, i ? SIGKILL : SIGTERM);
		}
		if (s->pid) {
			kill(-s->pid, SIGKILL);
			kill(s->pid, SIGKILL);
			waitpid(s->pid, &st, 0);
			s->pid = 0;
		}
	}
	limits_free(s);
	close_fd(&s->out);
	close_fd(&s->err);
	buf_reset(&s->rbuf);
	s->errlen = s->errpos = 0;
}

/* The server goes down: why (printf) is said in calls to it. */
static void
server_fail(const struct mcp *m, struct mcp_server *s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
server_fail(const struct mcp *m, struct mcp_server *s, const char *fmt, ...)
{
	char why[sizeof s->why];
	va_list ap;

	/* s->why may be one of the arguments */
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	memcpy(s->why, why, sizeof why);
	redact(s->why, (const char *const *)m->secrets);
	server_stop(s, 0.2);
	s->state = S_FAILED;
}

/* The environment of a server: the commands' allow-list (no API key),
 * then what its configuration sets. */
static char **
server_env(const struct mcp_server *s, const char *tmp, struct ah_error *err)
{
	char **base = proc_env_build(NULL, 0, err), **env;
	size_t n = 0, k = 0, i, j, len;

	if (!base)
		return NULL;
	while (base[n])
		n++;
	while (s->envset[k])
		k++;
	/* in the sandbox: its temporary directory, and caches in it (npm's
	 * for npx), unless the configuration says otherwise */
	if (tmp) {
		char **b = realloc(base, (n + 4) * sizeof *b);

		if (!b) {
			proc_env_free(base);
			ah_fail(err, AH_ENOMEM, "out of memory");
			return NULL;
		}
		base = b;
		for (i = j = 0; i < n; i++) {
			if (!strncmp(base[i], "TMPDIR=", 7))
				free(base[i]);
			else
				base[j++] = base[i];
		}
		n = j;
		base[n] = NULL;
		if (asprintf(&base[n], "TMPDIR=%s", tmp) < 0 ||
		    asprintf(&base[n + 1], "npm_config_cache=%s/npm", tmp) < 0 ||
		    asprintf(&base[n + 2], "XDG_CACHE_HOME=%s/cache", tmp) < 0) {
			base[n] = NULL;
			proc_env_free(base);
			ah_fail(err, AH_ENOMEM, "out of memory");
			return NULL;
		}
		n += 3;
		base[n] = NULL;
	}
	env = calloc(n + k + 1, sizeof *env);
	if (!env) {
		proc_env_free(base);
		ah_fail(err, AH_ENOMEM, "out of memory");
		return NULL;
	}
	for (i = j = 0; i < n; i++) {
		const char *eq = strchr(base[i], '=');
		size_t q;

		len = eq ? (size_t)(eq - base[i]) : strlen(base[i]);
		for (q = 0; q < k; q++)
			if (!strncmp(s->envset[q], base[i], len) &&
			    s->envset[q][len] == '=')
				break;
		if (q == k)
			env[j++] = base[i];
		else
			free(base[i]);
	}
	for (i = 0; i < k; i++)
		env[j++] = s->envset[i];
	env[j] = NULL;
	free(base); /* its strings are in env now */
	return env;
}

/* Lets into the server's view (sb, the child's copy) what its command
 * needs to start, read-only: the program (found on env's PATH) and each
 * argument that names an existing regular file by its path (a script; a
 * directory, such as a file server's root, is not let in); a file inside
 * a node_modules directory brings that whole directory (the package and
 * its dependencies). */
static int
allow_command(struct sandbox *sb, const struct mcp_server *s, char **env,
	      struct ah_error *err)
{
	char found[PATH_MAX], real[PATH_MAX], *nm;
	const char *path = NULL, *p, *end;
	struct stat st;
	size_t i;
	int k;

	for (i = 0; env[i]; i++)
		if (!strncmp(env[i], "PATH=", 5))
			path = env[i] + 5;
	for (k = 0; s->argv[k]; k++) {
		const char *a = s->argv[k];

		found[0] = '\0';
		if (strchr(a, '/'))
			snprintf(found, sizeof found, "%s", a);
		else if (k == 0)
			for (p = path; p && *p; p = *end ? end + 1 : end) {
				end = strchr(p, ':');
				if (!end)
					end = p + strlen(p);
				snprintf(found, sizeof found, "%.*s/%s",
					 (int)(end - p), p, a);
				if (*p == '/' && access(found, X_OK) == 0)
					break;
				found[0] = '\0';
			}
		if (!found[0] || !realpath(found, real) || stat(real, &st) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		nm = strstr(real, "/node_modules/");
		if (nm)
			nm[13] = '\0';
		if (sandbox_allow(sb, real, 0, err) < 0)
			return -1;
	}
	return 0;
}

/* Ends as a process that waited ended (st): by the same signal, or with
 * its status; 128 + N from a keeper within is signal N. */
static void
exit_as(int st)
{
	int sig = WIFSIGNALED(st) ? WTERMSIG(st)
		: WEXITSTATUS(st) > 128 && WEXITSTATUS(st) < 128 + 65
			? WEXITSTATUS(st) - 128 : 0;

	if (sig && getpid() != 1) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	_exit(sig ? 128 + sig : WEXITSTATUS(st));
}

/* The keepers of a stdio server, and the server.  The child of
 * server_spawn, the keeper: its own process group, killed with us (as
 * each keeper is with its parent), the pipes as the standard streams,
 * the status pipe as fd 3 (closed by exec) and nothing else open; it
 * waits until go ends (the caller has put it into the server's cgroups),
 * enters the sandbox sb (a copy: the server's network setting in it)
 * unless NULL, and starts the second keeper, pid 1 of a new PID
 * namespace (with a /proc of its own in the sandbox), which starts the
 * server, reaps, and ends when the server does: the kernel then kills
 * whatever else is left in the namespace, however it detached.  Where no
 * PID namespace can be had, the keeper is the server's subreaper and
 * kills what is left itself.  The keepers ignore SIGTERM and SIGINT (the
 * group's signals are for the server).  What failed is written to the
 * status pipe. */
static void
child(struct mcp_server *s, struct sandbox *sb, const char *dir, char **env,
      int in, int out, int err, int status, int go)
{
	struct ah_error e = { 0 };
	int ruleset = -1, userns = 0, pidns = 1, st, fd;
	pid_t srv, w;
	long pid;
	char c;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	go = fcntl(go, F_DUPFD_CLOEXEC, 10);
	if (go < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 ||
	    (status != 3 && dup3(status, 3, O_CLOEXEC) < 0) ||
	    dup3(go, 4, O_CLOEXEC) < 0)
		_exit(127);
	close_range(5, ~0U, 0);
	while (read(4, &c, 1) < 0 && errno == EINTR)
		;
	close(4);
	if (dir && chdir(dir) < 0) {
		ah_fail_errno(&e, errno, "cannot change to '%s'", dir);
		goto fail;
	}
	if (sb) {
		sb->network = s->network;
		if (allow_command(sb, s, env, &e) < 0 ||
		    sandbox_setup(sb, NULL, &ruleset, &userns, &e) < 0)
			goto fail;
	}
	pid = syscall(SYS_clone, CLONE_NEWPID | (sb ? CLONE_NEWNS : 0) |
		      SIGCHLD, NULL, NULL, NULL, 0);
	if (pid < 0) {
		pidns = 0;
		prctl(PR_SET_CHILD_SUBREAPER, 1);
	} else if (pid > 0) {
		for (fd = 0; fd <= 3; fd++)
			close(fd);
		if (ruleset >= 0)
			close(ruleset);
		while (waitpid((pid_t)pid, &st, 0) < 0)
			if (errno != EINTR)
				_exit(127);
		exit_as(st);
	} else {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (sb && sandbox_fresh_proc(&e) < 0)
			goto fail;
	}
	srv = fork();
	if (srv < 0) {
		ah_fail_errno(&e, errno, "cannot fork");
		goto fail;
	}
	if (srv == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (s->limits.procs || s->limits.memory)
			proc_limits_set(&s->limits, userns ? 1 + pidns : 0);
		if (sb && sandbox_restrict(sb, ruleset, &e) < 0)
			goto fail;
		execvpe(s->argv[0], s->argv, env);
		ah_fail_errno(&e, errno, "cannot run '%s'", s->argv[0]);
		goto fail;
	}
	for (fd = 0; fd <= 3; fd++)
		close(fd);
	if (ruleset >= 0)
		close(ruleset);
	for (;;) {
		w = waitpid(-1, &st, 0);
		if (w == srv || (w < 0 && errno != EINTR))
			break;
	}
	if (!pidns)
		pr_kill_children(0);
	if (w != srv)
		_exit(127);
	exit_as(st);
fail:
	if (write(3, e.msg, strlen(e.msg)) < 0)
		_exit(127);
	_exit(127);
}

/* The cgroups of the server's processes, made afresh (see
 * proc_limits_prepare); what is weaker than asked is said once. */
static int
limits_prepare(struct mcp *m, struct mcp_server *s, struct ah_error *err)
{
	struct proc_limits *l = &s->limits;

	proc_limits_free(l);
	memset(l, 0, sizeof *l);
	l->procs = m->opts.max_procs;
	l->memory = m->opts.max_memory;
	l->tag = s->name;
	if (!l->procs && !l->memory)
		return 0;
	if (proc_limits_prepare(l, err) < 0)
		return -1;
	if (l->memory && !(l->by_cgroup & PROC_LIMIT_MEMORY) && !s->restarts)
		note(m, "%s: its memory limit is per process (RLIMIT_DATA): "
		     "no memory cgroup of its own can be made here", s->name);
	return 0;
}

static int
server_spawn(struct mcp *m, struct mcp_server *s, struct ah_error *err)
{
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	int st[2] = { -1, -1 }, go[2] = { -1, -1 }, rc = -1;
	struct sandbox *sb = s->sandbox ? m->opts.sandbox : NULL;
	char **env, msg[sizeof err->msg];
	ssize_t got;
	pid_t pid;

	if (s->sandbox && !sb && !m->opts.sandbox_off)
		return ah_fail(err, AH_EIO, "it asks for the sandbox, which "
			       "cannot be had here (%s); \"sandbox\": false "
			       "in its configuration runs it unconfined",
			       m->opts.sandbox_error ? m->opts.sandbox_error
						     : "none was set up");
	if (sb && sandbox_prepare(sb, err) < 0)
		return -1;
	if (limits_prepare(m, s, err) < 0)
		return -1;
	env = server_env(s, sb ? sb->tmpdir : NULL, err);
	if (!env)
		return -1;
	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 ||
	    pipe2(perr, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0 ||
	    pipe2(go, O_CLOEXEC) < 0) {
		ah_fail_errno(err, errno, "cannot make pipes");
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		ah_fail_errno(err, errno, "cannot fork");
		goto out;
	}
	if (pid == 0)
		child(s, sb, m->opts.workdir, env, pin[0], pout[1], perr[1],
		      st[1], go[0]);
	setpgid(pid, pid); /* both sides: no race with a kill */
	close_fd(&st[1]);
	/* in its cgroups (counting it and the keeper in the namespace)
	 * before it starts anything */
	if (cg_join(&s->limits, pid, "MCP server", err) < 0 ||
	    ((s->limits.by_cgroup & PROC_LIMIT_PROCS) &&
	     cg_pids_max(&s->limits, 1) < 0 &&
	     ah_fail_errno(err, errno, "cannot set the process limit in "
			   "'%s'", s->limits.cg_pids) < 0)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		goto out;
	}
	close_fd(&go[1]);
	got = read(st[0], msg, sizeof msg - 1);
	while (got < 0 && errno == EINTR)
		got = read(st[0], msg, sizeof msg - 1);
	if (got > 0) {
		msg[got] = '\0';
		waitpid(pid, NULL, 0);
		ah_fail(err, AH_EIO, "%s%s", sb ? "in the sandbox: " : "", msg);
		goto out;
	}
	s->pid = s->pgid = pid;
	s->in = pin[1];
	s->out = pout[0];
	s->err = perr[0];
	pin[1] = pout[0] = perr[0] = -1;
	fcntl(s->in, F_SETFL, O_NONBLOCK);
	fcntl(s->out, F_SETFL, O_NONBLOCK);
	fcntl(s->err, F_SETFL, O_NONBLOCK);
	s->state = S_UP;
	rc = 0;
out:
	close_fd(&pin[0]);
	close_fd(&pin[1]);
	close_fd(&pout[0]);
	close_fd(&pout[1]);
	close_fd(&perr[0]);
	close_fd(&perr[1]);
	close_fd(&st[0]);
	close_fd(&st[1]);
	close_fd(&go[0]);
	close_fd(&go[1]);
	if (rc < 0)
		proc_limits_free(&s->limits);
	/* env's strings are base's (ours to free) and envset's (kept) */
	{
		size_t i, k = 0;

		while (s->envset[k])
			k++;
		for (i = 0; env[i]; i++) {
			size_t q;

			for (q = 0; q < k && env[i] != s->envset[q]; q++)
				;
			if (q == k)
				free(env[i]);
		}
		free(env);
	}
	return rc;
}

/* The end of the server's stderr, for messages: printable, one line. */
static void
err_tail(const struct mcp_server *s, char *out, size_t size)
{
	size_t i, j = 0, n = s->errlen, start;

	start = n < MCP_TAIL ? 0 : s->errpos;
	if (n > MCP_TAIL)
		n = MCP_TAIL;
	/* the last 300 bytes */
	i = n > 300 ? n - 300 : 0;
	for (; i < n && j + 1 < size; i++) {
		char c = s->errtail[(start + i) % MCP_TAIL];

		out[j++] = (c == '\n' || c == '\t') ? ' '
			 : ((unsigned char)c < 32 || c == 127) ? '?' : c;
	}
	while (j && out[j - 1] == ' ')
		j--;
	out[j] = '\0';
}

static void
read_err(struct mcp_server *s)
{
	char b[4096];
	ssize_t n, i;

	while (s->err >= 0 && (n = read(s->err, b, sizeof b)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				close_fd(&s->err);
			return;
		}
		for (i = 0; i < n; i++) {
			s->errtail[s->errpos] = b[i];
			s->errpos = (s->errpos + 1) % MCP_TAIL;
		}
		s->errlen += (size_t)n;
	}
	if (s->err >= 0 && n == 0)
		close_fd(&s->err);
}

/* Why the server ended, when it has: "exited with status 3". */
static void
exit_reason(struct mcp_server *s, char *out, size_t size)
{
	char tail[320];
	int st;

	read_err(s);
	err_tail(s, tail, sizeof tail);
	if (s->pid > 0 && waitpid(s->pid, &st, 0) == s->pid) {
		long long oom, procs;
		char lim[160] = "";

		s->pid = 0;
		oom = cg_oom_kills(&s->limits);
		procs = cg_pids_hits(&s->limits);
		if (oom > 0) {
			snprintf(lim, sizeof lim, " (over its memory limit of "
				 "%lld bytes; not started again this session)",
				 s->limits.memory);
			s->dead = 1;
		} else if (procs > 0) {
			snprintf(lim, sizeof lim, " (it reached its limit of "
				 "%ld processes)", s->limits.procs);
		}
		if (WIFEXITED(st))
			snprintf(out, size, "exited with status %d%s%s%s",
				 WEXITSTATUS(st), lim, *tail ? "; it said: " : "",
				 tail);
		else
			snprintf(out, size, "was killed by signal %d%s%s%s",
				 WTERMSIG(st), lim, *tail ? "; it said: " : "",
				 tail);
	} else
		snprintf(out, size, "closed its output%s%s",
			 *tail ? "; it said: " : "", tail);
}

/* --- JSON-RPC ---------------------------------------------------------- */

/* Writes a message: over stdio, a line within the deadline, what the
 * server writes meanwhile read into rbuf, so that neither side waits for
 * the other; over HTTP, a POST (http_send).  0, or -1 with the server
 * failed. */
static int stdio_send(struct mcp *m, struct mcp_server *s, const cJSON *msg,
		      double deadline);
struct wait;
static int http_send(struct mcp *m, struct mcp_server *s, const cJSON *msg,
		     struct wait *w, double deadline);

static int
send_msg(struct mcp *m, struct mcp_server *s, const cJSON *msg,
	 double deadline)
{
	if (s->url)
		return http_send(m, s, msg, NULL, deadline) == 0 ? 0 : -1;
	return stdio_send(m, s, msg, deadline);
}

static int
stdio_send(struct mcp *m, struct mcp_server *s, const cJSON *msg,
	   double deadline)
{
	char *text = cJSON_PrintUnformatted(msg), b[65536];
	size_t len, off = 0;
	struct pollfd p[2];
	ssize_t w;
	int rc = -1, t;

	if (!text) {
		server_fail(m, s, "out of memory");
		return -1;
	}
	len = strlen(text);
	text[len] = '\n'; /* the NUL's place, written as len + 1 bytes */
	while (off < len + 1) {
		w = write(s->in, text + off, len + 1 - off);
		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN) {
			char why[400];

			exit_reason(s, why, sizeof why);
			server_fail(m, s, "it stopped reading its input (%s)",
				    why);
			goto out;
		}
		t = (int)((deadline - mono_now()) * 1000);
		if (t <= 0) {
			server_fail(m, s, "it did not read its input for the "
				    "timeout");
			goto out;
		}
		p[0].fd = s->in;
		p[0].events = POLLOUT;
		p[1].fd = s->out;
		p[1].events = POLLIN;
		if (poll(p, 2, t) < 0 && errno != EINTR) {
			server_fail(m, s, "poll: %s", strerror(errno));
			goto out;
		}
		if (p[1].revents & POLLIN) {
			ssize_t n = read(s->out, b, sizeof b);

			if (n > 0 && buf_append(&s->rbuf, b, (size_t)n) < 0) {
				server_fail(m, s, "it sent a message over %zu "
					    "bytes", s->rbuf.max);
				goto out;
			}
		}
	}
	rc = 0;
out:
	text[len] = '\0';
	free(text);
	return rc;
}

static cJSON *
request(long id, const char *method, cJSON *params)
{
	cJSON *r = cJSON_CreateObject();

	if (!r || !cJSON_AddStringToObject(r, "jsonrpc", "2.0") ||
	    (id >= 0 && !cJSON_AddNumberToObject(r, "id", (double)id)) ||
	    !cJSON_AddStringToObject(r, "method", method) ||
	    (params && !cJSON_AddItemToObject(r, "params", params))) {
		cJSON_Delete(r);
		cJSON_Delete(params);
		return NULL;
	}
	return r;
}

/* A request of the server's: ping is answered; anything else (sampling,
 * elicitation, roots: capabilities we do not declare) is refused. */
static void
answer_server(struct mcp *m, struct mcp_server *s, const cJSON *msg,
	      double deadline)
{
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	cJSON *r = cJSON_CreateObject(), *e;
	int ping = cJSON_IsString(method) && !strcmp(method->valuestring,
						      "ping");

	if (!r || !cJSON_AddStringToObject(r, "jsonrpc", "2.0") ||
	    !cJSON_AddItemToObject(r, "id", cJSON_Duplicate(
		    cJSON_GetObjectItemCaseSensitive(msg, "id"), 1)))
		goto out;
	if (ping) {
		if (!cJSON_AddObjectToObject(r, "result"))
			goto out;
	} else {
		e = cJSON_AddObjectToObject(r, "error");
		if (!e || !cJSON_AddNumberToObject(e, "code", -32601) ||
		    !cJSON_AddStringToObject(e, "message", "Method not found: "
					     "this client offers no sampling, "
					     "elicitation or roots"))
			goto out;
		note(m, "%s: refused its request '%.80s'", s->name,
		     cJSON_IsString(method) ? method->valuestring : "?");
	}
	send_msg(m, s, r, deadline);
out:
	cJSON_Delete(r);
}

/* What a call waits for, and what came meanwhile. */
struct wait {
	long id;             /* the response wanted */
	cJSON *progress;     /* its progress token, or NULL */
	double deadline;     /* reset by progress, up to hard */
	double hard;
	double timeout;
	int client;          /* a descriptor whose hangup cancels; -1 */
	long stray;          /* a response to another id, or -1 */
	cJSON *response;     /* the one wanted */
	int cancelled;       /* by the client, or a signal */
	int rc;              /* over HTTP: how the exchange ended (W_*) */
};

static void
on_notification(struct mcp *m, struct mcp_server *s, const cJSON *msg,
		struct wait *w)
{
	const char *method = cJSON_GetObjectItemCaseSensitive(msg,
							      "method")->valuestring;
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");

	if (!strcmp(method, "notifications/tools/list_changed")) {
		s->list_changed = 1;
	} else if (!strcmp(method, "notifications/progress") && w &&
		   w->progress) {
		const cJSON *tok = cJSON_GetObjectItemCaseSensitive(params,
								    "progressToken");
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(params,
								  "progress");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(params, "total");
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(params,
								     "message");

		if (!tok || !cJSON_Compare(tok, w->progress, 1))
			return;
		/* progress keeps a long call going, up to the hard bound */
		w->deadline = mono_now() + w->timeout;
		if (w->deadline > w->hard)
			w->deadline = w->hard;
		if (m->opts.verbose)
			note(m, "%s: progress %g%s%.0f%s%.200s", s->name,
			     cJSON_IsNumber(p) ? p->valuedouble : 0,
			     cJSON_IsNumber(t) ? "/" : "",
			     cJSON_IsNumber(t) ? t->valuedouble : 0,
			     cJSON_IsString(text) ? " " : "",
			     cJSON_IsString(text) ? text->valuestring : "");
	} else if (!strcmp(method, "notifications/message") && m->opts.verbose) {
		char *d = cJSON_PrintUnformatted(
			cJSON_GetObjectItemCaseSensitive(params, "data"));

		note(m, "%s: log: %.300s", s->name, d ? d : "?");
		free(d);
	}
}

/* Handles one line from the server.  1 when it was the response waited
 * for (w->response set), 0 otherwise, -1 when the server failed. */
static int
on_line(struct mcp *m, struct mcp_server *s, const char *line, size_t n,
	struct wait *w)
{
	const cJSON *id, *method;
	cJSON *msg;

	if (jsonl_blank(line, n))
		return 0;
	msg = json_parse(line, n, NULL);
	if (!cJSON_IsObject(msg)) {
		cJSON_Delete(msg);
		server_fail(m, s, "it sent a line that is not a JSON-RPC "
			    "message: %.80s", line);
		return -1;
	}
	id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	if (cJSON_IsString(method)) {
		if (id)
			answer_server(m, s, msg, w ? w->deadline
						   : mono_now() + 5);
		else
			on_notification(m, s, msg, w);
		cJSON_Delete(msg);
		return s->state == S_UP ? 0 : -1;
	}
	if (w && cJSON_IsNumber(id) && id->valuedouble == (double)w->id &&
	    (cJSON_GetObjectItemCaseSensitive(msg, "result") ||
	     cJSON_GetObjectItemCaseSensitive(msg, "error"))) {
		w->response = msg;
		return 1;
	}
	/* an answer to nothing we wait for (a call given up) */
	if (w)
		w->stray = cJSON_IsNumber(id) ? (long)id->valuedouble : -2;
	cJSON_Delete(msg);
	return 0;
}

/* Takes the whole lines of rbuf. */
static int
take_lines(struct mcp *m, struct mcp_server *s, struct wait *w)
{
	char *nl;
	size_t off = 0;
	int rc = 0;

	while (rc == 0 && s->state == S_UP && off < s->rbuf.len &&
	       (nl = memchr(s->rbuf.data + off, '\n', s->rbuf.len - off))) {
		*nl = '\0';
		rc = on_line(m, s, s->rbuf.data + off,
			     (size_t)(nl - (s->rbuf.data + off)), w);
		off = (size_t)(nl - s->rbuf.data) + 1;
	}
	if (s->state == S_UP && off) {
		memmove(s->rbuf.data, s->rbuf.data + off, s->rbuf.len - off);
		s->rbuf.len -= off;
		s->rbuf.data[s->rbuf.len] = '\0';
	}
	return rc;
}

enum { W_DONE = 0, W_TIMEOUT = 1, W_CANCELLED = 2, W_FAILED = -1 };

/* Reads the server until the response w waits for comes (W_DONE), the
 * deadline passes, the client hangs up or a signal comes (cancelled),
 * or the server fails. */
static int
wait_for(struct mcp *m, struct mcp_server *s, struct wait *w)
{
	char b[65536];
	struct pollfd p[3];
	ssize_t n;
	int t, np, rc;

	w->stray = -1;
	for (;;) {
		rc = take_lines(m, s, w);
		if (rc == 1)
			return W_DONE;
		if (rc < 0 || s->state != S_UP)
			return W_FAILED;
		if (m->opts.interrupted && *m->opts.interrupted) {
			w->cancelled = 1;
			return W_CANCELLED;
		}
		t = (int)((w->deadline - mono_now()) * 1000);
		if (t <= 0)
			return W_TIMEOUT;
		p[0].fd = s->out;
		p[0].events = POLLIN;
		p[1].fd = s->err;
		p[1].events = POLLIN;
		np = 2;
		if (w->client >= 0) {
			p[2].fd = w->client;
			p[2].events = POLLIN;
			np = 3;
		}
		if (poll(p, (nfds_t)np, t) < 0) {
			if (errno == EINTR)
				continue;
			server_fail(m, s, "poll: %s", strerror(errno));
			return W_FAILED;
		}
		if (np == 3 && p[2].revents) {
			/* the client sends nothing while it waits: any byte,
			 * or its end, cancels */
			w->cancelled = 1;
			return W_CANCELLED;
		}
		if (p[1].revents)
			read_err(s);
		if (!p[0].revents)
			continue;
		n = read(s->out, b, sizeof b);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			char why[400];

			exit_reason(s, why, sizeof why);
			server_fail(m, s, "it %s", why);
			return W_FAILED;
		}
		/* the bound holds per message: a line can be that long */
		if (buf_append(&s->rbuf, b, (size_t)n) < 0) {
			server_fail(m, s, "it sent a message over %zu bytes "
				    "(the bound of one message)", s->rbuf.max);
			return W_FAILED;
		}
	}
}

/* --- Streamable HTTP ---------------------------------------------------- */

/* One POST and its answer, as it comes. */
struct hx {
	struct mcp *m;
	struct mcp_server *s;
	struct wait *w;
	double deadline;
	int sse, found, failed, stop; /* stop: W_TIMEOUT or W_CANCELLED */
	struct buf body;   /* a JSON answer, or the SSE line being read */
	struct buf data;   /* an SSE event's data */
};

static void
hx_header(void *ctx, const char *line, size_t len)
{
	struct hx *x = ctx;
	const char *v;
	size_t n;

	if (len > 15 && !strncasecmp(line, "Mcp-Session-Id:", 15)) {
		for (v = line + 15; v < line + len && *v == ' '; v++)
			;
		n = (size_t)(line + len - v);
		if (n && n < 200) {
			free(x->s->session);
			x->s->session = strndup(v, n);
		}
	} else if (len > 13 && !strncasecmp(line, "Content-Type:", 13) &&
		   memmem(line, len, "text/event-stream", 17))
		x->sse = 1;
}

/* A JSON-RPC message that came: the response waited for stops it. */
static int
hx_message(struct hx *x, const char *p, size_t n)
{
	int rc;

	if (!x->w) {
		/* no answer waited for: what comes is dropped */
		return 0;
	}
	rc = on_line(x->m, x->s, p, n, x->w);
	if (rc == 1)
		x->found = 1;
	if (rc < 0)
		x->failed = 1;
	return rc != 0;
}

static int
hx_body(void *ctx, const char *p, size_t len)
{
	struct hx *x = ctx;
	char *nl;
	size_t off, k;

	if (buf_append(&x->body, p, len) < 0) {
		server_fail(x->m, x->s, "it sent a message over %zu bytes",
			    x->body.max);
		x->failed = 1;
		return 1;
	}
	if (!x->sse)
		return 0;
	/* text/event-stream: the data lines of each event, then a blank
	 * line dispatches it */
	off = 0;
	while ((nl = memchr(x->body.data + off, '\n', x->body.len - off))) {
		char *line = x->body.data + off;

		k = (size_t)(nl - line);
		if (k && line[k - 1] == '\r')
			k--;
		off = (size_t)(nl - x->body.data) + 1;
		if (k == 0) {
			if (x->data.len && hx_message(x, x->data.data,
						      x->data.len))
				return 1;
			buf_reset(&x->data);
		} else if (k >= 5 && !strncmp(line, "data:", 5)) {
			size_t skip = k > 5 && line[5] == ' ' ? 6 : 5;

			if ((x->data.len && buf_putc(&x->data, '\n') < 0) ||
			    buf_append(&x->data, line + skip, k - skip) < 0) {
				server_fail(x->m, x->s, "it sent an event over "
					    "%zu bytes", x->data.max);
				x->failed = 1;
				return 1;
			}
		}
	}
	memmove(x->body.data, x->body.data + off, x->body.len - off);
	x->body.len -= off;
	return 0;
}

static int
hx_tick(void *ctx, long long sent)
{
	struct hx *x = ctx;
	struct pollfd p;

	(void)sent;
	if (x->m->opts.interrupted && *x->m->opts.interrupted) {
		x->stop = W_CANCELLED;
		return 1;
	}
	if (x->w && x->w->client >= 0) {
		p.fd = x->w->client;
		p.events = POLLIN;
		if (poll(&p, 1, 0) > 0) {
			x->stop = W_CANCELLED;
			return 1;
		}
	}
	if (mono_now() > (x->w ? x->w->deadline : x->deadline)) {
		x->stop = W_TIMEOUT;
		return 1;
	}
	return 0;
}

/* POSTs text over h with the headers of every message (the session's,
 * the protocol version when given, the configured ones), the answer
 * read into x as it comes.  http_post's result. */
static int
hx_post(struct hx *x, struct http *h, const char *text, const char *version,
	long *status, char *errbuf, size_t size)
{
	struct mcp_server *s = x->s;
	struct http_io io = { 0 };
	const char *hdr[40];
	char *sid = NULL, *ver = NULL;
	size_t n = 0, i;
	int r;

	hdr[n++] = "Content-Type: application/json";
	hdr[n++] = "Accept: application/json, text/event-stream";
	if (s->session && asprintf(&sid, "Mcp-Session-Id: %s", s->session) >= 0)
		hdr[n++] = sid;
	else
		sid = NULL;
	if (version && version[0] && asprintf(&ver, "MCP-Protocol-Version: %s",
					      version) >= 0)
		hdr[n++] = ver;
	else
		ver = NULL;
	for (i = 0; s->headers[i] && n < sizeof hdr / sizeof *hdr - 1; i++)
		hdr[n++] = s->headers[i];
	hdr[n] = NULL;
	io.header = hx_header;
	io.body = hx_body;
	io.tick = hx_tick;
	io.ctx = x;
	io.secrets = (const char *const *)x->m->secrets;
	r = http_post(h, hdr, text, strlen(text), &io, status, errbuf, size);
	free(sid);
	free(ver);
	return r;
}

/* POSTs msg; with w, reads the answer until the response w waits for.
 * W_DONE, W_TIMEOUT, W_CANCELLED or W_FAILED (the server failed). */
static int
http_send(struct mcp *m, struct mcp_server *s, const cJSON *msg,
	  struct wait *w, double deadline)
{
	struct hx x = { m, s, w, deadline, 0, 0, 0, 0,
			BUF_INIT(m->opts.max_message),
			BUF_INIT(m->opts.max_message) };
	struct ah_error err = { 0 };
	char *text = cJSON_PrintUnformatted(msg);
	char errbuf[512];
	long status;
	int r, rc = W_FAILED;

	if (!text) {
		server_fail(m, s, "out of memory");
		return W_FAILED;
	}
	/* a message sent while an answer streams in (an answer to the
	 * server's ping) goes on a connection of its own, without
	 * MCP-Protocol-Version */
	if (s->busy) {
		struct http *h = http_open(s->url, 10, m->opts.cafile, &err);

		if (!h)
			goto out;
		x.w = NULL;
		r = hx_post(&x, h, text, NULL, &status, errbuf, sizeof errbuf);
		http_free(h);
		rc = r == 0 && status >= 200 && status <= 299 ? W_DONE
							       : W_FAILED;
		goto out;
	}
	if (!s->http && !(s->http = http_open(s->url, 10, m->opts.cafile, &err))) {
		server_fail(m, s, "%s", err.msg);
		goto out;
	}
	s->busy = 1;
	r = hx_post(&x, s->http, text, s->version, &status, errbuf,
		    sizeof errbuf);
	s->busy = 0;
	if (x.failed)
		goto out;
	if (r == HTTP_STOPPED && x.found) {
		/* the rest of the stream is not read: a new connection next */
		http_free(s->http);
		s->http = NULL;
		rc = W_DONE;
		goto out;
	}
	if (r == HTTP_STOPPED) {
		http_free(s->http);
		s->http = NULL;
		rc = x.stop ? x.stop : W_FAILED;
		goto out;
	}
	if (r < 0) {
		server_fail(m, s, "%s", errbuf);
		goto out;
	}
	if (status == 404 && s->session) {
		server_fail(m, s, "its session ended (404)");
		goto out;
	}
	if (status < 200 || status > 299) {
		server_fail(m, s, "it answered HTTP %ld%s%.200s", status,
			    x.body.len ? ": " : "", x.body.len ? x.body.data : "");
		goto out;
	}
	if (!w) {
		rc = W_DONE;
		goto out;
	}
	if (!x.sse && x.body.len && hx_message(&x, x.body.data, x.body.len) &&
	    x.failed)
		goto out;
	if (x.found) {
		rc = W_DONE;
		goto out;
	}
	server_fail(m, s, "its answer (HTTP %ld) held no response to the "
		    "request%s", status, w->stray != -1 ? " (one to another "
		    "id)" : "");
out:
	free(text);
	buf_free(&x.body);
	buf_free(&x.data);
	return rc;
}

static void
cancel(struct mcp *m, struct mcp_server *s, long id, const char *reason)
{
	cJSON *params = cJSON_CreateObject(), *r;

	if (!params || !cJSON_AddNumberToObject(params, "requestId", (double)id) ||
	    !cJSON_AddStringToObject(params, "reason", reason)) {
		cJSON_Delete(params);
		return;
	}
	r = request(-1, "notifications/cancelled", params);
	if (r)
		send_msg(m, s, r, mono_now() + 1);
	cJSON_Delete(r);
}

/* One request and its response: W_DONE with *result (the caller frees)
 * the response's result or error object, *is_error set for an error. */
static int
rpc(struct mcp *m, struct mcp_server *s, const char *method, cJSON *params,
    double timeout, int client, cJSON **result, int *is_error)
{
	struct wait w = { 0 };
	long id = ++s->next_id;
	cJSON *r, *meta;
	int rc;

	*result = NULL;
	*is_error = 0;
	w.id = id;
	w.stray = -1;
	w.timeout = timeout;
	w.deadline = mono_now() + timeout;
	w.hard = mono_now() + (m->opts.max_timeout > timeout
				       ? m->opts.max_timeout : timeout);
	w.client = client;
	if (params && !strcmp(method, "tools/call")) {
		/* asks for progress, whose notifications keep it going */
		meta = cJSON_AddObjectToObject(params, "_meta");
		if (!meta || !cJSON_AddNumberToObject(meta, "progressToken",
						      (double)id)) {
			cJSON_Delete(params);
			server_fail(m, s, "out of memory");
			return W_FAILED;
		}
		w.progress = cJSON_GetObjectItemCaseSensitive(meta,
							      "progressToken");
	}
	r = request(id, method, params);
	if (!r) {
		server_fail(m, s, "out of memory");
		return W_FAILED;
	}
	if (s->url)
		w.rc = http_send(m, s, r, &w, w.deadline);
	else if (send_msg(m, s, r, w.deadline) < 0) {
		cJSON_Delete(r);
		return W_FAILED;
	}
	/* the token lives in r */
	rc = s->url ? w.rc : wait_for(m, s, &w);
	cJSON_Delete(r);
	if (rc == W_DONE) {
		cJSON *res = cJSON_DetachItemFromObjectCaseSensitive(w.response,
								      "result");

		if (!res) {
			res = cJSON_DetachItemFromObjectCaseSensitive(w.response,
								      "error");
			*is_error = 1;
		}
		*result = res;
		cJSON_Delete(w.response);
	} else if (rc == W_TIMEOUT || rc == W_CANCELLED) {
		/* initialize is never cancelled: the server is stopped */
		if (strcmp(method, "initialize"))
			cancel(m, s, id, rc == W_TIMEOUT ? "timed out"
							  : "interrupted");
		if (rc == W_TIMEOUT)
			s->next_id = id; /* its late answer is a stray */
		if (rc == W_TIMEOUT && w.stray != -1)
			snprintf(s->why, sizeof s->why, "it answered id %ld, "
				 "not the %ld asked", w.stray, id);
		else
			s->why[0] = '\0';
	}
	return rc;
}

static void
rpc_error_text(const cJSON *e, char *out, size_t size)
{
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");

	snprintf(out, size, "%.300s (code %.0f)",
		 cJSON_IsString(msg) ? msg->valuestring : "no message",
		 cJSON_IsNumber(code) ? code->valuedouble : 0);
}

/* tools/list, every page: s->tools. */
static int
list_tools(struct mcp *m, struct mcp_server *s)
{
	cJSON *all = cJSON_CreateArray(), *res, *params, *t;
	const cJSON *tools, *next;
	char *cursor = NULL, why[400];
	int pages, iserr, rc;

	if (!all) {
		server_fail(m, s, "out of memory");
		return -1;
	}
	for (pages = 0; pages < MCP_MAX_PAGES; pages++) {
		params = NULL;
		if (cursor) {
			params = cJSON_CreateObject();
			if (!params || !cJSON_AddStringToObject(params, "cursor",
								cursor)) {
				cJSON_Delete(params);
				goto nomem;
			}
		}
		rc = rpc(m, s, "tools/list", params, m->opts.start_timeout, -1,
			 &res, &iserr);
		free(cursor);
		cursor = NULL;
		if (rc != W_DONE) {
			if (s->state == S_UP)
				server_fail(m, s, "tools/list got no answer "
					    "within %g s%s%s",
					    m->opts.start_timeout,
					    s->why[0] ? ": " : "", s->why);
			cJSON_Delete(all);
			return -1;
		}
		if (iserr) {
			rpc_error_text(res, why, sizeof why);
			cJSON_Delete(res);
			cJSON_Delete(all);
			server_fail(m, s, "tools/list failed: %s", why);
			return -1;
		}
		tools = cJSON_GetObjectItemCaseSensitive(res, "tools");
		cJSON_ArrayForEach(t, tools) {
			if (cJSON_GetArraySize(all) >= MCP_MAX_TOOLS)
				break;
			if (!cJSON_AddItemToArray(all, cJSON_Duplicate(t, 1)))
				break;
		}
		next = cJSON_GetObjectItemCaseSensitive(res, "nextCursor");
		if (cJSON_IsString(next) && *next->valuestring &&
		    !(cursor = strdup(next->valuestring))) {
			cJSON_Delete(res);
			goto nomem;
		}
		cJSON_Delete(res);
		if (!cursor)
			break;
	}
	free(cursor);
	cJSON_Delete(s->tools);
	s->tools = all;
	s->list_changed = 0;
	return 0;
nomem:
	cJSON_Delete(all);
	server_fail(m, s, "out of memory");
	return -1;
}

/* Starts the server and goes through initialize and tools/list. */
static int
server_start(struct mcp *m, struct mcp_server *s)
{
	struct ah_error err = { 0 };
	cJSON *params, *ci, *res;
	const cJSON *v;
	char why[400];
	int rc, iserr, i;

	s->why[0] = '\0';
	s->next_id = 0;
	s->version[0] = '\0';
	if (s->url)
		s->state = S_UP;
	else if (server_spawn(m, s, &err) < 0) {
		s->state = S_FAILED;
		snprintf(s->why, sizeof s->why, "%.500s", err.msg);
		redact(s->why, (const char *const *)m->secrets);
		return -1;
	}
	params = cJSON_CreateObject();
	if (!params || !cJSON_AddStringToObject(params, "protocolVersion",
						 mcp_versions[0]) ||
	    !cJSON_AddObjectToObject(params, "capabilities") ||
	    !(ci = cJSON_AddObjectToObject(params, "clientInfo")) ||
	    !cJSON_AddStringToObject(ci, "name", "agent-harness") ||
	    !cJSON_AddStringToObject(ci, "version", AH_VERSION)) {
		cJSON_Delete(params);
		server_fail(m, s, "out of memory");
		return -1;
	}
	rc = rpc(m, s, "initialize", params, m->opts.start_timeout, -1, &res,
		 &iserr);
	if (rc != W_DONE) {
		if (s->state == S_UP)
			server_fail(m, s, "no answer to initialize within "
				    "%g s%s%s", m->opts.start_timeout,
				    s->why[0] ? ": " : "", s->why);
		return -1;
	}
	if (iserr) {
		rpc_error_text(res, why, sizeof why);
		cJSON_Delete(res);
		server_fail(m, s, "initialize failed: %s", why);
		return -1;
	}
	v = cJSON_GetObjectItemCaseSensitive(res, "protocolVersion");
	for (i = 0; mcp_versions[i]; i++)
		if (cJSON_IsString(v) && !strcmp(v->valuestring, mcp_versions[i]))
			break;
	if (!mcp_versions[i]) {
		server_fail(m, s, "it speaks protocol version '%.40s'; this "
			    "client speaks %s, %s and %s",
			    cJSON_IsString(v) ? v->valuestring : "(none)",
			    mcp_versions[0], mcp_versions[1], mcp_versions[2]);
		cJSON_Delete(res);
		return -1;
	}
	snprintf(s->version, sizeof s->version, "%s", mcp_versions[i]);
	cJSON_Delete(res);
	res = request(-1, "notifications/initialized", NULL);
	if (!res || send_msg(m, s, res, mono_now() + m->opts.start_timeout) < 0) {
		cJSON_Delete(res);
		if (s->state == S_UP)
			server_fail(m, s, "out of memory");
		return -1;
	}
	cJSON_Delete(res);
	return list_tools(m, s);
}

int
mcp_start(struct mcp *m)
{
	size_t i;
	int up = 0;

	for (i = 0; i < m->n; i++) {
		struct mcp_server *s = m->servers[i];

		if (server_start(m, s) == 0) {
			up++;
			if (m->opts.verbose)
				note(m, "%s: ready (protocol %s, %d tools)",
				     s->name, s->version,
				     cJSON_GetArraySize(s->tools));
		} else
			note(m, "server '%s' could not start: %s", s->name,
			     s->why);
	}
	return up;
}

/* --- tools for the model ---------------------------------------------- */

/* The Chat Completions definition of one tool of s, or NULL when its
 * name cannot be one (said once). */
static cJSON *
tool_def(const struct mcp *m, const struct mcp_server *s, const cJSON *t)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
	const cJSON *desc = cJSON_GetObjectItemCaseSensitive(t, "description");
	const cJSON *schema = cJSON_GetObjectItemCaseSensitive(t, "inputSchema");
	char full[128];
	cJSON *d, *f, *p;

	if (!cJSON_IsString(name) || !name_ok(name->valuestring, 64) ||
	    (size_t)snprintf(full, sizeof full, "mcp__%s__%s", s->name,
			     name->valuestring) > 64) {
		note(m, "%s: tool '%.80s' left out: its name is not 1 to 64 "
		     "letters, digits, _ and - with mcp__%s__ before it",
		     s->name, cJSON_IsString(name) ? name->valuestring : "?",
		     s->name);
		return NULL;
	}
	d = cJSON_CreateObject();
	if (!d || !cJSON_AddStringToObject(d, "type", "function") ||
	    !(f = cJSON_AddObjectToObject(d, "function")) ||
	    !cJSON_AddStringToObject(f, "name", full) ||
	    !cJSON_AddStringToObject(f, "description",
				     cJSON_IsString(desc) ? desc->valuestring
							  : ""))
		goto fail;
	if (cJSON_IsObject(schema))
		p = cJSON_Duplicate(schema, 1);
	else
		p = cJSON_Parse("{\"type\":\"object\",\"properties\":{}}");
	if (!p || !cJSON_AddItemToObject(f, "parameters", p)) {
		cJSON_Delete(p);
		goto fail;
	}
	return d;
fail:
	cJSON_Delete(d);
	return NULL;
}

cJSON *
mcp_schema(struct mcp *m)
{
	cJSON *all = cJSON_CreateArray(), *d, *tools;
	const cJSON *t;
	size_t i;

	for (i = 0; all && i < m->n; i++) {
		struct mcp_server *s = m->servers[i];

		if (s->state == S_UP && s->list_changed)
			list_tools(m, s);
		tools = s->state == S_UP ? s->tools : NULL;
		cJSON_ArrayForEach(t, tools) {
			d = tool_def(m, s, t);
			if (d)
				cJSON_AddItemToArray(all, d);
		}
	}
	return all;
}

/* --- calls -------------------------------------------------------------- */

/* The text of a tools/call result for the model: text as it is, what
 * cannot be shown described, structuredContent kept when no text holds
 * it already. */
static int
result_text(const cJSON *res, struct buf *b)
{
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(res, "content");
	const cJSON *sc = cJSON_GetObjectItemCaseSensitive(res,
							   "structuredContent");
	const cJSON *c;
	size_t start = b->len;
	int said_sc = 0, rc = 0;

	cJSON_ArrayForEach(c, content) {
		const char *type = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(
			c, "type")) ? cJSON_GetObjectItemCaseSensitive(c,
				"type")->valuestring : "?";
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(c, "text");
		const cJSON *data = cJSON_GetObjectItemCaseSensitive(c, "data");
		const cJSON *mime = cJSON_GetObjectItemCaseSensitive(c,
								     "mimeType");
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(c, "resource");
		const cJSON *uri = cJSON_GetObjectItemCaseSensitive(
			!strcmp(type, "resource") ? r : c, "uri");

		if (b->len > start)
			rc |= buf_putc(b, '\n');
		if (!strcmp(type, "text") && cJSON_IsString(text)) {
			rc |= buf_append(b, text->valuestring,
					 strlen(text->valuestring));
			if (sc && !said_sc) {
				cJSON *t = cJSON_Parse(text->valuestring);

				said_sc = t && cJSON_Compare(t, sc, 1);
				cJSON_Delete(t);
			}
		} else if (!strcmp(type, "image") || !strcmp(type, "audio")) {
			rc |= buf_printf(b, "[%s: %s, %zu bytes of base64, not "
					 "shown]", type,
					 cJSON_IsString(mime) ? mime->valuestring
							      : "no type",
					 cJSON_IsString(data)
						 ? strlen(data->valuestring) : 0);
		} else if (!strcmp(type, "resource")) {
			const cJSON *rt = cJSON_GetObjectItemCaseSensitive(r,
									   "text");
			const cJSON *rb = cJSON_GetObjectItemCaseSensitive(r,
									   "blob");
			const cJSON *rm = cJSON_GetObjectItemCaseSensitive(
				r, "mimeType");

			rc |= buf_printf(b, "[resource: %s%s%s%s]",
					 cJSON_IsString(uri) ? uri->valuestring
							     : "(no uri)",
					 cJSON_IsString(rm) ? " (" : "",
					 cJSON_IsString(rm) ? rm->valuestring : "",
					 cJSON_IsString(rm) ? ")" : "");
			if (cJSON_IsString(rt))
				rc |= buf_printf(b, "\n%s", rt->valuestring);
			else if (cJSON_IsString(rb))
				rc |= buf_printf(b, " [%zu bytes of base64, not "
						 "shown]", strlen(rb->valuestring));
		} else if (!strcmp(type, "resource_link")) {
			const cJSON *nm = cJSON_GetObjectItemCaseSensitive(c,
									   "name");

			rc |= buf_printf(b, "[resource link: %s%s%s]",
					 cJSON_IsString(uri) ? uri->valuestring
							     : "(no uri)",
					 cJSON_IsString(nm) ? " " : "",
					 cJSON_IsString(nm) ? nm->valuestring : "");
		} else
			rc |= buf_printf(b, "[content of type '%.40s', not "
					 "shown]", type);
	}
	if (sc && !said_sc) {
		char *j = cJSON_PrintUnformatted(sc);

		rc |= !j || buf_printf(b, "%sstructuredContent: %s",
				       b->len > start ? "\n" : "", j);
		free(j);
	}
	return rc ? -1 : 0;
}

/* Sets *res to a printf-formatted text (redacted) and returns rc. */
static int
answer(const struct mcp *m, char **res, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
answer(const struct mcp *m, char **res, int rc, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(res, fmt, ap);
	va_end(ap);
	if (n < 0) {
		*res = NULL;
		return -1;
	}
	redact(*res, (const char *const *)m->secrets);
	return rc;
}

/* A server that is down is started again, a bounded number of times. */
static int
ensure_up(struct mcp *m, struct mcp_server *s)
{
	if (s->state == S_UP)
		return 0;
	if (s->dead || s->restarts >= m->opts.max_restarts)
		return -1;
	s->restarts++;
	server_stop(s, 0.1);
	note(m, "%s: starting it again (%d of %d)", s->name, s->restarts,
	     m->opts.max_restarts);
	return server_start(m, s);
}

int
mcp_call(struct mcp *m, const char *name, const char *argstr, int client,
	 char **res)
{
	const char *tool, *sep;
	struct mcp_server *s = NULL;
	cJSON *args, *params, *result;
	struct buf text = BUF_INIT(0);
	char server[64], why[400];
	size_t off = 0, n;
	const cJSON *t;
	int rc, iserr, found = 0;

	*res = NULL;
	if (strncmp(name, "mcp__", 5) || !(sep = strstr(name + 5, "__")) ||
	    (n = (size_t)(sep - (name + 5))) >= sizeof server)
		return answer(m, res, TOOL_ERROR, "Error: '%.100s' is not an "
			      "MCP tool (mcp__SERVER__TOOL).", name);
	memcpy(server, name + 5, n);
	server[n] = '\0';
	tool = sep + 2;
	s = find_server(m, server);
	if (!s)
		return answer(m, res, TOOL_ERROR, "Error: no MCP server '%s' "
			      "in this session.", server);
	if (ensure_up(m, s) < 0)
		return answer(m, res, TOOL_ERROR, "Error: MCP server '%s' is "
			      "down: %s%s", s->name, s->why,
			      !s->dead && s->restarts >= m->opts.max_restarts
				      ? " (not started again: it was restarted "
					"the most times allowed)" : "");
	if (s->list_changed)
		list_tools(m, s);
	cJSON_ArrayForEach(t, s->tools) {
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(t, "name");

		if (cJSON_IsString(nm) && !strcmp(nm->valuestring, tool))
			found = 1;
	}
	if (!found)
		return answer(m, res, TOOL_ERROR, "Error: MCP server '%s' has no "
			      "tool '%.100s' (now).", s->name, tool);
	args = json_parse(argstr, strlen(argstr), &off);
	if (!cJSON_IsObject(args)) {
		cJSON_Delete(args);
		return answer(m, res, TOOL_ERROR, "Error: arguments for %s must "
			      "be a JSON object.", name);
	}
	params = cJSON_CreateObject();
	if (!params || !cJSON_AddStringToObject(params, "name", tool) ||
	    !cJSON_AddItemToObject(params, "arguments", args)) {
		cJSON_Delete(params);
		cJSON_Delete(args);
		return -1;
	}
	rc = rpc(m, s, "tools/call", params, m->opts.call_timeout, client,
		 &result, &iserr);
	if (rc == W_TIMEOUT)
		return answer(m, res, TOOL_ERROR, "Error: MCP tool %s timed out "
			      "after %g s and was cancelled%s%s.", name,
			      m->opts.call_timeout, s->why[0] ? "; " : "",
			      s->why);
	if (rc == W_CANCELLED)
		return answer(m, res, TOOL_INTERRUPTED, "Error: MCP tool %s was "
			      "interrupted and cancelled.", name);
	if (rc == W_FAILED)
		return answer(m, res, TOOL_ERROR, "Error: MCP server '%s' failed "
			      "during the call: %s", s->name, s->why);
	if (iserr) {
		rpc_error_text(result, why, sizeof why);
		cJSON_Delete(result);
		return answer(m, res, TOOL_ERROR, "Error: MCP tool %s: %s", name,
			      why);
	}
	iserr = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result,
							      "isError"));
	if ((iserr && buf_append(&text, "Error: ", 7) < 0) ||
	    result_text(result, &text) < 0) {
		cJSON_Delete(result);
		buf_free(&text);
		return -1;
	}
	cJSON_Delete(result);
	if (!text.len || (iserr && text.len == 7))
		rc = buf_printf(&text, "%s", iserr ? "the tool failed, and said "
				"nothing" : "(no output)");
	else
		rc = 0;
	if (rc < 0) {
		buf_free(&text);
		return -1;
	}
	redact(text.data, (const char *const *)m->secrets);
	*res = text_bound(text.data, strlen(text.data), m->opts.max_output,
			  NULL);
	buf_free(&text);
	return *res ? (iserr ? TOOL_ERROR : TOOL_OK) : -1;
}

void
mcp_free(struct mcp *m)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		server_stop(m->servers[i], 1.0);
		server_free(m->servers[i]);
	}
	free(m->servers);
	strv_free(m->secrets);
	m->servers = NULL;
	m->secrets = NULL;
	m->n = m->nsecrets = 0;
}
