/* agent-step: one call of the model.  See agent-step(1). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"

const char *progname = "agent-step";

static const char usage[] =
	"usage: agent-step [-qv] [-m MODEL] [--base-url URL] [--tools FILE]\n"
	"                  [options] < TRANSCRIPT\n"
	"\n"
	"Reads messages (JSON Lines), sends them to an OpenAI-compatible Chat\n"
	"Completions endpoint, and writes the assistant's message as one line.\n"
	"It calls the model whenever the messages read end with a user message\n"
	"or with a result for every call of the last assistant message.\n"
	"\n"
	"  -m, --model MODEL      the model ($AGENT_MODEL)\n"
	"      --profile NAME     the profile of the configuration file whose\n"
	"                         variables the environment does not set are\n"
	"                         taken ($AGENT_PROFILE; see agent-harness(5))\n"
	"      --base-url URL     the endpoint, up to /v1 ($AGENT_BASE_URL, else\n"
	"                         $OPENAI_BASE_URL, else https://api.openai.com/v1)\n"
	"      --api-key-file F   read the key from F (else $AGENT_API_KEY, else\n"
	"                         $OPENAI_API_KEY; none for local servers)\n"
	"      --api API          chat (Chat Completions), anthropic (the\n"
	"                         Messages API; key $ANTHROPIC_API_KEY, base\n"
	"                         https://api.anthropic.com/v1) or responses\n"
	"                         (OpenAI's Responses API) ($AGENT_API)\n"
	"      --tools FILE       tool definitions, as tool-exec --schema prints\n"
	"      --temperature T    sampling temperature\n"
	"      --max-tokens N     the most tokens of an answer\n"
	"      --param JSON       more request fields, an object (repeatable)\n"
	"      --stream           stream the answer; its text goes to stderr\n"
	"      --timeout SEC      connect timeout, and the most seconds between\n"
	"                         two data events of an answer; keep-alives do\n"
	"                         not count (60)\n"
	"      --deadline SEC     the most seconds for one answer, retries\n"
	"                         included; 0 for none ($AGENT_DEADLINE, 600)\n"
	"      --retries N        retries of connection errors, 408, 409, 429\n"
	"                         and 5xx (2)\n"
	"      --max-concurrent N the most requests in flight to the endpoint,\n"
	"                         machine-wide ($AGENT_MAX_CONCURRENT; none)\n"
	"      --max-cost USD     stop, exit 11, rather than make a request\n"
	"                         that would take the calls that share\n"
	"                         $AGENT_COST_FILE (or this run's) past USD\n"
	"                         ($AGENT_MAX_COST)\n"
	"      --events FD        write a wait event to descriptor FD when a\n"
	"                         request waited for the rate limit\n"
	"      --until-done       exit after an answer without tool calls\n"
	"      --history FILE     read FILE (a transcript) first, then stdin;\n"
	"                         never through a link, never a FIFO\n"
	"      --max-calls N      stop, exit 9, rather than call the model an\n"
	"                         N+1th time\n"
	"      --dry-run          print the request body instead of sending it\n"
	"      --answer           call nothing: print the text of the answer\n"
	"                         the transcript ends with (exit 1 if none)\n"
	"      --context-window N|auto|off  the model's window in tokens,\n"
	"                         auto (a table of known models, else 32768)\n"
	"                         or off (none, the default); with one, old\n"
	"                         tool output is left out past 3/4 of it\n"
	"                         ($AGENT_CONTEXT_WINDOW)\n"
	"      --outputs DIR      keep the text of left-out output in DIR\n"
	"                         ($AGENT_OUTPUTS)\n"
	"      --compact-at SHARE exit 10 rather than send more than SHARE of\n"
	"                         the window (0.8)\n"
	"  -q, --quiet            no streamed text, no retry notes on stderr\n"
	"  -v, --verbose          a line per call on stderr: request id, tokens,\n"
	"                         tokens so far\n"
	"  -h, --help             print this help and exit\n"
	"      --version          print the version and exit\n"
	"\n"
	"Exit status: 0 answered, 1 --answer found none, 2 usage, 3 I/O error,\n"
	"5 bad transcript, 6 refused by the API, 7 unreachable or failing\n"
	"after retries, 8 the answer cannot be used (cut by length, filtered,\n"
	"refused, a stop reason that is a failure or unknown, not an answer of\n"
	"the API), 9 --max-calls reached, 10 the context is full (compact it\n"
	"with agent-compact), 11 --max-cost reached, 130 or 143 interrupted.\n";

struct run {
	struct model *model;
	struct model_opts mo;
	cJSON *head;
	int dry_run, until_done, quiet, verbose, called, streamed_text;
	long calls, max_calls;
	long window;        /* tokens, 0: no budget */
	struct model_body body; /* the request, in parts */
	double compact_at;  /* share of the window */
	struct buf held; /* streamed text not shown yet (see on_text) */
	int efd;         /* --events, or -1 */
	cJSON *prices;          /* the price table */
	const cJSON *price;     /* the model's row, or NULL */
	double max_cost;        /* USD, or -1: none */
	const char *ledger;     /* $AGENT_COST_FILE, or NULL */
	double spent, last;     /* without a ledger: this run's calls */
};

