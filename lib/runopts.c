/* runopts.c: agent-run's options, its configuration file, the checks of
 * its workspace and its stdin, in one process (agent-session
 * --run-options), as shell code for the driver to eval.  See
 * agent-run(1).
 *
 * The parse is getopt_long's, as the C programs take their options:
 * bundles (-qy, -Cdir), --opt=value, options after the task words, and
 * -- ends them.  Every check is made before anything is written: a
 * mistake in one never puts the last session aside. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "priv.h"

static const char usage[] =
	"usage: agent-run [-cqy] [-C DIR] [-m MODEL] [options] [--] TASK...\n"
	"       agent-run --session ID [-C DIR] [options] TASK...\n"
	"       agent-run --resume [--session ID] [-C DIR] [options]\n"
	"       agent-run --sessions [-C DIR]\n"
	"       agent-run --rewind ID [-C DIR] [options] [TASK...]\n"
	"       agent-run --fork [--session ID] [-C DIR] [options] TASK...\n"
	"\n"
	"Runs the agent loop on TASK (the arguments, or stdin when none) in DIR,\n"
	"until the model answers without tool calls; the answer goes to stdout,\n"
	"the progress to stderr.  With TASK as arguments, a stdin that is not a\n"
	"terminal is attached to the task (at most 256 KiB).\n"
	"\n"
	"Sessions:\n"
	"  -c, --continue    TASK is a follow-up in the last session of DIR\n"
	"  --resume          go on with the last session of DIR, interrupted\n"
	"  --session ID      the session TASK is a follow-up in (as with -c), or\n"
	"                    --resume goes on with (--fork: starts from); a\n"
	"                    unique start of its id will do\n"
	"  --rewind ID       files and conversation back to just before the step\n"
	"                    of checkpoint ID, which goes on as a new session\n"
	"                    (with TASK, if given); the old one is kept\n"
	"  --rewind-code ID  only the files back; no new session, no TASK\n"
	"  --rewind-conversation ID  only the conversation back\n"
	"  --fork            a new session from the whole conversation of the\n"
	"                    last session (or --session ID), with TASK\n"
	"  --sessions        list DIR's sessions (JSON Lines, newest first)\n"
	"  --json            events on stdout, one JSON object a line, the\n"
	"                    last one the result (see agent-harness(5))\n"
	"  -o, --output-last-message FILE  the final answer also into FILE\n"
	"  --ephemeral       a new session that is not kept: when it ends, the\n"
	"                    session before it is the last one again\n"
	"\n"
	"The model (agent-step(1)):\n"
	"  --profile NAME    the profile of the configuration file\n"
	"                    ($AGENT_PROFILE; see agent-harness(5)), whose\n"
	"                    variables the environment does not set count\n"
	"  --print-config    print what is in force (options, environment,\n"
	"                    configuration file), where each came from, keys\n"
	"                    redacted, and exit\n"
	"  -m, --model M     the model ($AGENT_MODEL)\n"
	"  --api API         chat (Chat Completions, the default), anthropic\n"
	"                    (Anthropic's Messages API) or responses (OpenAI's\n"
	"                    Responses API) ($AGENT_API)\n"
	"  --base-url URL    the endpoint, up to /v1 ($AGENT_BASE_URL, else\n"
	"                    $OPENAI_BASE_URL); the key is $AGENT_API_KEY,\n"
	"                    else $OPENAI_API_KEY ($ANTHROPIC_API_KEY for\n"
	"                    anthropic)\n"
	"  --timeout SEC     the most seconds without data from the model (60;\n"
	"                    $AGENT_TIMEOUT): raise it for a slow local model\n"
	"  --max-tokens N    the most tokens of an answer ($AGENT_MAX_TOKENS)\n"
	"  --temperature T   sampling temperature ($AGENT_TEMPERATURE)\n"
	"  --param JSON      more request fields, an object (repeatable;\n"
	"                    $AGENT_PARAM)\n"
	"  --context-window N|auto|off  the model's window in tokens: old tool\n"
	"                    output is left out past 3/4 of it, and the\n"
	"                    conversation is compacted when it is full (auto:\n"
	"                    known models, else 32768; $AGENT_CONTEXT_WINDOW)\n"
	"\n"
	"The loop:\n"
	"  -C, --directory DIR  work in DIR (default: the current directory)\n"
	"  --state-dir DIR   keep the session (transcript, lock, sessions,\n"
	"                    checkpoints, ...) in DIR, not in .agent of the\n"
	"                    workspace ($AGENT_STATE_DIR)\n"
	"  --max-steps N     the most model calls (50; $AGENT_MAX_STEPS; the\n"
	"                    same for each child session of a task call)\n"
	"  --max-cost USD    stop (exit 3) before a model call that would take\n"
	"                    the session, its subagents included, past USD\n"
	"                    ($AGENT_MAX_COST; prices: share/prices.json)\n"
	"  --max-depth N     how deep task calls may start child sessions: 1\n"
	"                    (the default), a child starts none; at most 3\n"
	"                    ($AGENT_MAX_DEPTH)\n"
	"  --mode MODE       plan, ask (the default), edit or auto: presets of\n"
	"                    the policy and the sandbox ($AGENT_MODE; -c\n"
	"                    keeps the session's); see Modes in agent-run(1)\n"
	"  -y, --yes         --mode auto: approve every ask of the policy\n"
	"  --print-policy    print the rules in force, the mode's too, and exit\n"
	"  --policy FILE     the permission rules (see hook-perm(1))\n"
	"  --hooks FILE      Claude Code-style hooks to run too, besides those\n"
	"                    of ~/.claude/settings.json and the project's\n"
	"                    trusted settings (see hook-cc(1))\n"
	"  --hooks-fail-open a failing PreToolUse hook decides nothing,\n"
	"                    instead of denying the call\n"
	"  --mcp-config FILE MCP servers of FILE too ($AGENT_MCP_CONFIG; see\n"
	"                    mcp-bridge(1))\n"
	"  --sandbox MODE    confine commands: workspace-write (the default),\n"
	"                    read-only or off (see tool-exec(1))\n"
	"  --allow-network   let sandboxed commands reach the network\n"
	"  --allow-home      work in the home directory, or a directory\n"
	"                    above it, or / (refused without it); the\n"
	"                    shell's start-up files, ~/.ssh, ~/.gitconfig and\n"
	"                    the harness's configuration stay read-only\n"
	"  --allow-read PATH let sandboxed commands see PATH, read-only\n"
	"  --allow-socket PATH  let sandboxed commands connect to the unix\n"
	"                    socket PATH (unsafe; see tool-exec(1))\n"
	"  --system FILE     the system prompt instead of the built-in one\n"
	"  --no-project-files  do not give the model AGENTS.md (or CLAUDE.md)\n"
	"                    nor the index of the skills\n"
	"  --tools LIST      offer only these tools, names separated by commas\n"
	"                    ($AGENT_TOOLS; default: all but apply_patch; see\n"
	"                    tool-exec(1))\n"
	"  --skill NAME      give the model the skill NAME at the start (see\n"
	"                    Skills in agent-run(1))\n"
	"  --no-checkpoints  no snapshot of the workspace before each step\n"
	"                    that can write (see agent-snap(1))\n"
	"  --project-bytes N the most bytes of those files as sent (32768,\n"
	"                    a quarter of the window at most;\n"
	"                    $AGENT_PROJECT_BYTES)\n"
	"  --stop-checks N   when the model stops with todos left, ask it to\n"
	"                    finish at most N times (1; 0 turns it off)\n"
	"  --step            one set of processes per step, instead of one\n"
	"                    long-lived ring (slower; easy to follow)\n"
	"  -q, --quiet       no progress on stderr\n"
	"  -h, --help        print this help and exit\n"
	"  --version         print the version and exit\n"
	"\n"
	"Exit status: 0 done, 1 a stage failed, another session runs here,\n"
	".agent is unsafe, or there is nothing to resume, 2 usage (also: no session to continue, stdin too\n"
	"large), 3 step limit reached, 4 the context cannot be made to fit the\n"
	"window, 130 interrupted (SIGINT, SIGTERM, SIGHUP; resume with --resume).\n"
	;

/* A task given as arguments takes a stdin that is not a terminal as its
 * context (cat error.log | agent-run "why does this fail?"), bounded. */