/* What the calls that share the ledger spent, and the last one, into
 * *spent and *last.  0, or -1 (said). */
static int
spent_so_far(const struct run *r, double *spent, double *last)
{
	struct ah_error err = { 0 };

	if (!r->ledger) {
		*spent = r->spent;
		*last = r->last;
		return 0;
	}
	if (cost_ledger_read(r->ledger, spent, last, &err) < 0) {
		cli_report(&err);
		return -1;
	}
	return 0;
}

/* The price of the answer msg, added to it as cost_usd and to what was
 * spent, when the model is in the table. */
static void
price_answer(struct run *r, cJSON *msg)
{
	struct ah_error err = { 0 };
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(msg, "usage");
	double c;

	if (!r->price || !cJSON_IsObject(u))
		return;
	c = round(prices_cost(r->price, u) * 1e9) / 1e9;
	if (!cJSON_AddNumberToObject(msg, "cost_usd", c))
		cli_warn("out of memory: the answer's cost is not kept");
	r->spent += c;
	r->last = c;
	if (r->ledger && cost_ledger_add(r->ledger, c, &err) < 0)
		cli_report(&err);
}

static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
	interrupted = sig;
}

/* A diagnostic that quotes the server (its message, a request id):
 * the whole line is redacted last, whatever was redacted before.  An
 * error (cli_warn), or a note that is none (cli_note): a retry, the
 * figures of a request. */
static void
vsay_server(const struct run *r, int error, const char *fmt, va_list ap)
{
	const char *secrets[] = { r->mo.api_key, NULL };
	char *msg = NULL;

	if (vasprintf(&msg, fmt, ap) < 0) {
		cli_warn("(a message, lost: out of memory)");
		return;
	}
	redact(msg, secrets);
	if (error)
		cli_warn("%s", msg);
	else
		cli_note("%s", msg);
	free(msg);
}

static void
warn_server(const struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
warn_server(const struct run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay_server(r, 1, fmt, ap);
	va_end(ap);
}

static void
note_server(const struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
note_server(const struct run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay_server(r, 0, fmt, ap);
	va_end(ap);
}

/* Shows r->held[0..n) on stderr, without its escape sequences: none
 * reaches the terminal to move the cursor or set the clipboard. */
static void
show_held(struct run *r, size_t n)
{
	char *safe = utf8_for_terminal(r->held.data, n, TERM_KEEP_LINES, NULL);

	if (safe)
		fputs(safe, stderr);
	free(safe);
	memmove(r->held.data, r->held.data + n, r->held.len - n + 1);
	r->held.len -= n;
}

/* The streamed text, with the key we hold starred out should the server
 * echo it: the last strlen(key) - 1 bytes wait for the next piece, so
 * that a key split across pieces is whole when it is looked for. */
static void
on_text(void *ctx, const char *text)
{
	struct run *r = ctx;
	const char *secrets[] = { r->mo.api_key, NULL };
	size_t keep = r->mo.api_key ? strlen(r->mo.api_key) : 0, n;

	if (r->quiet)
		return;
	r->streamed_text = 1;
	if (buf_append(&r->held, text, strlen(text)) < 0) {
		/* out of memory: what is held is shown, the piece is not */
		show_held(r, r->held.len);
		return;
	}
	redact_exact(r->held.data, secrets);
	r->held.len = strlen(r->held.data);
	keep = keep ? keep - 1 : 0;
	if (r->held.len <= keep)
		return;
	n = utf8_floor(r->held.data, r->held.len, r->held.len - keep);
	if (n)
		show_held(r, n);
}

/* The end of a streamed answer: what is still held, then a newline. */
static void
end_text(struct run *r)
{
	if (!r->streamed_text)
		return;
	if (r->held.len)
		show_held(r, r->held.len);
	fputc('\n', stderr);
}

static void
on_retry(void *ctx, const char *why)
{
	struct run *r = ctx;

	/* a note, not an error: the retry may well succeed */
	if (!r->quiet)
		note_server(r, "%s", why);
}

/* A wait for the endpoint's rate limit: said once on stderr when it is
 * long, and a wait event (--events) when it is over. */
static void
on_wait(void *ctx, const struct ratelimit_wait *w)
{
	struct run *r = ctx;
	const char *session = getenv("AGENT_SESSION");
	cJSON *e;
	char *line;

	if (w->phase == RATELIMIT_WAITING) {
		if (!r->quiet)
			cli_warn("waiting %.0f s for the rate limit of %s",
				 w->seconds < 1 ? 1 : w->seconds, w->endpoint);
		return;
	}
	if (r->efd < 0)
		return;
	e = cJSON_CreateObject();
	if (!e || !cJSON_AddStringToObject(e, "type", "wait") ||
	    !cJSON_AddStringToObject(e, "session", session ? session : "") ||
	    !cJSON_AddStringToObject(e, "endpoint", w->endpoint) ||
	    !cJSON_AddNumberToObject(e, "seconds",
				     floor(w->seconds * 1000) / 1000) ||
	    !cJSON_AddStringToObject(e, "reason", w->reason) ||
	    !(line = cJSON_PrintUnformatted(e))) {
		cJSON_Delete(e);
		cli_warn("--events: out of memory");
		return;
	}
	cJSON_Delete(e);
	if (events_write(r->efd, line, strlen(line)) < 0 ||
	    events_write(r->efd, "\n", 1) < 0) {
		/* a reader that went away ends the events, not the step */
		r->efd = -1;
	}
	free(line);
}

/* An answer whose stop reason is not that of an answer (the tables of
 * agent-step(1), STOP REASONS): says why, and gives the exit status. */
static int
stop_failure(const struct run *r, const struct reply *reply, const char *rid)
{
	const char *field = r->mo.api == API_ANTHROPIC ? "stop_reason" :
			    r->mo.api == API_RESPONSES ? "status" :
			    "finish_reason";
	char where[256];
	int rc = ES_UNUSABLE;

	snprintf(where, sizeof where, "%s %.64s%s%.128s", field, reply->finish,
		 rid[0] ? ", request " : "", rid);
	switch (reply->end) {
	case END_LENGTH:
		warn_server(r, "the answer was cut short (%s); raise "
			    "--max-tokens", where);
		break;
	case END_FILTERED:
		warn_server(r, "the answer was withheld by a content filter "
			    "(%s)", where);
		break;
	case END_REFUSED:
		warn_server(r, "the model refused to answer (%s)%s%.2000s",
			    where, reply->why.len ? ": " : "",
			    reply->why.len ? reply->why.data : "");
		break;
	case END_CONTEXT:
		warn_server(r, "the context is full: the API stopped the answer "
			    "(%s)%s", where, r->window ? "; compact it "
			    "(agent-compact) and go on" : "");
		if (r->window)
			rc = ES_FULL;
		break;
	case END_FAILED:
		warn_server(r, "the answer is not usable: %s (%s%s%.32s)",
			    reply->end_why ? reply->end_why : "it failed",
			    where, reply->foreign[0] ? ", item " : "",
			    reply->foreign);
		break;
	default:
		warn_server(r, "the answer ended for a reason agent-step does "
			    "not know (%s): not taken as an answer", where);
		break;
	}
	return rc;
}

/* Calls the model for the messages so far and writes its answer.
 * Returns an exit status; *stop is set when the run is over. */
static int
step(struct run *r, struct chat *chat, int *stop)
{
	struct ah_error err = { 0 };
	const char *secrets[] = { r->mo.api_key, NULL };
	struct reply reply;
	const char *body;
	char rid[128];
	cJSON *msg;
	int rc = ES_OK;

	/* A signal may come while results of the interrupted calls arrive:
	 * never call the model with them. */
	if (interrupted) {
		*stop = 1;
		return 128 + (int)interrupted;
	}
	if (r->max_calls >= 0 && r->calls >= r->max_calls) {
		cli_warn("the step limit is reached: %ld model call%s",
			 r->max_calls, r->max_calls == 1 ? "" : "s");
		*stop = 1;
		return ES_STEPLIMIT;
	}
	r->calls++;
	/* the messages chat keeps are sent as they are, not copied */
	if (answer_request(chat, r->head, &r->body) < 0) {
		cli_warn("cannot build the request: out of memory");
		return ES_IO;
	}
	if (r->window && chat_estimate(chat) > r->compact_at * r->window) {
		cli_warn("the context is full: about %ld of the window's %ld "
			 "tokens; compact it (agent-compact) and go on",
			 chat_estimate(chat), r->window);
		*stop = 1;
		return ES_FULL;
	}
	if (r->max_cost >= 0) {
		/* the next request costs about what the last one did, or
		 * at least its prompt at the input price */
		double spent, last, est;

		if (spent_so_far(r, &spent, &last) < 0)
			return ES_IO;
		est = (double)chat_estimate(chat) * cJSON_GetObjectItemCaseSensitive(
			r->price, "input")->valuedouble / 1e6;
		if (last > est)
			est = last;
		if (spent + est > r->max_cost) {
			cli_warn("the cost limit is reached: $%.4f spent, and "
				 "the next request would cost about $%.4f, "
				 "past --max-cost $%g", spent, est,
				 r->max_cost);
			*stop = 1;
			return ES_COSTLIMIT;
		}
	}
	chat->dirty = 0;
	r->called = 1;
	if (r->dry_run) {
		/* the body in one piece, as a short one is sent */
		if (!(body = model_body_flat(&r->body, &err))) {
			cli_report(&err);
			return ES_IO;
		}
		if (cli_put_line(body, r->body.len, 1))
			rc = ES_IO;
		return rc;
	}
	reply_init(&reply, r->mo.max_answer);
	r->streamed_text = 0;
	/* what the request counts in the endpoint's budget of tokens */
	r->mo.tokens = (double)chat_estimate(chat);
	if (model_call(r->model, &r->mo, &r->body, &reply, rid, sizeof rid,
		       &err) < 0) {
		end_text(r);
		if (interrupted) {
			rc = 128 + (int)interrupted;
			*stop = 1;
			goto out;
		}
		warn_server(r, "%s", err.msg);
		/* with a budget, the driver compacts and goes on */
		rc = err.code == AH_ETOOLONG && r->window ? ES_FULL
			: cli_status(&err, ES_UNUSABLE);
		goto out;
	}
	end_text(r);
	if (reply.end > END_CALLS) {
		rc = stop_failure(r, &reply, rid);
		if (rc == ES_FULL)
			*stop = 1;
		goto out;
	}
	msg = reply_message(&reply, rid);
	if (!msg) {
		cli_warn("out of memory");
		rc = ES_IO;
		goto out;
	}
	/* A key the server echoes (in the text, the arguments, the usage)
	 * reaches neither the transcript nor the model again.  Only the
	 * key itself: the model may quote key-like strings on purpose. */
	redact_json_exact(msg, secrets);
	price_answer(r, msg);
	if (reply.refusal.len && !r->quiet)
		warn_server(r, "the model refused: %s", reply.refusal.data);
	if (r->verbose) {
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(msg, "usage");
		const cJSON *pt = cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens");
		const cJSON *ct = cJSON_GetObjectItemCaseSensitive(u,
								   "completion_tokens");

		char share[48] = "";

		if (r->window && cJSON_IsNumber(pt))
			snprintf(share, sizeof share, " (%.0f%% of the window)",
				 100.0 * pt->valuedouble / (double)r->window);
		/* and the session's tokens so far: the answers read, this
		 * one too */
		note_server(r, "request %s: %d prompt + %d completion tokens%s, "
			 "%d tool call%s; %.0f tokens so far",
			 rid[0] ? rid : "(no id)",
			 cJSON_IsNumber(pt) ? pt->valueint : 0,
			 cJSON_IsNumber(ct) ? ct->valueint : 0, share,
			 reply.ncalls, reply.ncalls == 1 ? "" : "s",
			 chat->tokens + usage_tokens(u));
	}
	if (jsonl_write(stdout, msg, &err) < 0) {
		cli_stdout_failed(errno);
		cJSON_Delete(msg);
		rc = ES_IO;
		goto out;
	}
	if (chat_add(chat, msg, 0, &err) < 0) {
		cli_report(&err);
		rc = ES_IO;
	}
	chat->dirty = 0;
	if (!reply.ncalls && r->until_done)
		*stop = 1;
	cJSON_Delete(msg);
out:
	reply_free(&reply);
	return rc;
}

/* Adds the members of a --param object to the request head.  0, or an
 * exit status. */
static int
add_params(cJSON *head, const char *json)
{
	cJSON *p = json_parse(json, strlen(json), NULL), *m;
	int rc = ES_OK;

	if (!cJSON_IsObject(p)) {
		cJSON_Delete(p);
		return cli_usage_error("--param: '%s' is not a JSON object", json);
	}
	while (!rc && (m = p->child)) {
		cJSON_DetachItemViaPointer(p, m);
		cJSON_DeleteItemFromObjectCaseSensitive(head, m->string);
		if (!cJSON_AddItemToObject(head, m->string, m)) {
			cJSON_Delete(m);
			cli_warn("out of memory");
			rc = ES_IO;
		}
	}
	cJSON_Delete(p);
	return rc;
}

static char *
read_key(const char *file)
{
	struct ah_error err = { 0 };
	char *data = NULL;
	size_t len;
	int rc = file_read(file, 8192, &data, &len, &err);

	if (rc <= 0) {
		if (rc == 0)
			cli_warn("cannot open '%s': %s", file, strerror(ENOENT));
		else
			cli_report(&err);
		return NULL;
	}
	data[strcspn(data, "\r\n")] = '\0';
	return data;
}

/* --answer: the text of the answer the transcript on stdin ends with.
 * Only its last message is parsed. */
static int
print_answer(void)
{
	struct ah_error err = { 0 };
	struct jsonl_reader in;
	struct buf last = BUF_INIT(0), text = BUF_INIT(0);
	unsigned long lineno = 0;
	cJSON *msg = NULL;
	int c, rc = ES_OK;

	jsonl_reader_init(&in, STDIN_FILENO, "stdin", 0);
	while ((c = jsonl_read_line(&in, &err)) > 0) {
		if (jsonl_blank(in.line.data, in.line.len))
			continue;
		buf_reset(&last);
		if (buf_append(&last, in.line.data, in.line.len) < 0) {
			ah_fail(&err, AH_ENOMEM, "cannot read stdin: %s",
				strerror(ENOMEM));
			c = -1;
			break;
		}
		lineno = in.lineno;
	}
	if (c < 0) {
		cli_report(&err);
		rc = cli_status(&err, ES_BADINPUT);
	} else if (!lineno) {
		cli_warn("stdin: no messages, so no answer");
		rc = ES_REJECTED;
	} else if (!cJSON_IsObject(msg = json_parse(last.data, last.len,
						     NULL))) {
		cli_warn("stdin: line %lu: not a JSON object", lineno);
		rc = ES_BADINPUT;
	} else if ((c = chat_answer_text(msg, &text)) < 0) {
		cli_warn("out of memory");
		rc = ES_IO;
	} else if (!c) {
		cli_warn("stdin: line %lu: the last message is not an answer "
			 "(the assistant's, without tool calls)", lineno);
		rc = ES_REJECTED;
	} else if (text.len) {
		/* on a terminal, the text without its escape sequences, as
		 * --stream shows it; into a pipe or a file, as it is */
		int tty = isatty(STDOUT_FILENO);
		char *safe = tty ? utf8_for_terminal(text.data, text.len,
						     TERM_KEEP_LINES, &text.len)
				 : NULL;

		if (tty && !safe) {
			cli_warn("out of memory");
			rc = ES_IO;
		} else if (cli_put_line(safe ? safe : text.data, text.len, 1))
			rc = ES_IO;
		free(safe);
	}
	cJSON_Delete(msg);
	buf_free(&last);
	buf_free(&text);
	jsonl_reader_free(&in);
	return rc;
}

/* The options, and the environment variables they default to. */
struct opts {
	const char *model, *tools, *history, *window, *outputs, *api, *base;
	char *key;          /* the key we hold; wiped and freed at the end */
	long maxcalls, maxtok, retries, concurrent;
	double temp, compact_at, max_cost;
	int stream, answer, nparams;
	int window_opt;     /* the window is --context-window's */
	int base_opt;       /* the base URL is --base-url's */
	int finished;       /* stdout is closed: --help, --version */
	int cost_opt;       /* the limit is --max-cost's */
	const char *params[64];
};

/* Reads the options into o and r->mo; an exit status when the program
 * ends here (--help, --version, a usage error, a key file that cannot
 * be read), else -1. */
static int
parse_options(int argc, char **argv, struct run *r, struct opts *o)
{
	enum { OPT_BASE = 256, OPT_KEYFILE, OPT_TOOLS, OPT_TEMP, OPT_MAXTOK,
	       OPT_PARAM, OPT_STREAM, OPT_TIMEOUT, OPT_RETRIES, OPT_UNTIL, OPT_DRY,
	       OPT_HISTORY, OPT_MAXCALLS, OPT_ANSWER, OPT_WINDOW, OPT_OUTPUTS,
	       OPT_COMPACTAT, OPT_API, OPT_DEADLINE, OPT_CONCURRENT, OPT_EVENTS,
	       OPT_MAXCOST, OPT_PROFILE };
	static const struct option longopts[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "base-url", required_argument, NULL, OPT_BASE },
		{ "api-key-file", required_argument, NULL, OPT_KEYFILE },
		{ "tools", required_argument, NULL, OPT_TOOLS },
		{ "temperature", required_argument, NULL, OPT_TEMP },
		{ "max-tokens", required_argument, NULL, OPT_MAXTOK },
		{ "param", required_argument, NULL, OPT_PARAM },
		{ "stream", no_argument, NULL, OPT_STREAM },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "deadline", required_argument, NULL, OPT_DEADLINE },
		{ "retries", required_argument, NULL, OPT_RETRIES },
		{ "max-concurrent", required_argument, NULL, OPT_CONCURRENT },
		{ "events", required_argument, NULL, OPT_EVENTS },
		{ "max-cost", required_argument, NULL, OPT_MAXCOST },
		{ "until-done", no_argument, NULL, OPT_UNTIL },
		{ "dry-run", no_argument, NULL, OPT_DRY },
		{ "history", required_argument, NULL, OPT_HISTORY },
		{ "max-calls", required_argument, NULL, OPT_MAXCALLS },
		{ "answer", no_argument, NULL, OPT_ANSWER },
		{ "context-window", required_argument, NULL, OPT_WINDOW },
		{ "api", required_argument, NULL, OPT_API },
		{ "outputs", required_argument, NULL, OPT_OUTPUTS },
		{ "compact-at", required_argument, NULL, OPT_COMPACTAT },
		{ "profile", required_argument, NULL, OPT_PROFILE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, ":m:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			o->model = optarg;
			break;
		case OPT_PROFILE: /* read first, by cli_config */
			break;
		case OPT_BASE:
			o->base = optarg;
			o->base_opt = 1;
			break;
		case OPT_KEYFILE:
			free(o->key);
			o->key = read_key(optarg);
			if (!o->key)
				return ES_IO;
			break;
		case OPT_TOOLS:
			o->tools = optarg;
			break;
		case OPT_TEMP:
			if (cli_number("--temperature", optarg, 0, 2, &o->temp))
				return ES_USAGE;
			break;
		case OPT_MAXTOK:
			if (cli_whole("--max-tokens", optarg, 1, 1000000000,
				      &o->maxtok))
				return ES_USAGE;
			break;
		case OPT_PARAM:
			if (o->nparams == 64)
				return cli_usage_error("too many --param");
			o->params[o->nparams++] = optarg;
			break;
		case OPT_STREAM:
			o->stream = 1;
			break;
		case OPT_TIMEOUT:
			if (cli_number("--timeout", optarg, 0.001, 1e6,
				       &r->mo.timeout))
				return ES_USAGE;
			break;
		case OPT_DEADLINE:
			if (cli_number("--deadline", optarg, 0, 1e7,
				       &r->mo.deadline))
				return ES_USAGE;
			break;
		case OPT_RETRIES:
			if (cli_whole("--retries", optarg, 0, 100, &o->retries))
				return ES_USAGE;
			break;
		case OPT_CONCURRENT:
			if (cli_whole("--max-concurrent", optarg, 1, 64,
				      &o->concurrent))
				return ES_USAGE;
			break;
		case OPT_EVENTS: {
			long fd;

			if (cli_whole("--events", optarg, 0, INT_MAX, &fd))
				return ES_USAGE;
			if (fcntl((int)fd, F_GETFD) < 0)
				return cli_usage_error("--events: descriptor %ld "
						       "is not open", fd);
			r->efd = (int)fd;
			break;
		}
		case OPT_MAXCOST:
			if (cli_number("--max-cost", optarg, 0, 1e9,
				       &o->max_cost))
				return ES_USAGE;
			o->cost_opt = 1;
			break;
		case OPT_UNTIL:
			r->until_done = 1;
			break;
		case OPT_DRY:
			r->dry_run = 1;
			break;
		case OPT_HISTORY:
			o->history = optarg;
			break;
		case OPT_ANSWER:
			o->answer = 1;
			break;
		case OPT_WINDOW:
			o->window = optarg;
			o->window_opt = 1;
			break;
		case OPT_API:
			o->api = optarg;
			break;
		case OPT_OUTPUTS:
			o->outputs = optarg;
			break;
		case OPT_COMPACTAT:
			if (cli_number("--compact-at", optarg, 0.1, 1,
				       &o->compact_at))
				return ES_USAGE;
			break;
		case OPT_MAXCALLS:
			if (cli_whole("--max-calls", optarg, 0, 1000000000,
				      &o->maxcalls))
				return ES_USAGE;
			break;
		case 'q':
			r->quiet = 1;
			break;
		case 'v':
			r->verbose = 1;
			break;
		case CLI_OPT_VERSION:
			o->finished = 1;
			return cli_version();
		case 'h':
			o->finished = 1;
			fputs(usage, stdout);
			return cli_finish(ES_OK);
		default:
			return cli_bad_option(argv, c);
		}
	}
	if (optind < argc)
		return cli_usage_error("unexpected argument '%s'", argv[optind]);
	return -1;
}