#define STDIN_MAX 262144

enum {
	O_DIR = 1, O_MODEL, O_API, O_MAX_STEPS, O_MAX_COST, O_MAX_DEPTH,
	O_POLICY, O_HOOKS, O_HOOKS_OPEN, O_MCP, O_SANDBOX, O_MODE,
	O_PRINT_POLICY, O_SYSTEM, O_CHECKS, O_WINDOW, O_SESSION,
	O_PROJECT_BYTES, O_BASE_URL, O_TIMEOUT, O_MAX_TOKENS,
	O_TEMPERATURE, O_PARAM, O_CHILD, O_NETWORK, O_ALLOW_HOME,
	O_ALLOW_READ, O_ALLOW_SOCKET, O_NO_PROJECT, O_TOOLS, O_SKILL,
	O_NO_CHECKPOINTS, O_REWIND, O_REWIND_CODE, O_REWIND_CONV, O_FORK,
	O_CONTINUE, O_RESUME, O_SESSIONS, O_JSON, O_OUTPUT, O_EPHEMERAL,
	O_PROFILE, O_PRINT_CONFIG, O_YES, O_STEP, O_QUIET, O_HELP,
	O_VERSION, O_STATE_DIR, O_COUNT
};

/* The option table: long name, short letter, takes a value. */
static const struct {
	const char *name;
	char letter, value;
	int id;
} table[] = {
	{ "directory", 'C', 1, O_DIR }, { "model", 'm', 1, O_MODEL },
	{ "api", 0, 1, O_API }, { "max-steps", 0, 1, O_MAX_STEPS },
	{ "max-cost", 0, 1, O_MAX_COST }, { "max-depth", 0, 1, O_MAX_DEPTH },
	{ "policy", 0, 1, O_POLICY }, { "hooks", 0, 1, O_HOOKS },
	{ "hooks-fail-open", 0, 0, O_HOOKS_OPEN },
	{ "mcp-config", 0, 1, O_MCP }, { "sandbox", 0, 1, O_SANDBOX },
	{ "mode", 0, 1, O_MODE }, { "print-policy", 0, 0, O_PRINT_POLICY },
	{ "system", 0, 1, O_SYSTEM }, { "stop-checks", 0, 1, O_CHECKS },
	{ "context-window", 0, 1, O_WINDOW }, { "session", 0, 1, O_SESSION },
	{ "project-bytes", 0, 1, O_PROJECT_BYTES },
	{ "base-url", 0, 1, O_BASE_URL }, { "timeout", 0, 1, O_TIMEOUT },
	{ "max-tokens", 0, 1, O_MAX_TOKENS },
	{ "temperature", 0, 1, O_TEMPERATURE }, { "param", 0, 1, O_PARAM },
	{ "child", 0, 1, O_CHILD }, { "allow-network", 0, 0, O_NETWORK },
	{ "allow-home", 0, 0, O_ALLOW_HOME },
	{ "allow-read", 0, 1, O_ALLOW_READ },
	{ "allow-socket", 0, 1, O_ALLOW_SOCKET },
	{ "no-project-files", 0, 0, O_NO_PROJECT }, { "tools", 0, 1, O_TOOLS },
	{ "skill", 0, 1, O_SKILL }, { "no-checkpoints", 0, 0, O_NO_CHECKPOINTS },
	{ "rewind", 0, 1, O_REWIND }, { "rewind-code", 0, 1, O_REWIND_CODE },
	{ "rewind-conversation", 0, 1, O_REWIND_CONV },
	{ "fork", 0, 0, O_FORK }, { "continue", 'c', 0, O_CONTINUE },
	{ "resume", 0, 0, O_RESUME }, { "sessions", 0, 0, O_SESSIONS },
	{ "json", 0, 0, O_JSON }, { "output-last-message", 'o', 1, O_OUTPUT },
	{ "ephemeral", 0, 0, O_EPHEMERAL }, { "profile", 0, 1, O_PROFILE },
	{ "print-config", 0, 0, O_PRINT_CONFIG }, { "yes", 'y', 0, O_YES },
	{ "step", 0, 0, O_STEP }, { "quiet", 'q', 0, O_QUIET },
	{ "help", 'h', 0, O_HELP }, { "version", 0, 0, O_VERSION },
	{ "state-dir", 0, 1, O_STATE_DIR },
};

#define NTABLE (sizeof table / sizeof *table)
#define MAXLIST 64

/* What the arguments said; NULL: not given (the environment's, or the
 * default, is taken after the configuration file is read). */
struct ro {
	const char *bin;       /* where our programs are, resolved */
	const char *pwd;       /* where agent-run was started */
	const char *dir, *model, *api, *max_steps, *max_cost, *max_depth;
	const char *policy, *hooks_file, *mcp_config, *sandbox, *amode;
	const char *amode_opt, *system, *checks, *window, *session;
	const char *project_bytes, *base_url, *timeout, *max_tokens;
	const char *temperature, *child, *tools, *skill, *rewind;
	const char *rewind_what, *out_file, *profile, *checkpoints;
	const char *network, *state_dir;
	int yes, hooks_open, sandbox_opt, print_policy, allow_home, project;
	int fork, cont, resume, list, json, ephemeral, print_config;
	int step_mode, quiet, is_child, dir_given;
	char given[O_COUNT];
	const char *param[MAXLIST], *allow_read[MAXLIST];
	const char *allow_socket[MAXLIST];
	int nparam, nallow_read, nallow_socket;
	char **task;
	int ntask;
	char *typed, *task_text;   /* the task as typed, and as sent */
	long stdin_bytes;          /* -1: no stdin attached */
	char *path;                /* the cleaned PATH */
	const char *user_path;     /* PATH as it was, for commands */
	/* the variables set for the driver to export, in order */
	const char *exports[MAXLIST];
	int nexports;
	char *own[4 * MAXLIST + 32]; /* what we allocated, freed at the end */
	int nown;
	struct runopts_out *out;
};

/* s, owned from now on: freed with the rest */
static char *
keep(struct ro *o, char *s)
{
	if (s && o->nown < (int)(sizeof o->own / sizeof *o->own))
		o->own[o->nown++] = s;
	else if (s) {
		free(s);
		s = NULL;
	}
	return s;
}

static int
oom(struct ro *o)
{
	buf_printf(&o->out->say, "agent-run: out of memory\n");
	o->out->status = 1;
	return -1;
}

/* The message as agent-run says it, then tail; the run ends with status. */
static int
vsay(struct ro *o, int status, const char *tail, const char *fmt, va_list ap)
{
	char *msg;

	if (vasprintf(&msg, fmt, ap) < 0)
		return oom(o);
	buf_printf(&o->out->say, "agent-run: %s\n%s", msg, tail);
	o->out->status = status;
	free(msg);
	return -1;
}

/* The driver's die_usage: the message, a pointer to --help, exit 2. */
__attribute__((format(printf, 2, 3))) static int
bad(struct ro *o, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vsay(o, 2, "Try 'agent-run --help' for more information.\n",
		  fmt, ap);
	va_end(ap);
	return rc;
}

/* A failure of the workspace's checks: the message, exit 1. */
__attribute__((format(printf, 2, 3))) static int
fail(struct ro *o, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vsay(o, 1, "", fmt, ap);
	va_end(ap);
	return rc;
}

/* s, quoted for the shell: any byte but NUL stands for itself between
 * single quotes, and a quote is closed, escaped and opened again. */
static void
put_quoted(struct buf *b, const char *s)
{
	const char *q;

	buf_putc(b, '\'');
	while ((q = strchr(s, '\''))) {
		buf_append(b, s, (size_t)(q - s));
		buf_append(b, "'\\''", 4);
		s = q + 1;
	}
	buf_append(b, s, strlen(s));
	buf_putc(b, '\'');
}

static void
put_var(struct ro *o, const char *name, const char *val)
{
	buf_printf(&o->out->sh, "%s=", name);
	put_quoted(&o->out->sh, val ? val : "");
	buf_putc(&o->out->sh, '\n');
}

static void
put_flag(struct ro *o, const char *name, int val)
{
	buf_printf(&o->out->sh, "%s=%d\n", name, val);
}

/* the variables set for the stages, to export */
static void
put_exports(struct ro *o)
{
	int i;

	for (i = 0; i < o->nexports; i++) {
		put_var(o, o->exports[i], getenv(o->exports[i]));
		buf_printf(&o->out->sh, "export %s\n", o->exports[i]);
	}
}