/* What the options leave to decide: the model, its window, the API, the
 * endpoint and the key.  An exit status, or -1 to go on. */
static int
settle(struct run *r, struct opts *o)
{
	const char *keyvar;
	long w = 0;

	if (!o->model)
		return cli_usage_error("no model: give --model or set AGENT_MODEL");
	if (o->window && cli_window(o->window_opt ? "--context-window" :
				    "AGENT_CONTEXT_WINDOW", o->window,
				    o->model, &w) < 0)
		return ES_USAGE;
	r->window = w;
	r->compact_at = o->compact_at;
	{
		struct ah_error err = { 0 };

		if (!(r->prices = prices_load(&err))) {
			cli_report(&err);
			return ES_USAGE;
		}
	}
	r->price = prices_find(r->prices, o->model);
	r->max_cost = o->max_cost;
	if (r->max_cost >= 0 && !r->price)
		return cli_usage_error("%s: the price of model '%s' is not "
				       "known (share/prices.json, or the "
				       "user's prices.json)", o->cost_opt ?
				       "--max-cost" : "AGENT_MAX_COST",
				       o->model);
	r->ledger = cli_env("AGENT_COST_FILE", NULL);
	if (o->api && !strcmp(o->api, "anthropic"))
		r->mo.api = API_ANTHROPIC;
	else if (o->api && !strcmp(o->api, "responses"))
		r->mo.api = API_RESPONSES;
	else if (o->api && strcmp(o->api, "chat"))
		return cli_usage_error("--api: unknown API '%s' (use chat, "
				       "anthropic or responses)", o->api);
	r->mo.base_url = o->base ? o->base : r->mo.api == API_ANTHROPIC ?
			 "https://api.anthropic.com/v1" :
			 cli_env("OPENAI_BASE_URL", NULL) ?
			 cli_env("OPENAI_BASE_URL", NULL) :
			 "https://api.openai.com/v1";
	/* http:// or https://, nothing else: a URL without its scheme
	 * (localhost:8080) would be taken as one of some other protocol */
	if (strncasecmp(r->mo.base_url, "http://", 7) &&
	    strncasecmp(r->mo.base_url, "https://", 8))
		return cli_usage_error("%s: '%.200s' is not an http:// or "
				       "https:// URL (e.g. "
				       "http://localhost:8080/v1)",
				       o->base_opt ? "--base-url" :
				       o->base ? "AGENT_BASE_URL" :
				       "OPENAI_BASE_URL", r->mo.base_url);
	keyvar = r->mo.api == API_ANTHROPIC ? "ANTHROPIC_API_KEY"
					    : "OPENAI_API_KEY";
	if (!o->key && cli_env("AGENT_API_KEY", keyvar) &&
	    !(o->key = strdup(cli_env("AGENT_API_KEY", keyvar)))) {
		cli_warn("out of memory");
		return ES_IO;
	}
	r->mo.api_key = o->key;
	r->mo.retries = (int)o->retries;
	r->max_calls = o->maxcalls;
	r->mo.interrupted = &interrupted;
	r->mo.on_text = o->stream ? on_text : NULL;
	r->mo.on_retry = on_retry;
	r->mo.on_wait = on_wait;
	r->mo.ctx = r;
	return -1;
}

/* The request head: model, tools, temperature, max_tokens, stream, and
 * the --param members.  An exit status, or -1 to go on. */
static int
build_head(struct run *r, const struct opts *o)
{
	struct ah_error err = { 0 };
	char *text = NULL;
	cJSON *t = NULL;
	size_t len;
	int i, rc = -1;

	r->head = cJSON_CreateObject();
	if (!r->head || !cJSON_AddStringToObject(r->head, "model", o->model))
		goto nomem;
	if (o->tools) {
		if (file_read(o->tools, 16u << 20, &text, &len, &err) <= 0) {
			if (!err.msg[0])
				cli_warn("cannot open '%s': %s", o->tools,
					 strerror(ENOENT));
			else
				cli_report(&err);
			rc = ES_IO;
			goto out;
		}
		t = json_parse(text, len, NULL);
		if (!cJSON_IsArray(t)) {
			rc = cli_usage_error("--tools: '%s' is not a JSON array "
					     "of tool definitions", o->tools);
			goto out;
		}
		if (t->child && !cJSON_AddItemToObject(r->head, "tools", t))
			goto nomem;
		if (t->child)
			t = NULL;
	}
	if ((o->temp >= 0 && !cJSON_AddNumberToObject(r->head, "temperature",
						       o->temp)) ||
	    (o->maxtok > 0 && !cJSON_AddNumberToObject(r->head, "max_tokens",
							(double)o->maxtok)))
		goto nomem;
	if (o->stream) {
		cJSON *so;

		if (!cJSON_AddTrueToObject(r->head, "stream") ||
		    !(so = cJSON_AddObjectToObject(r->head, "stream_options")) ||
		    !cJSON_AddTrueToObject(so, "include_usage"))
			goto nomem;
	}
	for (i = 0; i < o->nparams; i++)
		if ((rc = add_params(r->head, o->params[i])) != ES_OK)
			goto out;
	/* the Responses API's prompt cache is routed by this key: the
	 * session's requests go where their prefix is cached */
	if (r->mo.api == API_RESPONSES && cli_env("AGENT_SESSION", NULL) &&
	    !cJSON_GetObjectItemCaseSensitive(r->head, "prompt_cache_key") &&
	    !cJSON_AddStringToObject(r->head, "prompt_cache_key",
				     cli_env("AGENT_SESSION", NULL)))
		goto nomem;
	rc = -1;
	r->mo.stream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r->head,
								   "stream"));
	{
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(r->head, "n");

		r->mo.choices = cJSON_IsNumber(n) && n->valuedouble > 1 ? 2 : 1;
	}
	goto out;