/* setenv, and the driver exports it too */
static int
export(struct ro *o, const char *name, const char *val)
{
	int i;

	if (setenv(name, val, 1) < 0)
		return oom(o);
	for (i = 0; i < o->nexports; i++)
		if (!strcmp(o->exports[i], name))
			return 0;
	if (o->nexports == MAXLIST)
		return oom(o);
	o->exports[o->nexports++] = name;
	return 0;
}

/* ${NAME:-dflt} */
static const char *
env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

static int
digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

static int
one_of(const char *s, const char *const *words)
{
	for (; *words; words++)
		if (!strcmp(s, *words))
			return 1;
	return 0;
}

static int
is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int
is_link(const char *p)
{
	struct stat st;

	return lstat(p, &st) == 0 && S_ISLNK(st.st_mode);
}

static int
exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0;
}

/* a + b, owned */
static char *
join(struct ro *o, const char *a, const char *sep, const char *b)
{
	char *s;

	if (asprintf(&s, "%s%s%s", a, sep, b) < 0)
		return NULL;
	return keep(o, s);
}

/* apply: one option as parsed, in the order given */
static int
apply(struct ro *o, int id, const char *v)
{
	o->given[id] = 1;
	switch (id) {
	case O_DIR: o->dir = v; o->dir_given = 1; break;
	case O_MODEL: o->model = v; break;
	case O_API: o->api = v; break;
	case O_MAX_STEPS: o->max_steps = v; break;
	case O_MAX_COST: o->max_cost = v; break;
	case O_MAX_DEPTH: o->max_depth = v; break;
	case O_POLICY: o->policy = v; break;
	case O_HOOKS: o->hooks_file = v; break;
	case O_HOOKS_OPEN: o->hooks_open = 1; break;
	case O_MCP: o->mcp_config = v; break;
	case O_SANDBOX: o->sandbox = v; o->sandbox_opt = 1; break;
	case O_MODE: o->amode = o->amode_opt = v; break;
	case O_PRINT_POLICY: o->print_policy = 1; break;
	case O_SYSTEM: o->system = v; break;
	case O_CHECKS: o->checks = v; break;
	case O_WINDOW: o->window = v; break;
	case O_SESSION: o->session = v; break;
	case O_PROJECT_BYTES: o->project_bytes = v; break;
	case O_BASE_URL: o->base_url = v; break;
	case O_TIMEOUT: o->timeout = v; break;
	case O_MAX_TOKENS: o->max_tokens = v; break;
	case O_TEMPERATURE: o->temperature = v; break;
	case O_CHILD: o->child = v; o->is_child = 1; break;
	case O_NETWORK: o->network = "1"; break;
	case O_ALLOW_HOME: o->allow_home = 1; break;
	case O_NO_PROJECT: o->project = 0; break;
	case O_TOOLS: o->tools = v; break;
	case O_SKILL: o->skill = v; break;
	case O_NO_CHECKPOINTS: o->checkpoints = "0"; break;
	case O_REWIND: o->rewind = v; o->rewind_what = "both"; break;
	case O_REWIND_CODE: o->rewind = v; o->rewind_what = "code"; break;
	case O_REWIND_CONV: o->rewind = v; o->rewind_what = "conversation"; break;
	case O_FORK: o->fork = 1; break;
	case O_CONTINUE: o->cont = 1; break;
	case O_RESUME: o->resume = 1; break;
	case O_SESSIONS: o->list = 1; break;
	case O_JSON: o->json = 1; break;
	case O_OUTPUT: o->out_file = v; break;
	case O_EPHEMERAL: o->ephemeral = 1; break;
	case O_PROFILE: o->profile = v; break;
	case O_PRINT_CONFIG: o->print_config = 1; break;
	case O_YES: o->yes = 1; break;
	case O_STEP: o->step_mode = 1; break;
	case O_QUIET: o->quiet = 1; break;
	case O_STATE_DIR: o->state_dir = v; break;
	case O_PARAM:
	case O_ALLOW_READ:
	case O_ALLOW_SOCKET: {
		const char **list = id == O_PARAM ? o->param : id == O_ALLOW_READ
			? o->allow_read : o->allow_socket;
		int *n = id == O_PARAM ? &o->nparam : id == O_ALLOW_READ
			? &o->nallow_read : &o->nallow_socket;

		if (*n == MAXLIST)
			return bad(o, "too many %s options",
				   id == O_PARAM ? "--param" : id == O_ALLOW_READ
				   ? "--allow-read" : "--allow-socket");
		list[(*n)++] = v;
		break;
	}
	default: /* --help and --version: the parse stops there */
		break;
	}
	return 0;
}

/* The option named name ("--long" or "-c"), or -1 */
static int
lookup(const char *name)
{
	size_t i;

	for (i = 0; i < NTABLE; i++)
		if (name[1] == '-' ? !strcmp(name + 2, table[i].name)
				   : name[1] == table[i].letter && !name[2])
			return (int)i;
	return -1;
}

/* The options, up to the end or to --help or --version (*stop: its id).
 * Task words are kept in order, those after -- too. */
static int
parse(struct ro *o, int argc, char **argv, int *stop)
{
	char name[3] = "-?";
	const char *eq, *v;
	int i, t, k;
	size_t j, n;

	o->task = calloc((size_t)argc + 1, sizeof *o->task);
	if (!o->task)
		return oom(o);
	keep(o, (char *)o->task);
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			while (++i < argc)
				o->task[o->ntask++] = argv[i];
			break;
		}
		if (a[0] == '-' && a[1] == '-' && a[2]) {
			eq = strchr(a + 3, '=');
			if (eq) {
				char *nm = keep(o, strndup(a, (size_t)(eq - a)));

				if (!nm)
					return oom(o);
				t = lookup(nm);
				if (t < 0 || !table[t].value)
					return bad(o, "option '%s' takes no value", nm);
				v = eq + 1;
			} else {
				t = lookup(a);
				if (t < 0)
					return bad(o, "unknown option '%s'", a);
				v = NULL;
				if (table[t].value) {
					if (i + 1 >= argc)
						return bad(o, "option '%s' needs a value", a);
					v = argv[++i];
				}
			}
			if (apply(o, table[t].id, v) < 0)
				return -1;
			if (table[t].id == O_HELP || table[t].id == O_VERSION) {
				*stop = table[t].id;
				return 0;
			}
			continue;
		}
		if (a[0] != '-' || !a[1]) {
			o->task[o->ntask++] = argv[i];
			continue;
		}
		/* a bundle: -qy, -Cdir, -C dir */
		n = strlen(a);
		for (j = 1; j < n; j++) {
			name[1] = a[j];
			t = lookup(name);
			if (t < 0)
				return bad(o, "unknown option '%s'", name);
			v = NULL;
			if (table[t].value) {
				if (j + 1 < n)
					v = a + j + 1;
				else if (i + 1 < argc)
					v = argv[++i];
				else
					return bad(o, "option '%s' needs a value", name);
				j = n;
			}
			k = table[t].id;
			if (apply(o, k, v) < 0)
				return -1;
			if (k == O_HELP || k == O_VERSION) {
				*stop = k;
				return 0;
			}
		}
	}
	return 0;
}

/* key as the entry of config_keys() (which stays when c is freed) */
static const char *
stable_key(const char *key)
{
	const char *const *k;

	for (k = config_keys(); *k; k++)
		if (!strcmp(*k, key))
			return *k;
	return "AGENT_UNKNOWN"; /* (config_read refuses other keys) */
}

/* The configuration file (agent-harness(5)): its variables that the
 * environment does not set become the environment's, before the
 * defaults are taken from it (options, then the environment, then the
 * file); for the workspace of -C, and the profile of --profile (or
 * AGENT_PROFILE).  keys: those it set, for --print-config. */
static int
configure(struct ro *o, struct buf *keys)
{
	struct ah_error err = { 0 };
	struct config c;
	const char *v;
	size_t i;

	if (!o->profile)
		o->profile = env_or("AGENT_PROFILE", "");
	if (config_read(&c, o->profile, o->dir && is_dir(o->dir) ? o->dir
			: ".", &err) < 0)
		return bad(o, "%s", err.msg);
	if (c.in_workspace)
		buf_printf(&o->out->say, "agent-run: warning: '%s' is inside "
			   "the workspace, where commands can write it: not "
			   "read\n", c.path);
	for (i = 0; i < c.n; i++) {
		v = getenv(c.key[i]);
		if (v && *v)
			continue; /* the environment over the file */
		if (export(o, stable_key(c.key[i]), c.value[i]) < 0)
			break;
		buf_printf(keys, "%s%s", keys->len ? " " : "", c.key[i]);
	}
	config_free(&c);
	if (o->out->status)
		return -1;
	if (*o->profile && export(o, "AGENT_PROFILE", o->profile) < 0)
		return -1;
	return 0;
}

/* The defaults, from the environment (the file's variables in it), and
 * the options that set variables for the stages. */
static int
defaults(struct ro *o)
{
	const char *v;
	int i;

	if (!o->model) o->model = env_or("AGENT_MODEL", "");
	if (!o->max_steps) o->max_steps = env_or("AGENT_MAX_STEPS", "50");
	if (!o->mcp_config) o->mcp_config = env_or("AGENT_MCP_CONFIG", "");
	/* (a child session of a task call works where its parent was
	 * allowed to) */
	if ((v = getenv("AGENT_ALLOW_HOME")) && !strcmp(v, "1"))
		o->allow_home = 1;
	if (!o->sandbox) o->sandbox = env_or("AGENT_SANDBOX", "workspace-write");
	if (!o->network) o->network = env_or("AGENT_SANDBOX_NETWORK", "0");
	if (!o->window) o->window = env_or("AGENT_CONTEXT_WINDOW", "auto");
	if (!o->api) o->api = env_or("AGENT_API", "chat");
	if (!o->project_bytes)
		o->project_bytes = env_or("AGENT_PROJECT_BYTES", "32768");
	if (!o->base_url) o->base_url = env_or("AGENT_BASE_URL", "");
	if (!o->timeout) o->timeout = env_or("AGENT_TIMEOUT", "");
	if (!o->max_tokens) o->max_tokens = env_or("AGENT_MAX_TOKENS", "");
	if (!o->temperature) o->temperature = env_or("AGENT_TEMPERATURE", "");
	if (!o->max_depth) o->max_depth = env_or("AGENT_MAX_DEPTH", "");
	if (!o->checkpoints) o->checkpoints = env_or("AGENT_CHECKPOINTS", "1");
	if (!o->amode) o->amode = env_or("AGENT_MODE", "");
	if (!o->amode_opt) o->amode_opt = "";
	if (!o->checks) o->checks = "1";
	if (!o->policy) o->policy = "";
	if (!o->system) o->system = "";
	if (!o->session) o->session = "";
	if (!o->child) o->child = "";
	if (!o->skill) o->skill = "";
	if (!o->rewind) o->rewind = "";
	if (!o->rewind_what) o->rewind_what = "";
	if (!o->out_file) o->out_file = "";
	if (!o->hooks_file) o->hooks_file = "";
	if (!o->dir) o->dir = ".";
	if (!o->state_dir) {
		o->state_dir = env_or("AGENT_STATE_DIR", "");
	} else if (!*o->state_dir)
		return bad(o, "--state-dir: the directory is empty");
	/* a --param value may hold any character: kept as given, after
	 * $AGENT_PARAM */
	if ((v = env_or("AGENT_PARAM", NULL))) {
		if (o->nparam == MAXLIST)
			return bad(o, "too many --param options");
		memmove(o->param + 1, o->param, (size_t)o->nparam * sizeof *o->param);
		o->param[0] = v;
		o->nparam++;
	}
	if (o->max_cost && export(o, "AGENT_MAX_COST", o->max_cost) < 0)
		return -1;
	if (o->tools && export(o, "AGENT_TOOLS", o->tools) < 0)
		return -1;
	for (i = 0; i < o->nallow_read + o->nallow_socket; i++) {
		const char *var = i < o->nallow_read ? "AGENT_SANDBOX_ALLOW_READ"
			: "AGENT_SANDBOX_ALLOW_SOCKET";
		const char *p = i < o->nallow_read ? o->allow_read[i]
			: o->allow_socket[i - o->nallow_read];
		const char *was = env_or(var, NULL);
		const char *now = was ? join(o, was, ":", p) : p;

		if (!now || export(o, var, now) < 0)
			return oom(o);
	}
	return 0;
}

static const char *const apis[] = { "chat", "anthropic", "responses", NULL };
static const char *const sandboxes[] = { "workspace-write", "read-only",
					 "off", NULL };
static const char *const modes[] = { "", "plan", "ask", "edit", "auto", NULL };

/* id: letters, digits, '.', '_', '-', not starting with '.' or '-' */
static int
id_ok(const char *s, int empty_ok)
{
	if (!*s)
		return empty_ok;
	return *s != '.' && *s != '-' && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		"abcdefghijklmnopqrstuvwxyz0123456789._-") == strlen(s);
}

/* Every option, as agent-run(1) says; the messages are the driver's. */
static int
validate(struct ro *o)
{
	const char *c = getenv("AGENT_MAX_COST"), *w = o->window;
	const char *s = o->session;
	long n;

	if (!digits(o->max_steps))
		return bad(o, "--max-steps: '%s' is not a whole number",
			   o->max_steps);
	/* a number of dollars: digits and at most one point */
	if (c && (!*c || !strcmp(c, ".") || strspn(c, "0123456789.") !=
		  strlen(c) || (strchr(c, '.') && strchr(strchr(c, '.') + 1, '.'))))
		return bad(o, "--max-cost: '%s' is not a number of dollars", c);
	if (!digits(o->checks))
		return bad(o, "--stop-checks: '%s' is not a whole number",
			   o->checks);
	if (*o->max_depth && (o->max_depth[1] || !strchr("0123", o->max_depth[0])))
		return bad(o, "--max-depth: '%s' is not 0, 1, 2 or 3",
			   o->max_depth);
	if (strcmp(o->checkpoints, "0") && strcmp(o->checkpoints, "1"))
		return bad(o, "AGENT_CHECKPOINTS: '%s' is not 0 or 1",
			   o->checkpoints);
	if (!digits(o->project_bytes))
		return bad(o, "--project-bytes: '%s' is not a whole number",
			   o->project_bytes);
	if (!one_of(o->api, apis))
		return bad(o, "--api: unknown API '%s' (use chat, anthropic or "
			   "responses)", o->api);
	if (strcmp(w, "auto") && strcmp(w, "off") &&
	    (!digits(w) || strlen(w) > 12 || (n = atol(w)) < 256 ||
	     n > 1000000000))
		return bad(o, "--context-window: '%s' is not a whole number "
			   "from 256 to 1000000000, auto or off", w);
	if (!one_of(o->sandbox, sandboxes))
		return bad(o, "--sandbox: unknown mode '%s' (use "
			   "workspace-write, read-only or off)", o->sandbox);
	/* the mode (Modes in agent-run(1)): -y is --mode auto */
	if (o->yes) {
		if (*o->amode_opt && strcmp(o->amode_opt, "auto"))
			return bad(o, "-y is --mode auto: it does not go with "
				   "--mode %s", o->amode_opt);
		o->amode = o->amode_opt = "auto";
	}
	if (!one_of(o->amode, modes))
		return bad(o, "--mode: unknown mode '%s' (use plan, ask, edit "
			   "or auto)", o->amode);
	if (!strcmp(o->amode, "plan") && o->sandbox_opt &&
	    strcmp(o->sandbox, "read-only"))
		return bad(o, "--mode plan runs everything in the read-only "
			   "sandbox: --sandbox %s does not go with it",
			   o->sandbox);
	if (!id_ok(s, 1))
		return bad(o, "--session: '%s' is not a session id", s);
	return 0;
}

/* --print-config: what is in force, and where it came from (keys
 * redacted): agent-session says it, told which variables the file set
 * and which options were given. */