nomem:
	cli_warn("out of memory");
	rc = ES_IO;
out:
	cJSON_Delete(t);
	free(text);
	return rc;
}

/* --history: the transcript read first, and answered when it waits for
 * an answer.  An exit status. */
static int
read_history(struct run *r, struct chat *chat, const char *history,
	     int *stop)
{
	struct ah_error err = { 0 };
	struct jsonl_reader h;
	cJSON *msg;
	/* never through a symbolic link, never a FIFO or a device
	 * (agent-run's is .agent/transcript.jsonl) */
	int fd = agent_open(history, NULL, O_RDONLY, 0, &err), c;

	if (fd < 0) {
		cli_report(&err);
		return ES_IO;
	}
	jsonl_reader_init(&h, fd, history, 0);
	while ((c = jsonl_read_object(&h, &msg, &err)) > 0) {
		c = chat_add(chat, msg, h.lineno, &err);
		cJSON_Delete(msg);
		if (c < 0) {
			cli_warn("%s: %s", history, err.msg);
			c = -2;
			break;
		}
	}
	if (c == -1)
		cli_report(&err);
	jsonl_reader_free(&h);
	close(fd);
	if (c < 0)
		return cli_status(&err, ES_BADINPUT);
	if (chat_ready(chat))
		return step(r, chat, stop);
	if (calls_pending(&chat->calls)) {
		/* nothing downstream will ever answer them */
		cli_warn("%s: tool calls of line %lu have no result", history,
			 chat->calls_line);
		return ES_BADINPUT;
	}
	if (r->until_done)
		*stop = 1; /* the history ends with the final answer */
	return ES_OK;
}