static int
print_config(struct ro *o, const char *keys)
{
	static const struct { int id; const char *key; } shown[] = {
		{ O_MODEL, "AGENT_MODEL" }, { O_API, "AGENT_API" },
		{ O_BASE_URL, "AGENT_BASE_URL" }, { O_TIMEOUT, "AGENT_TIMEOUT" },
		{ O_MAX_TOKENS, "AGENT_MAX_TOKENS" },
		{ O_TEMPERATURE, "AGENT_TEMPERATURE" },
		{ O_WINDOW, "AGENT_CONTEXT_WINDOW" },
		{ O_MAX_STEPS, "AGENT_MAX_STEPS" },
		{ O_MAX_DEPTH, "AGENT_MAX_DEPTH" },
		{ O_PROJECT_BYTES, "AGENT_PROJECT_BYTES" },
		{ O_SANDBOX, "AGENT_SANDBOX" },
		{ O_NETWORK, "AGENT_SANDBOX_NETWORK" },
		{ O_NO_CHECKPOINTS, "AGENT_CHECKPOINTS" },
		{ O_MODE, "AGENT_MODE" }, { O_MAX_COST, "AGENT_MAX_COST" },
		{ O_STATE_DIR, "AGENT_STATE_DIR" },
	};
	const char *v[sizeof shown / sizeof *shown] = {
		o->model, o->api, o->base_url, o->timeout, o->max_tokens,
		o->temperature, o->window, o->max_steps, o->max_depth,
		o->project_bytes, o->sandbox, "1", "0", o->amode,
		getenv("AGENT_MAX_COST"), o->state_dir,
	};
	struct buf *sh = &o->out->sh;
	size_t i;

	if (o->ntask)
		return bad(o, "--print-config takes no task");
	put_exports(o);
	buf_printf(sh, "exec ");
	put_quoted(sh, o->bin);
	buf_printf(sh, "/agent-session --config --show");
	if (*o->profile) {
		buf_printf(sh, " --profile ");
		put_quoted(sh, o->profile);
	}
	buf_printf(sh, " --from-file ");
	put_quoted(sh, keys);
	for (i = 0; i < sizeof shown / sizeof *shown; i++) {
		if (!o->given[shown[i].id] && !(shown[i].id == O_MODE &&
						o->given[O_YES]))
			continue;
		buf_printf(sh, " --option %s=", shown[i].key);
		put_quoted(sh, v[i] ? v[i] : "");
	}
	buf_putc(sh, '\n');
	return 1;
}

/* How the options go together. */
static int
combine(struct ro *o)
{
	const char *r = o->rewind, *sess = getenv("AGENT_SESSION");
	int starts = o->cont || o->resume;

	if (o->list || o->print_policy) {
		if (o->ntask)
			return bad(o, "--sessions and --print-policy take no task");
	} else if (!*o->model)
		return bad(o, "no model: give -m MODEL or set AGENT_MODEL");
	if (o->resume && o->ntask)
		return bad(o, "--resume takes no task");
	if (o->resume && o->cont)
		return bad(o, "--resume and --continue go one at a time");
	if (o->ephemeral && (starts || *o->session || *r || o->fork ||
			     *o->child))
		return bad(o, "--ephemeral starts a new session: it does not go "
			   "with -c, --resume, --session, --rewind or --fork");
	/* --session ID TASK goes on with that session (claude -r ID
	 * "..."), as --session ID -c TASK does */
	if (*o->session && !o->resume && !o->fork)
		o->cont = 1;
	if (*o->skill && (o->cont || o->resume || *r || o->fork))
		return bad(o, "--skill gives a skill at the start of a new "
			   "session: not with -c, --resume, --session, --rewind "
			   "or --fork");
	if (*r || o->fork) {
		/* (the option as it was given) */
		const char *opt = !strcmp(o->rewind_what, "code")
			? "rewind-code" : !strcmp(o->rewind_what, "conversation")
			? "rewind-conversation" : "rewind";

		if (strspn(r, "0123456789abcdef") != strlen(r) ||
		    (*r && strlen(r) < 4))
			return bad(o, "--%s: '%s' is not a checkpoint id "
				   "(agent-snap list shows them)", opt, r);
		if (strlen(r) > 40)
			return bad(o, "--%s: '%s' is not a checkpoint id", opt, r);
		if (o->resume || o->cont || *o->child || o->list)
			return bad(o, "--rewind and --fork start a session: no "
				   "--continue, --resume, --child or --sessions");
		if (*r && o->fork)
			return bad(o, "--rewind and --fork go one at a time");
		if (o->fork && !o->ntask)
			return bad(o, "--fork needs a task");
		if (!strcmp(o->rewind_what, "code") && o->ntask)
			return bad(o, "--rewind-code takes no task: it puts back "
				   "the files only");
	}
	/* an empty call id would make the child a session of the
	 * directory's own */
	if (o->is_child && !*o->child)
		return bad(o, "--child: the call id is empty");
	if (*o->child) {
		if (o->resume || o->cont || o->list)
			return bad(o, "--child starts a session: no --continue, "
				   "--resume or --sessions");
		if (!sess || !id_ok(sess, 0))
			return bad(o, "--child: AGENT_SESSION (the parent's "
				   "session) is not a session id");
	}
	return 0;
}

/* files named on the command line are taken from where we were started */
static int
absolute(struct ro *o, const char **p)
{
	if (**p && **p != '/' && !(*p = join(o, o->pwd, "/", *p)))
		return oom(o);
	return 0;
}

/* clean_path: our own utilities (sed, rm, flock, ...) are found on the
 * PATH without its entries inside the workspace (an activated .venv),
 * its relative and empty ones (the current directory) and those that
 * are not there now, after the directory of our own programs; commands
 * (tool-exec's) get the user's PATH as it was (user_path). */
static char *
clean_path(struct ro *o, const char *path, const char *dir)
{
	struct buf b = BUF_INIT(0);
	char *copy = strdup(path), *p, *next, real[PATH_MAX];

	if (!copy)
		return NULL;
	buf_append(&b, o->bin, strlen(o->bin));
	for (p = copy; p; p = next) {
		next = strchr(p, ':');
		if (next)
			*next++ = '\0';
		if (*p != '/' || !realpath(p, real) || !is_dir(real) ||
		    access(real, X_OK) < 0 || path_within(real, dir))
			continue;
		buf_printf(&b, ":%s", real);
	}
	free(copy);
	return keep(o, buf_detach(&b, NULL));
}

/* p's parent directory, in place (p absolute, resolved) */
static void
parent(char *p)
{
	char *s = strrchr(p, '/');

	if (s == p)
		p[1] = '\0';
	else if (s)
		*s = '\0';
}

/* -c, --resume and --sessions started in a subdirectory of a repository
 * (without -C) find the session where AGENTS.md is found: in the nearest
 * directory above, up to the repository's top, that has one and is the
 * user's (or root's).  Only a record that is a regular file counts.
 * dir: the workspace, changed when one is found. */
static int
session_above(struct ro *o, char *dir)
{
	char top[PATH_MAX], d[PATH_MAX], p[PATH_MAX + 32];
	struct stat st;

	snprintf(top, sizeof top, "%s", dir);
	for (;;) {
		snprintf(p, sizeof p, "%s/.git", top);
		if (exists(p) || !strcmp(top, "/"))
			break;
		parent(top);
	}
	snprintf(d, sizeof d, "%s", dir);
	for (;;) {
		snprintf(p, sizeof p, "%s/.git", top);
		if (!exists(p) || !strcmp(d, top))
			return 0;
		parent(d);
		snprintf(p, sizeof p, "%s/.agent/session.json", d);
		if (stat(p, &st) < 0 || !S_ISREG(st.st_mode) || is_link(p))
			continue;
		snprintf(p, sizeof p, "%s/.agent", d);
		if (is_link(p) || stat(d, &st) < 0 ||
		    (st.st_uid != geteuid() && st.st_uid != 0))
			continue;
		if (chdir(d) < 0)
			return fail(o, "cannot change to directory '%s': %s", d,
				    strerror(errno));
		if (!o->list)
			buf_printf(&o->out->say, "agent-run: the session of "
				   "'%s'\n", d);
		snprintf(dir, PATH_MAX, "%s", d);
		return 0;
	}
}

/* With a state directory, -c, --resume and --sessions started below the
 * workspace it serves (without -C) go on with its sessions there, as
 * session_above finds .agent: the workspace its mark names, when that is
 * above dir.  (The state directory itself is checked later, as for any
 * run.)  dir: the workspace, changed when so. */