/* The messages of stdin as they come, the model called whenever they
 * wait for an answer and the input has caught up.  An exit status. */
static int
read_input(struct run *r, struct chat *chat, int history, int *stop)
{
	struct ah_error err = { 0 };
	struct jsonl_reader in;
	cJSON *msg;
	int c, rc = ES_OK;

	jsonl_reader_init(&in, STDIN_FILENO, "stdin", 0);
	while (!*stop && !rc) {
		c = interrupted ? -1 : jsonl_read_object(&in, &msg, &err);
		if (c < 0 && interrupted) {
			rc = 128 + (int)interrupted;
			break;
		}
		if (c < 0) {
			cli_report(&err);
			rc = cli_status(&err, ES_BADINPUT);
			break;
		}
		if (c == 0) {
			if (chat->dirty && chat_ready(chat))
				rc = step(r, chat, stop);
			else if (!r->called && !history) {
				cli_warn("stdin: nothing to answer: %s",
					 !chat->count ? "no messages"
					 : chat->last_assistant
					 ? "the last message is the assistant's"
					 : "tool calls wait for results");
				rc = ES_BADINPUT;
			}
			/* else the history was all there was to answer */
			break;
		}
		if (chat_add(chat, msg, in.lineno, &err) < 0) {
			cJSON_Delete(msg);
			cli_warn("stdin: %s", err.msg);
			rc = cli_status(&err, ES_BADINPUT);
			break;
		}
		cJSON_Delete(msg);
		/* Call once the input has caught up, so that a whole
		 * transcript is one call, and a live ring one per turn. */
		if (chat_ready(chat) && !jsonl_ready(&in))
			rc = step(r, chat, stop);
	}
	jsonl_reader_free(&in);
	return rc;
}

/* The key lives in this process: a crash must not write it to a core
 * file in the workspace, and no other process of the user (a command
 * the model runs) may read our memory or environment through
 * /proc/PID/mem, /proc/PID/environ or ptrace.  Before the key is read;
 * it cannot fail, but if it did we would not go on. */
static int
guard_key(void)
{
	struct rlimit nocore = { 0, 0 };

	if (setrlimit(RLIMIT_CORE, &nocore) < 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		cli_warn("cannot keep the key out of core files: %s",
			 strerror(errno));
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct ah_error err = { 0 };
	struct opts o = { 0 };
	struct run r = { 0 };
	struct chat chat;
	struct sigaction sa;
	int stop = 0, rc;

	chat_init(&chat);
	model_body_init(&r.body, NULL, NULL);
	if (guard_key() < 0)
		return ES_IO;
	/* the configuration file under the environment, before it is read */
	if (cli_config(argc, argv) < 0)
		return ES_USAGE;
	o.model = cli_env("AGENT_MODEL", NULL);
	o.window = cli_env("AGENT_CONTEXT_WINDOW", NULL);
	o.outputs = cli_env("AGENT_OUTPUTS", NULL);
	o.api = cli_env("AGENT_API", NULL);
	o.base = cli_env("AGENT_BASE_URL", NULL);
	o.maxcalls = o.maxtok = -1;
	o.retries = 2;
	o.max_cost = -1;
	r.efd = -1;
	o.temp = -1;
	o.compact_at = 0.8;
	r.mo.timeout = 60;
	/* as the official SDKs' request timeout, but for the whole answer */
	r.mo.deadline = 600;
	r.mo.max_answer = 64u << 20;
	/* a piece of text is an event's, bounded by the answer's bound */
	r.held = (struct buf)BUF_INIT(r.mo.max_answer);
	if (cli_env("AGENT_DEADLINE", NULL) &&
	    cli_number("AGENT_DEADLINE", cli_env("AGENT_DEADLINE", NULL), 0,
		       1e7, &r.mo.deadline))
		rc = ES_USAGE;
	else if (cli_env("AGENT_MAX_COST", NULL) &&
		 cli_number("AGENT_MAX_COST", cli_env("AGENT_MAX_COST", NULL),
			    0, 1e9, &o.max_cost))
		rc = ES_USAGE;
	else if (cli_env("AGENT_MAX_CONCURRENT", NULL) &&
		 cli_whole("AGENT_MAX_CONCURRENT",
			   cli_env("AGENT_MAX_CONCURRENT", NULL), 1, 64,
			   &o.concurrent))
		rc = ES_USAGE;
	else if ((rc = parse_options(argc, argv, &r, &o)) >= 0)
		;
	else if (o.answer)
		rc = print_answer();
	else if ((rc = settle(&r, &o)) >= 0 || (rc = build_head(&r, &o)) >= 0)
		;
	else {
		signal(SIGPIPE, SIG_IGN);
		memset(&sa, 0, sizeof sa);
		/* no SA_RESTART: a blocked read returns */
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		rc = ES_OK;
		if (!r.dry_run && !(r.model = model_new(&r.mo, &err))) {
			cli_report(&err);
			rc = ES_IO;
		}
		/* the budget every session of the endpoint shares */
		if (!rc && !r.dry_run &&
		    !(r.mo.rl = ratelimit_open(r.mo.base_url, r.mo.api_key,
					       (int)o.concurrent, &err))) {
			cli_report(&err);
			rc = ES_IO;
		}
		chat.api = r.mo.api;
		if (r.window)
			chat_budget_default(&chat.budget, r.window, o.outputs);
		if (!rc && o.history)
			rc = read_history(&r, &chat, o.history, &stop);
		if (!rc && !stop)
			rc = read_input(&r, &chat, o.history != NULL, &stop);
		model_free(r.model);
		ratelimit_free(r.mo.rl);
		if (!r.dry_run)
			model_global_cleanup();
	}
	if (o.key) {
		memset(o.key, 0, strlen(o.key));
		free(o.key);
	}
	chat_free(&chat);
	buf_free(&r.held);
	model_body_free(&r.body);
	cJSON_Delete(r.head);
	cJSON_Delete(r.prices);
	return o.finished ? rc : cli_finish(rc);
}