static int
state_above(struct ro *o, char *dir)
{
	char ws[PATH_MAX + 2];
	struct ah_error err = { 0 };
	size_t n;

	if (state_dir_workspace(o->state_dir, ws, sizeof ws, &err) <= 0)
		return 0; /* nothing to go on with: said later */
	n = strlen(ws);
	if (*ws != '/' || n >= PATH_MAX || !strncmp(ws, dir, n + 1) ||
	    strncmp(ws, dir, n) || (dir[n] != '/' && strcmp(ws, "/")))
		return 0;
	if (chdir(ws) < 0)
		return fail(o, "cannot change to directory '%s': %s", ws,
			    strerror(errno));
	if (!o->list)
		buf_printf(&o->out->say, "agent-run: the session of '%s'\n",
			   ws);
	memcpy(dir, ws, n + 1); /* (n < PATH_MAX) */
	return 0;
}

/* The home directory (or a directory above it, or /) as the workspace
 * would make ~/.bashrc, ~/.ssh/authorized_keys and the trust store the
 * model's to write: refused, unless --allow-home; even then those stay
 * read-only in the sandbox (AGENT_PROTECT, tool-exec(1)).  A start-up
 * file that is a symbolic link has its target kept; one that does not
 * exist can still be created (see agent-run(1)). */
static int
home_check(struct ro *o, const char *dir)
{
	static const char *const files[] = {
		".bashrc", ".bash_profile", ".bash_login", ".bash_logout",
		".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin",
		".zlogout", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".login",
		".logout", ".inputrc", ".pam_environment", ".xprofile",
		".xsession", ".xsessionrc", ".ssh", ".gnupg", ".gitconfig",
		".config/git", ".config/fish", ".config/environment.d",
		".config/autostart", ".config/systemd",
		".config/agent-harness", NULL,
	};
	const char *h = getenv("HOME"), *x = getenv("XDG_CONFIG_HOME");
	const char *was = env_or("AGENT_PROTECT", NULL);
	char home[PATH_MAX] = "", f[2 * PATH_MAX], real[PATH_MAX];
	struct buf protect = BUF_INIT(0);
	const char *const *p;
	int rc;

	if (h && *h == '/' && (!realpath(h, home) || !is_dir(home)))
		home[0] = '\0';
	if (strcmp(dir, "/") && (!*home || !path_within(home, dir)))
		return 0;
	if (!o->allow_home && !o->list)
		return fail(o, "'%s' is your home directory, a directory above "
			    "it, or /: the model could write your shell's "
			    "start-up files, ~/.ssh and the harness's trust "
			    "store; work in a project's directory, or give "
			    "--allow-home", dir);
	if (was)
		buf_printf(&protect, "%s\n", was);
	for (p = files; *p; p++) {
		const char *keep_it = f;

		snprintf(f, sizeof f, "%s/%s", home, *p);
		if (is_link(f))
			keep_it = realpath(f, real) ? real : NULL;
		if (keep_it && exists(keep_it))
			buf_printf(&protect, "%s\n", keep_it);
	}
	if (x && *x == '/') {
		snprintf(f, sizeof f, "%s/agent-harness", x);
		if (exists(f))
			buf_printf(&protect, "%s\n", f);
	}
	/* the user's key (made now if it is not yet) and the last marks of
	 * the sessions beside it (agent-snap(1), agent-run(1) Sessions): a
	 * command that replaced it would void every mark and snapshot of
	 * the user's */
	{
		struct ah_error e = { 0 };
		char key[65];

		if (!o->list && user_key(key, &e) == 0 &&
		    user_key_dir(f, sizeof f, &e) == 0 && exists(f))
			buf_printf(&protect, "%s\n", f);
	}
	rc = export(o, "AGENT_PROTECT", protect.data ? protect.data : "");
	buf_free(&protect);
	if (rc < 0 || export(o, "AGENT_ALLOW_HOME", "1") < 0)
		return -1;
	return 0;
}

/* The user's key and the sessions' last marks (agent-snap(1), agent-run(1)
 * Sessions) inside the workspace (XDG_STATE_HOME there): made now if need
 * be, and kept read-only in the sandbox (AGENT_PROTECT), as home_check
 * keeps them when the workspace holds the home directory: a command that
 * replaced the key would void every mark and snapshot of the user's. */
static int
key_check(struct ro *o, const char *dir)
{
	struct ah_error e = { 0 };
	char kd[PATH_MAX], real[PATH_MAX], key[65];
	const char *was = env_or("AGENT_PROTECT", NULL);

	if (o->list || user_key_dir(kd, sizeof kd, &e) < 0 ||
	    !(path_within(kd, dir) ||
	      (realpath(kd, real) && path_within(real, dir))) ||
	    user_key(key, &e) < 0 || !realpath(kd, real))
		return 0;
	return export(o, "AGENT_PROTECT", was && *was ? join(o, was, "\n", real)
		      : real);
}

/* The programs we run are those installed beside us, resolved once,
 * now: never a workspace directory's (an activated .venv on PATH), where
 * the model could have put an agent-step, or an rm, that would run
 * outside the sandbox with the API key (the utilities: clean_path). */
static int
programs_check(struct ro *o, const char *dir)
{
	static const char *const progs[] = {
		"agent-step", "agent-session", "agent-compact", "hook-perm",
		"hook-audit", "tool-exec", "todo-write", "agent-snap", "hook-cc",
		NULL,
	};
	const char *const *p;
	char f[PATH_MAX + 32];
	const char *was;
	struct stat st;

	if (path_within(o->bin, dir)) {
		if (!o->allow_home)
			return fail(o, "the harness's programs ('%s') are inside "
				    "the workspace '%s', where the model could "
				    "change them: install them elsewhere, or work "
				    "in another directory", o->bin, dir);
		/* --allow-home (installed in ~/.local, say): kept
		 * read-only too */
		was = env_or("AGENT_PROTECT", NULL);
		if (export(o, "AGENT_PROTECT", was ? join(o, was, "\n", o->bin)
			   : o->bin) < 0)
			return -1;
	}
	for (p = progs; *p; p++) {
		snprintf(f, sizeof f, "%s/%s", o->bin, *p);
		if (stat(f, &st) < 0 || !S_ISREG(st.st_mode) ||
		    access(f, X_OK) < 0)
			return fail(o, "'%s' is missing: the harness is not "
				    "installed whole", f);
	}
	return 0;
}

/* Runs bin/prog with args, stdin and stdout on /dev/null, and its stderr
 * into *err (64 KiB of it kept); model and api (not NULL) as
 * AGENT_MODEL and AGENT_API.  Its exit status, or -1. */
static int
run(struct ro *o, const char *prog, const char **args, const char *model,
    const char *api, struct buf *err)
{
	char path[PATH_MAX + 32], b[4096];
	int fd[2], st, null;
	ssize_t n;
	pid_t pid;

	snprintf(path, sizeof path, "%s/%s", o->bin, prog);
	if (pipe2(fd, O_CLOEXEC) < 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (pid == 0) {
		null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
		    dup2(fd[1], 2) < 0)
			_exit(127);
		if (model && (setenv("AGENT_MODEL", model, 1) < 0 ||
			      setenv("AGENT_API", api, 1) < 0))
			_exit(127);
		execv(path, (char *const *)args);
		_exit(127);
	}
	close(fd[1]);
	while ((n = read(fd[0], b, sizeof b)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		if (err->len < 65536)
			buf_append(err, b, (size_t)n);
	}
	close(fd[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Every option and file is checked before anything is written: a
 * mistake in one never puts the last session aside.  The model's
 * options and variables (AGENT_BASE_URL, ...) are agent-step's to check,
 * with its own words, now rather than at the first step. */
static int
files_check(struct ro *o, const char **model_args)
{
	struct buf err = BUF_INIT(0);
	const char *args[2 * MAXLIST + 16], *line, *end, *slash;
	char *msg;
	size_t n = 0, k;
	int st;

	args[n++] = "agent-step";
	for (k = 0; model_args[k]; k++)
		args[n++] = model_args[k];
	args[n++] = "--dry-run";
	args[n] = NULL;
	st = run(o, "agent-step", args, o->model, o->api, &err);
	if (st == 2) {
		for (line = err.data; line && *line; line = end + (*end != '\0')) {
			end = strchrnul(line, '\n');
			if (!strncmp(line, "agent-step: ", 12))
				buf_printf(&o->out->say, "agent-run: %.*s\n",
					   (int)(end - line - 12), line + 12);
		}
		buf_printf(&o->out->say, "Try 'agent-run --help' for more "
			   "information.\n");
		o->out->status = 2;
		buf_free(&err);
		return -1;
	}
	buf_free(&err);
	if (*o->out_file) {
		slash = strrchr(o->out_file, '/');
		msg = keep(o, strndup(o->out_file, (size_t)(slash - o->out_file)));
		if (!msg)
			return oom(o);
		if (!is_dir(*msg ? msg : "/"))
			return bad(o, "--output-last-message: no directory '%s' "
				   "for '%s'", msg, o->out_file);
	}
	if (*o->system) {
		struct stat sb;

		if (stat(o->system, &sb) < 0 || !S_ISREG(sb.st_mode) ||
		    access(o->system, R_OK) < 0)
			return bad(o, "--system: cannot read '%s'", o->system);
	}
	if (*o->policy) {
		const char *pargs[] = { "hook-perm", "--policy", o->policy,
					"--print-policy", NULL };

		st = run(o, "hook-perm", pargs, NULL, NULL, &err);
		if (st != 0) {
			while (err.len && err.data[err.len - 1] == '\n')
				err.data[--err.len] = '\0';
			msg = err.data ? err.data : "";
			if (!strncmp(msg, "hook-perm: ", 11))
				msg += 11;
			st = bad(o, "--policy: %s", msg);
		}
		buf_free(&err);
		return st == 0 ? 0 : -1;
	}
	return 0;
}

/* A task given as arguments takes a stdin that is not a terminal as its
 * context, bounded; read before anything is written: a too large one
 * changes nothing.  It is quoted between markers the data cannot hold:
 * a random one for this run (data that closed the quote could speak as
 * the user). */
static int
read_stdin(struct ro *o)
{
	struct buf ctx = BUF_INIT(0), task = BUF_INIT(0);
	unsigned char r[12];
	char mark[sizeof r * 2 + 1], b[8192];
	size_t i, j, raw = 0, want;
	ssize_t n;
	int rc = -1;

	o->typed = o->task_text;
	/* (at most one byte more than the bound, as head -c took it) */
	while (raw <= STDIN_MAX) {
		want = STDIN_MAX + 1 - raw;
		n = read(0, b, want < sizeof b ? want : sizeof b);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fail(o, "cannot read stdin: %s", strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		raw += (size_t)n;
		/* (as the shell read it: NUL bytes dropped) */
		for (i = j = 0; i < (size_t)n; i++)
			if (b[i])
				b[j++] = b[i];
		if (buf_append(&ctx, b, j) < 0) {
			oom(o);
			goto out;
		}
	}
	/* (and the trailing newlines) */
	while (ctx.len && ctx.data[ctx.len - 1] == '\n')
		ctx.data[--ctx.len] = '\0';
	if (ctx.len > STDIN_MAX) {
		bad(o, "stdin is larger than %d bytes: give the model a file to "
		    "read instead (stdin is attached to the task when it is not "
		    "a terminal; </dev/null detaches it)", STDIN_MAX);
		goto out;
	}
	rc = 0;
	if (!ctx.len)
		goto out;
	o->stdin_bytes = (long)ctx.len;
	do {
		if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
			rc = fail(o, "cannot read random bytes: %s",
				  strerror(errno));
			goto out;
		}
		for (i = 0; i < sizeof r; i++)
			snprintf(mark + 2 * i, 3, "%02x", r[i]);
	} while (strstr(ctx.data, mark));
	if (buf_printf(&task, "%s\n\nThe standard input, attached to the task "
		       "by agent-run, quoted as data between the two lines that "
		       "hold %s:\n--- stdin %s ---\n", o->task_text, mark,
		       mark) < 0 || buf_append(&task, ctx.data, ctx.len) < 0 ||
	    buf_printf(&task, "\n--- end of stdin %s ---", mark) < 0 ||
	    !(o->task_text = keep(o, buf_detach(&task, NULL))))
		rc = oom(o);
out:
	buf_free(&ctx);
	buf_free(&task);
	return rc;
}

/* where agent-run was started: $PWD when it names the current directory
 * (as the shell took it), else the physical path */
static const char *
start_dir(struct ro *o)
{
	const char *p = getenv("PWD");
	struct stat a, b;
	char *cwd;

	if (p && *p == '/' && stat(p, &a) == 0 && stat(".", &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return p;
	cwd = keep(o, getcwd(NULL, 0));
	return cwd ? cwd : "/";
}

/* export NAME='val' */
static void
put_export(struct ro *o, const char *name, const char *val)
{
	buf_printf(&o->out->sh, "export ");
	put_var(o, name, val);
}

/* The stages' environment, what the children of task calls inherit: the
 * model and its endpoint (a --base-url not passed on would send a child's
 * conversation to the default one), the workspace, the policy (tool-exec
 * keeps AGENT_POLICY read-only to commands), the sandbox, -y (a child
 * has it only when its parent has: AGENT_YES), the step budget, the
 * project files (--no-project-files holds for the children too) and
 * their budget, the checkpoints (the children's steps are checkpoints
 * too, or none are), the depth, and the context window that agent-step
 * and agent-compact read (off: none, nor AGENT_OUTPUTS, which the driver
 * sets in the state directory). */
static void
put_stage_env(struct ro *o, const char *dir, const char *yes,
	      const char *project)
{
	put_export(o, "AGENT_MODEL", o->model);
	put_export(o, "AGENT_API", o->api);
	put_export(o, "AGENT_WORKDIR", dir);
	if (*o->base_url) put_export(o, "AGENT_BASE_URL", o->base_url);
	if (*o->timeout) put_export(o, "AGENT_TIMEOUT", o->timeout);
	if (*o->max_tokens) put_export(o, "AGENT_MAX_TOKENS", o->max_tokens);
	if (*o->temperature)
		put_export(o, "AGENT_TEMPERATURE", o->temperature);
	if (*o->policy) put_export(o, "AGENT_POLICY", o->policy);
	put_export(o, "AGENT_SANDBOX", o->sandbox);
	put_export(o, "AGENT_SANDBOX_NETWORK", o->network);
	put_export(o, "AGENT_YES", yes);
	put_export(o, "AGENT_MAX_STEPS", o->max_steps);
	put_export(o, "AGENT_PROJECT_FILES", project);
	put_export(o, "AGENT_PROJECT_BYTES", o->project_bytes);
	put_export(o, "AGENT_CHECKPOINTS", o->checkpoints);
	if (*o->max_depth) put_export(o, "AGENT_MAX_DEPTH", o->max_depth);
	if (!strcmp(o->window, "off"))
		buf_printf(&o->out->sh,
			   "unset AGENT_CONTEXT_WINDOW AGENT_OUTPUTS\n");
	else
		put_export(o, "AGENT_CONTEXT_WINDOW", o->window);
}

/* The shell code: the variables, then the model's options as "$@". */
static void
put_all(struct ro *o, const char **model_args, const char *dir)
{
	struct buf *sh = &o->out->sh;
	const char *yes = o->yes ? "1" : "0", *v;
	struct buf flags = BUF_INIT(0);
	char n[32];
	int i;

	/* a child session: the parent's -y, and only it; its project
	 * files, if any */
	if (*o->child) {
		yes = env_or("AGENT_YES", "0");
		v = getenv("AGENT_PROJECT_FILES");
		if (v && !strcmp(v, "0"))
			o->project = 0;
	}
	put_exports(o);
	put_stage_env(o, dir, yes, o->project ? "1" : "0");
	put_var(o, "bin", o->bin);
	put_var(o, "user_path", o->user_path);
	put_var(o, "PATH", o->path);
	put_var(o, "dir", dir);
	put_var(o, "max_steps", o->max_steps);
	put_var(o, "policy", o->policy);
	put_var(o, "system", o->system);
	put_var(o, "checks", o->checks);
	put_var(o, "mcp_config", o->mcp_config);
	put_var(o, "sandbox", o->sandbox);
	put_var(o, "window", o->window);
	/* (none with --no-project-files: no project files, no skills) */
	put_var(o, "project_bytes", o->project ? o->project_bytes : "");
	put_var(o, "checkpoints", o->checkpoints);
	put_var(o, "out_file", o->out_file);
	put_var(o, "session", o->session);
	put_var(o, "child", o->child);
	put_var(o, "skill", o->skill);
	put_var(o, "rewind", o->rewind);
	put_var(o, "rewind_what", o->rewind_what);
	put_var(o, "hooks_file", o->hooks_file);
	put_var(o, "hooks_open", o->hooks_open ? "1" : "");
	put_var(o, "amode", o->amode);
	/* agent-session --prepare's, --open's and --close's options */
	buf_printf(&flags, "%s%s%s%s%s%s", o->resume ? " --resume" : o->cont ?
		   " --continue" : "", o->fork ? " --fork" : "",
		   o->quiet ? " -q" : "", *o->amode_opt ? " --mode-given" : "",
		   o->sandbox_opt ? " --sandbox-given" : "",
		   o->ephemeral ? " --ephemeral" : "");
	put_var(o, "flags", flags.len ? flags.data + 1 : "");
	/* the stages' options: a line per model call (its tokens, the share
	 * of the window in use), streamed on a terminal */
	put_var(o, "exec_opts", o->quiet ? "" : "-v");
	put_var(o, "step_opts", o->quiet ? "-q" : isatty(2) ? "-v --stream"
		: "-v");
	put_var(o, "quiet_opt", o->quiet ? "--quiet" : "");
	/* agent-session --answer's: the answer printed (with --json, the
	 * result event carries it), said to be streamed already */
	put_var(o, "answer_opts", o->json ? (!o->quiet && isatty(2) ?
		"--streamed" : "") : !o->quiet && isatty(2) ?
		"--print --streamed" : "--print");
	buf_free(&flags);
	put_var(o, "task", o->task_text);
	put_var(o, "typed", o->typed ? o->typed : "");
	snprintf(n, sizeof n, "%ld", o->stdin_bytes);
	put_var(o, "stdin_bytes", o->stdin_bytes >= 0 ? n : "");
	put_var(o, "yes", yes);
	put_var(o, "perm_opts", strcmp(yes, "1") ? "" : "--yes");
	put_flag(o, "resume", o->resume);
	put_flag(o, "fork", o->fork);
	put_flag(o, "list", o->list);
	put_flag(o, "print_policy", o->print_policy);
	put_flag(o, "json", o->json);
	put_flag(o, "ephemeral", o->ephemeral);
	put_flag(o, "project", o->project);
	put_flag(o, "step_mode", o->step_mode);
	put_flag(o, "quiet", o->quiet);
	buf_printf(sh, "set --");
	for (i = 0; model_args[i]; i++) {
		buf_putc(sh, ' ');
		put_quoted(sh, model_args[i]);
	}
	buf_putc(sh, '\n');
}

int
runopts(const char *bin, int argc, char **argv, struct runopts_out *out)
{
	struct ro *o = calloc(1, sizeof *o);
	struct buf keys = BUF_INIT(0), task = BUF_INIT(0), perr = BUF_INIT(0);
	const char *model_args[2 * MAXLIST + 16];
	char real[PATH_MAX], dir[PATH_MAX], dir0[PATH_MAX];
	int stop = 0, i, n = 0, rc = -1, pst;

	memset(out, 0, sizeof *out);
	if (!o) {
		buf_printf(&out->say, "agent-run: out of memory\n");
		return out->status = 1;
	}
	o->out = out;
	o->project = 1;
	o->stdin_bytes = -1;
	/* where we are installed, with the programs we run */
	if (!realpath(bin, real)) {
		fail(o, "cannot find where it is installed: '%s': %s", bin,
		     strerror(errno));
		goto out;
	}
	o->bin = real;
	/* the configuration file's mistakes first, then the options' */
	parse(o, argc, argv, &stop);
	perr = out->say;
	pst = out->status;
	memset(&out->say, 0, sizeof out->say);
	out->status = 0;
	if (configure(o, &keys) < 0)
		goto out;
	if (pst) {
		buf_append(&out->say, perr.data, perr.len);
		out->status = pst;
		goto out;
	}
	rc = -1;
	if (stop == O_HELP) {
		buf_printf(&out->sh, "printf '%%s' ");
		put_quoted(&out->sh, usage);
		buf_printf(&out->sh, "\nexit 0\n");
		rc = 0;
		goto out;
	}
	if (stop == O_VERSION) {
		buf_printf(&out->sh, "echo 'agent-run (agent-harness) %s'\n"
			   "exit 0\n", AH_VERSION);
		rc = 0;
		goto out;
	}
	if (defaults(o) < 0 || validate(o) < 0)
		goto out;
	if (o->print_config) {
		rc = print_config(o, keys.data ? keys.data : "") < 0 ? -1 : 0;
		goto out;
	}
	if (combine(o) < 0)
		goto out;

	/* the task words, and the model's options for agent-step and
	 * agent-compact */
	for (i = 0; i < o->ntask; i++)
		buf_printf(&task, "%s%s", i ? " " : "", o->task[i]);
	o->task_text = keep(o, buf_detach(&task, NULL));
	if (!o->task_text && !(o->task_text = keep(o, strdup(""))))
		goto out;
#define MODEL_ARG(opt, v) \
	if (*(v)) { model_args[n++] = (opt); model_args[n++] = (v); }
	MODEL_ARG("--base-url", o->base_url);
	MODEL_ARG("--timeout", o->timeout);
	MODEL_ARG("--max-tokens", o->max_tokens);
	MODEL_ARG("--temperature", o->temperature);
#undef MODEL_ARG
	for (i = 0; i < o->nparam; i++) {
		model_args[n++] = "--param";
		model_args[n++] = o->param[i];
	}
	model_args[n] = NULL;

	o->pwd = start_dir(o);
	if (absolute(o, &o->system) < 0 || absolute(o, &o->out_file) < 0 ||
	    absolute(o, &o->policy) < 0 || absolute(o, &o->hooks_file) < 0 ||
	    absolute(o, &o->mcp_config) < 0 || absolute(o, &o->state_dir) < 0)
		goto out;
	if (*o->state_dir && export(o, "AGENT_STATE_DIR", o->state_dir) < 0)
		goto out;
	/* (-C '' stays, as the shell's cd '' did) */
	if (chdir(*o->dir ? o->dir : ".") < 0 || !getcwd(dir, sizeof dir)) {
		fail(o, "cannot change to directory '%s%s'",
		     *o->dir == '-' ? "./" : "", o->dir);
		goto out;
	}
	snprintf(dir0, sizeof dir0, "%s", dir);
	o->user_path = env_or("PATH", "");
	if (!(o->path = clean_path(o, o->user_path, dir)))
		goto out;
	/* (a state directory holds the sessions wherever we are) */
	if (!o->dir_given && !*o->child && !*o->state_dir &&
	    !exists(".agent") &&
	    (o->cont || o->resume || o->list) && session_above(o, dir) < 0)
		goto out;
	if (!o->dir_given && !*o->child && *o->state_dir &&
	    (o->cont || o->resume || o->list) && state_above(o, dir) < 0)
		goto out;
	if (home_check(o, dir) < 0 || programs_check(o, dir) < 0 ||
	    key_check(o, dir) < 0)
		goto out;
	/* (again when the workspace changed) */
	if (strcmp(dir, dir0) && !(o->path = clean_path(o, o->path, dir)))
		goto out;
	if (setenv("PATH", o->path, 1) < 0) {
		oom(o);
		goto out;
	}
	if (!o->print_policy && !o->list && files_check(o, model_args) < 0)
		goto out;
	if (o->list && !o->print_policy && !*o->state_dir &&
	    is_dir(".agent") && is_link(".agent")) {
		fail(o, "'%s/.agent' is a symbolic link: refusing to read it",
		     dir);
		goto out;
	}
	if (!o->resume && *o->task_text && !*o->child && !o->list &&
	    !o->print_policy && !isatty(0) && read_stdin(o) < 0)
		goto out;
	put_all(o, model_args, dir);
	rc = 0;
out:
	buf_free(&keys);
	buf_free(&task);
	buf_free(&perr);
	for (i = 0; i < o->nown; i++)
		free(o->own[i]);
	free(o);
	if (rc < 0 && !out->status)
		out->status = 1;
	if (out->status)
		buf_reset(&out->sh);
	return out->status;
}

void
runopts_free(struct runopts_out *out)
{
	buf_free(&out->sh);
	buf_free(&out->say);
}
