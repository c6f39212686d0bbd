/*
 * harness.h: the code the agent-harness programs share.
 *
 * Nothing in lib/ prints or exits.  A function that can fail returns -1 (or
 * a documented status) and fills a struct ah_error with "what failed: why";
 * the program decides how to word it and which exit code to use.
 *
 * Ownership: a function returning char * or cJSON * hands the caller a new
 * object to free (free() or cJSON_Delete()), unless its comment says
 * otherwise.  Arguments are borrowed, never consumed.
 */
#ifndef HARNESS_H
#define HARNESS_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include <cjson/cJSON.h>

/* The release, set by the Makefile. */
#ifndef AH_VERSION
#define AH_VERSION "unknown"
#endif

/* --- error.c: the error every fallible function fills ------------------ */

struct ah_error {
	int code;       /* an AH_E* value, 0 when nothing failed */
	char msg[1024]; /* "what failed: why", lowercase, no full stop */
};

enum {
	AH_EOK = 0,
	AH_ENOMEM,   /* out of memory */
	AH_EIO,      /* a read, write or system call failed */
	AH_EFORMAT,  /* input that is not what was expected */
	AH_ETOOBIG,  /* input over a documented bound */
	AH_EINTR,    /* a signal interrupted a blocking call */
	AH_ENET,     /* the server could not be reached, or broke off */
	AH_EAPI,     /* the API refused the request */
	AH_EAPIRETRY, /* the API failed (429, 5xx) and retries ran out */
	AH_ETOOLONG, /* the API refused the request as too long for the model */
};

/* Sets err (when not NULL) and returns -1, so that `return ah_fail(...)`
 * reads as one statement.  The message is printf-formatted. */
int ah_fail(struct ah_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Like ah_fail, with ": strerror(errnum)" appended. */
int ah_fail_errno(struct ah_error *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* --- buf.c: a growable byte buffer with a maximum size ----------------- */

struct buf {
	char *data;  /* always NUL-terminated when not NULL */
	size_t len;
	size_t cap;
	size_t max;  /* the most it may hold; 0 means no bound */
};

#define BUF_INIT(maxsize) { NULL, 0, 0, (maxsize) }

/* Each returns 0, or -1 when memory runs out or max would be passed; the
 * buffer is left as it was on failure. */
int buf_append(struct buf *b, const void *data, size_t len);
int buf_putc(struct buf *b, char c);
int buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void buf_reset(struct buf *b);
void buf_free(struct buf *b);
/* Hands the storage (NUL-terminated, maybe NULL for an empty buffer) to the
 * caller, who now owns it; the buffer is empty afterwards. */
char *buf_detach(struct buf *b, size_t *len);

/* --- utf8.c: checking and repairing UTF-8 ------------------------------ */

/* The length of the longest prefix of s[0..n) that is well-formed UTF-8
 * (no overlong forms, no surrogates, nothing above U+10FFFF); n when all
 * of it is. */
size_t utf8_valid_prefix(const char *s, size_t n);

enum {
	UTF8_KEEP_NUL = 0,
	UTF8_REPLACE_NUL = 1, /* NUL bytes become U+FFFD too */
};

/* A copy of s[0..n) in which every ill-formed sequence is replaced by
 * U+FFFD (one per maximal ill-formed subpart, as Unicode recommends), and
 * NUL bytes too when flags has UTF8_REPLACE_NUL.  NULL when out of
 * memory.  *outlen (if not NULL) receives the length. */
char *utf8_sanitize(const char *s, size_t n, int flags, size_t *outlen);

/* The largest i <= pos at which cutting s[0..n) splits no UTF-8
 * sequence; a sequence that s itself ends in the middle of counts as
 * split, so utf8_floor(s, n, n) drops it. */
size_t utf8_floor(const char *s, size_t n, size_t pos);

/* Length in bytes of s[0..n) after removing leading and trailing white
 * space as Python's str.strip() sees it (ASCII and Unicode spaces);
 * *start receives the offset of the first byte kept. */
size_t utf8_strip(const char *s, size_t n, size_t *start);

enum {
	TERM_KEEP_LINES = 1, /* newlines and tabs pass as they are */
	TERM_SHOW_HIDDEN = 2, /* invisible characters as \u{XXXX} too */
};

/* A copy of s[0..n) that is safe to write to a terminal: nothing in it
 * can move the cursor, rewrite a line, set the title or the clipboard.
 * C0 controls (but newline and tab with TERM_KEEP_LINES) and DEL become
 * \xnn, C1 controls \u{XXXX}, and each byte that is not well-formed
 * UTF-8 \xnn.  With TERM_SHOW_HIDDEN, what a reader cannot see becomes
 * \u{XXXX} too: bidirectional controls (which reorder what is shown),
 * zero-width and other invisible format characters, line and paragraph
 * separators, tag characters.  NULL when out of memory. */
char *utf8_for_terminal(const char *s, size_t n, int flags, size_t *outlen);

/* --- text.c: bounded text for the model ------------------------------ */

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

/* --- jsonl.c: JSON Lines in and out ------------------------------------ */

#define JSONL_MAX_LINE (64u << 20) /* default bound on one input line */

struct jsonl_reader {
	int fd;
	const char *name;     /* for messages: "stdin", a file name */
	unsigned long lineno; /* of the line last returned */
	int partial;          /* that line ended at EOF, without newline */
	int eof;              /* end of input was seen */
	struct buf line;      /* the line last returned, without newline */
	char *in;             /* bytes read but not yet returned */
	size_t inpos, inlen;
};

/* Starts reading fd (not closed by jsonl_reader_free); max bounds one line
 * (0 means JSONL_MAX_LINE).  -1 when out of memory. */
int jsonl_reader_init(struct jsonl_reader *r, int fd, const char *name,
		      size_t max);
void jsonl_reader_free(struct jsonl_reader *r);

/* Reads the next line, without its newline, into r->line.  Returns 1 for a
 * line, 0 at end of input, -1 on a read error or a line over the bound.
 * A last line without a newline still counts as a line.  A read
 * interrupted by a signal is an error with code AH_EINTR. */
int jsonl_read_line(struct jsonl_reader *r, struct ah_error *err);

/* Nonzero when a complete line can be returned without waiting: one is
 * buffered, or the descriptor has data or end of input to give. */
int jsonl_ready(struct jsonl_reader *r);

/* Nonzero when s[0..n) is only spaces, tabs and carriage returns: a line
 * the readers skip. */
int jsonl_blank(const char *s, size_t n);

/* Reads the next line that is not blank and parses it; it must be one JSON
 * object.  Invalid UTF-8 in it is replaced by U+FFFD.  Returns 1 and sets
 * *out, 0 at end of input, -1 on error (the message names the line). */
int jsonl_read_object(struct jsonl_reader *r, cJSON **out,
		      struct ah_error *err);

/* Parses s[0..n) as exactly one JSON value (white space around it allowed),
 * after repairing invalid UTF-8 and lone surrogate escapes (both become
 * U+FFFD).  NULL on a syntax error, with the byte
 * offset of the error in *erroff (when not NULL). */
cJSON *json_parse(const char *s, size_t n, size_t *erroff);

/* A file of lines whose last line was torn (a crash in the middle of a
 * write: no newline at the end) is cut back to its last complete line.
 * *cut receives the bytes removed (0 when the file was whole).  fd must
 * be open for reading and writing. */
int jsonl_repair_tail(int fd, size_t *cut, struct ah_error *err);

/* Writes obj as one compact line and flushes.  0, or -1 on a write error,
 * with errno that of the failed write. */
int jsonl_write(FILE *fp, const cJSON *obj, struct ah_error *err);

/* Nonzero when the object has two members with the same key, at any depth;
 * *key (when not NULL) points at the first such key inside obj. */
int json_has_duplicate_keys(const cJSON *obj, const char **key);

/* --- calls.c: tool calls waiting for results ------------------------- */

/* The tool calls of the last assistant message, and which have a result. */
struct calls {
	cJSON *list;         /* a copy of its tool_calls, or NULL */
	unsigned char *done; /* done[i]: call i has a result */
	int n;
};

void calls_init(struct calls *c);
void calls_free(struct calls *c);
/* Takes the next message of a transcript into account: an assistant
 * message starts a new set of calls, a tool message answers one, a user
 * message ends the set.  -1 when out of memory. */
int calls_feed(struct calls *c, const cJSON *msg);
/* How many calls still wait for a result. */
int calls_pending(const struct calls *c);
/* The id of a call object ("" when it has none). */
const char *call_id(const cJSON *call);

/* --- chat.c: the conversation agent-step sends ----------------------- */

/* The messages so far, each checked and stripped to the fields the API
 * defines, kept serialised: a request is one concatenation, whatever the
 * length of the history. */
/* One message of a chat, as it is sent. */
struct chat_msg {
	size_t off, len;   /* where it is in chat.msgs (without the comma) */
	size_t bytes;      /* a tool result: the bytes of its text; else 0 */
	long prompt;       /* an answer: its usage.prompt_tokens, or -1 */
	size_t point;      /* an answer: the bytes of messages it answered */
	char *what;        /* a tool result: its call, name and arguments */
	char *id;          /* a tool result: its tool_call_id */
	int stubbed;       /* a tool result sent as a stub */
	char role;         /* 's' (system, developer), 'u', 'a' or 't' */
};

/* The context budget (see agent-step(1), CONTEXT).  With a window, the
 * text of old tool results above stub_min bytes is left out of what is
 * sent, a stub in its place, whenever the estimate passes stub_at of the
 * window: all such results at once but the last keep, so that the
 * request changes at few points and its prefix stays the same between
 * them (prompt caches keep hitting).  The decision depends only on the
 * messages, so a transcript read again gives the same requests. */
struct chat_budget {
	long window;          /* tokens; 0: no budget, nothing is left out */
	double stub_at;       /* share of the window */
	size_t stub_min;      /* bytes */
	int keep;             /* the newest tool results always sent whole */
	const char *outputs;  /* where left-out texts are written, or NULL */
};

struct chat {
	struct buf msgs;      /* the messages, JSON, separated by commas */
	int count;
	struct chat_msg *m;   /* count of them */
	size_t capm;
	int *view;            /* the messages sent, in order: nview of them */
	int nview;
	struct chat_budget budget;
	int api;              /* enum model_api: API_ANTHROPIC keeps the
			       * thinking_blocks of answers, to send back */
	int stubs;            /* tool results left out so far */
	int compactions;      /* compaction entries read */
	int compacted;        /* the message of the last one, or -1 */
	int last_assistant;   /* the last message is the assistant's */
	int dirty;            /* set by chat_add; the caller clears it */
	struct buf req;       /* the last request body */
	struct calls calls;   /* the calls of the last assistant message */
	unsigned long calls_line;
};

void chat_init(struct chat *c);
void chat_free(struct chat *c);
/* Adds the message read at line.  A transcript the API would refuse is an
 * AH_EFORMAT error naming the line: an unknown role, a message other than
 * a tool result while calls wait for results, a result no call waits for. */
int chat_add(struct chat *c, const cJSON *msg, unsigned long line,
	     struct ah_error *err);
/* Nonzero when the model is to be called: there are messages, the last is
 * not the assistant's, and no call waits for a result. */
int chat_ready(const struct chat *c);
/* The tokens the next request is estimated to take: the server's
 * usage.prompt_tokens for the last answer, plus the bytes added since
 * (less those left out since) at CHAT_BYTES_PER_TOKEN; without usage,
 * the bytes of the messages at that rate. */
#define CHAT_BYTES_PER_TOKEN 3
long chat_estimate(const struct chat *c);
/* The budget agent-step and agent-compact use: window tokens, stubs past
 * half of it for results over 1 KB but the newest 3, their texts kept in
 * the directory outputs (NULL: not kept apart). */
void chat_budget_default(struct chat_budget *b, long window,
			 const char *outputs);
/* The window of a well-known model name (a prefix table), else 0. */
long chat_model_window(const char *model);
/* Applies the budget before a request is made (chat_request does it
 * too): -1 when out of memory. */
int chat_prepare(struct chat *c);
/* The request body: head (an object with "model" and the other fields)
 * with "messages" spliced in.  It is kept in c, valid until the next call
 * (a 10 MB body is built in the same memory every step, without faulting
 * in new pages); NULL when out of memory. */
const char *chat_request(struct chat *c, const cJSON *head, size_t *len);
/* Nonzero when a message of role can be made of text alone: system,
 * developer, user or assistant (a tool message needs a call id). */
int chat_text_role(const char *role);
/* The message {"role": role, "content": text[0..n)} as one compact JSON
 * line (NUL-terminated, no newline; the caller frees), with ill-formed
 * UTF-8 and NUL bytes in text replaced by U+FFFD.  A role chat_text_role
 * refuses is an AH_EFORMAT error.  NULL on error. */
char *chat_text_message(const char *role, const char *text, size_t n,
			size_t *outlen, struct ah_error *err);
/* When msg is an answer (the assistant's message without tool calls),
 * appends its text to out: a string content as it is, the "text" of each
 * text part of an array, nothing for null.  1 for an answer, 0 for any
 * other message, -1 when out of memory. */
int chat_answer_text(const cJSON *msg, struct buf *out);

/* --- compact.c: a summary in place of the start of a chat ------------- */

/* A compaction entry is a user message whose "compaction" member holds
 * {"keep": N, ...}: from it on, chat_add sends the system messages the
 * chat began with, the entry (the summary), the last N messages sent
 * before it, and what follows.  The transcript keeps every message. */

/* The summary instruction agent-compact sends by default. */
const char *compact_default_prompt(void);
/* How many of the newest messages sent to keep whole: those within
 * keep_bytes, at least one, never a tool result without its call.  -1
 * when nothing would be left to summarise. */
int compact_keep(const struct chat *c, size_t keep_bytes);
/* The transcript (JSON Lines) of the summary request: what is sent but
 * the newest keep messages, then a user message with prompt.  NULL when
 * out of memory. */
char *compact_request(const struct chat *c, int keep, const char *prompt,
		      size_t *len);
/* The compaction entry, one JSON line without newline: the summary, the
 * rendered todo list (or NULL) framed as data, and in "compaction" the
 * keep, the messages summarised, the bytes sent before (given: what the
 * chat sent before its summary request was made) and (estimated) after,
 * and the time.  NULL when out of memory. */
char *compact_entry(const struct chat *c, int keep, size_t before,
		    const char *summary, const char *todos);

/* --- reply.c: the model's answer ------------------------------------- */

struct reply_call {
	int index;
	char *id;
	struct buf name, args;
	cJSON *extra;         /* members a provider added (extra_content...) */
};

/* The API a model speaks. */
enum model_api { API_CHAT, API_ANTHROPIC };

struct reply {
	struct buf content, reasoning, refusal;
	int has_content;
	int choices;          /* the n asked for: above 1, only choice 0 counts */
	enum model_api api;
	cJSON *blocks;        /* Anthropic: thinking blocks, to send back */
	int block;            /* Anthropic: the index of the open block */
	char block_type[24];  /*   and its type */
	struct reply_call *calls;
	int ncalls;
	char finish[32];      /* finish_reason, "" when none came */
	cJSON *usage;         /* the API's usage object, or NULL */
	cJSON *error;         /* an error the API sent instead, or NULL */
	int done;             /* [DONE] came, or the answer was whole */
	/* called with each piece of text as it streams in */
	void (*on_text)(void *ctx, const char *text);
	void *ctx;
	/* server-sent events parsing */
	struct buf sse_line, sse_data;
	int sse_event_error;
	/* data events applied so far: what counts as progress (comments and
	 * keep-alives do not) */
	unsigned long events;
};

/* max bounds the text, each call's arguments and each event. */
void reply_init(struct reply *r, size_t max);
/* For the parsers: a new call (NULL and err set when there are too
 * many, or no memory), and the text of v appended to b (nothing when v
 * is not a string). */
struct reply_call *reply_new_call(struct reply *r, int index, const char *id,
				  struct ah_error *err);
int reply_append(struct buf *b, const cJSON *v, struct ah_error *err);
void reply_free(struct reply *r);
/* A whole (non-streamed) Chat Completions answer. */
int reply_parse(struct reply *r, const char *body, size_t n,
		struct ah_error *err);
/* Bytes of a text/event-stream answer, as they come. */
int reply_feed(struct reply *r, const char *p, size_t n, struct ah_error *err);
/* The end of a stream. */
int reply_finish_stream(struct reply *r, struct ah_error *err);
/* The assistant message, annotated with "usage" and "request_id"; a
 * refusal is in "refusal", the members a provider added to a tool call
 * stay on it (to be sent back). */
cJSON *reply_message(const struct reply *r, const char *request_id);

/* --- anthropic.c: Anthropic's Messages API, at the wire ---------------- */

/* The Messages request for what c sends: system messages to "system",
 * tool calls to tool_use blocks, results to tool_result blocks in user
 * turns (turns of one role merged), thinking blocks sent back first, the
 * tools of head in Anthropic's shape, max_tokens (8192 when head has
 * none), and cache_control on the tools, the system prompt and the last
 * two user turns.  Into out (reset first); -1 when out of memory. */
int anthropic_request(const struct chat *c, const cJSON *head,
		      struct buf *out);
/* One event of a Messages stream, and a whole Messages answer, into r
 * as Chat Completions: text, tool calls, thinking blocks, finish reason
 * (end_turn stop, tool_use tool_calls, max_tokens length, refusal
 * content_filter) and usage (prompt_tokens counts cached input too). */
int anthropic_event(struct reply *r, const char *data, size_t n,
		    struct ah_error *err);
int anthropic_parse(struct reply *r, const char *body, size_t n,
		    struct ah_error *err);

/* --- model.c: calling the endpoint ------------------------------------ */

struct model_opts {
	const char *base_url;  /* up to /v1; /chat/completions is added */
	const char *api_key;   /* NULL or "" for none */
	double timeout;        /* seconds: connect, and the most between two
				  data events (or bytes of a whole answer) */
	double deadline;       /* seconds for one answer, retries and their
				  waits included; 0 for none */
	int retries;           /* on connection errors, 408, 409, 429, 5xx */
	size_t max_answer;     /* bytes */
	void (*on_text)(void *ctx, const char *text); /* streamed text */
	void (*on_retry)(void *ctx, const char *why); /* before each retry */
	void *ctx;
	volatile sig_atomic_t *interrupted; /* nonzero: abort the call */
	int choices;           /* the request's n (1 when not given) */
	enum model_api api;
	int stream;            /* the request asks for a stream */
};

struct model;

/* Whether an API error (status, error.code or .type, message) says the
 * request is longer than the model's context: the words of OpenAI,
 * Azure, Anthropic, vLLM, llama.cpp, Ollama, Mistral, DeepSeek, Groq,
 * Gemini and others. */
int model_too_long(long status, const char *code, const char *msg);

int model_global_init(void);
void model_global_cleanup(void);
/* One connection, kept alive from one call to the next. */
struct model *model_new(const struct model_opts *o, struct ah_error *err);
void model_free(struct model *m);
/* Sends body and reads the answer into reply (initialised here).  The
 * request id the server gave goes to request_id.  On failure err->code
 * is AH_ENET, AH_EAPI or AH_EAPIRETRY, or AH_EFORMAT/AH_ETOOBIG for an
 * answer we cannot use; the message has the status, the API's message and
 * the request id, never the key.  An attempt ends when no data event (a
 * stream) or no byte (a whole answer) came for o->timeout seconds; the
 * call ends, AH_ENET, not retried, when o->deadline passes. */
int model_call(struct model *m, const struct model_opts *o, const char *body,
	       size_t len, struct reply *reply, char *request_id,
	       size_t idsize, struct ah_error *err);

/* --- shsplit.c: shell command lines for permission rules ------------- */

/* Splits a command line into the simple commands it would run, as bash
 * parses it, at ; & && || | newlines, subshells, groups, $(...),
 * backquotes (nested ones unescaped), <(...), sh -c STRING and eval:
 * {"commands": [[argv...], ...], "redirects": [targets...],
 *  "outputs": [output targets, a descriptor as "&N"], "complex": b}.
 * Quotes are removed; expansions are kept as text.  A command goes in as
 * written, leading NAME=value assignments included; when it has
 * assignments or is a wrapper (command, env, sudo, time, nice, timeout,
 * xargs, busybox, ...), the command it runs follows as an entry of its
 * own.  "complex" is true when it met something it cannot follow
 * (unbalanced quotes, here-documents, arithmetic, if/for/while/case,
 * function definitions, a command name that is itself an expansion, any
 * expansion but $NAME, ${NAME}, ${#NAME} and the special parameters, a
 * control character, builtins that take code or subscripted names): a
 * rule must then not trust "commands".  NULL when out of memory. */
cJSON *shell_split(const char *cmd);

/* --- policy.c: permission rules in jq ---------------------------------- */

enum { DECIDE_ALLOW = 0, DECIDE_ASK = 1, DECIDE_DENY = 2 }; /* by strictness */

struct rule {
	char *name, *expr, *reason;
	int decision;
};

struct policy {
	int deflt;          /* when no rule matches */
	struct rule *rules;
	int n;
	char *source;       /* the file, or "built-in" */
	void *jq;           /* the compiled rules (jq_state *) */
	int worker;         /* pid of the process that evaluates, 0 if none,
			     * -1 for a server's worker */
	int to_worker, from_worker; /* its pipes (one socket for a server's) */
	char *prog;         /* the jq program of all rules */
	size_t prog_len;
	const char *server; /* a policy server's socket, tried first */
	int server_failed;  /* it could not be used: evaluate here */
	double limit;       /* how long the server's worker may evaluate */
};

struct verdict {
	int decision;
	char rule[128];
	char reason[512];
};

/* The built-in policy, as JSON text. */
const char *policy_builtin(void);
const char *decision_name(int d);
/* Reads a policy: {"default": D, "rules": [{"name", "if", "decision",
 * "reason"}, ...]}.  Its errors name the source and the rule. */
int policy_parse(struct policy *p, const char *text, size_t len,
		 const char *source, struct ah_error *err);
/* Compiles every rule into one jq program (libjq starts here, once);
 * a rule that does not compile is an error naming it. */
int policy_compile(struct policy *p, struct ah_error *err);
/* Runs the rules on input, in a child bounded by timeout seconds.  Every
 * matching rule counts and the strictest wins (deny over ask over allow);
 * none matching gives the default.  A rule that fails or runs too long
 * denies, naming it.  -1 only when the child cannot be started. */
int policy_eval(struct policy *p, const cJSON *input, double timeout,
		struct verdict *v, struct ah_error *err);
void policy_free(struct policy *p);

/* The jq program of all rules, into p->prog.  -1: out of memory. */
int policy_program(struct policy *p);
/* Evaluates input lines from in, writing results to out, until in ends;
 * an evaluation longer than limit seconds (0: no limit) kills it.  For
 * forked children only: it never returns. */
void policy_worker(struct policy *p, int in, int out, double limit)
	__attribute__((noreturn));

/* Trust in a policy found in a working directory: its SHA-256 and its
 * absolute path, one "sha256:HEX PATH" line each, in the store
 * ${XDG_CONFIG_HOME:-$HOME/.config}/agent-harness/trusted-policies. */
void policy_hash(const char *text, size_t len, char hex[65]);
/* The store's path; -1 when there is no absolute one. */
int policy_trust_store(char *path, size_t size);
/* 1 when this text of file is trusted, 0 when not, -1 on error. */
int policy_is_trusted(const char *file, const char *text, size_t len,
		      struct ah_error *err);
/* Records this text of file as trusted, replacing what was recorded for
 * file before. */
int policy_trust(const char *file, const char *text, size_t len,
		 struct ah_error *err);

/* --- policysrv.c: the compiled rules, kept for other processes ------- */

/* Creates the socket at path, for this user only; it must not exist. */
int policy_listen(const char *path, struct ah_error *err);
/* Serves on lfd: a client that sends the program of p gets a worker of
 * its own, forked from the compiled rules.  A client with other rules
 * makes it call reload, which should read the policy again into p (and
 * compile it), and then compare once more; still other rules are
 * refused, so that the server only ever runs rules from the policy file.
 * Returns when the process starter ends, when path is removed or
 * replaced, or when *stop becomes non-zero. */
int policy_serve(struct policy *p, int lfd, const char *path, pid_t starter,
		 int (*reload)(void *ctx, struct policy *p,
			       struct ah_error *err),
		 void *ctx, volatile sig_atomic_t *stop, struct ah_error *err);
/* Client: connects to p->server and hands it p's program; 0 when the
 * server has the same rules and a worker waits for p's inputs. */
int policy_connect(struct policy *p, struct ah_error *err);

/* --- audit.c: the audit log ------------------------------------------ */

/* Replaces secrets in s by "[REDACTED]", in place (s never grows): the
 * strings of secrets (NULL-terminated list; the API key we hold), keys and
 * tokens of the usual providers (sk-, ghp_, github_pat_, xoxb-, AKIA,
 * AIza, hf_, ...), and the credential after "Bearer", "Authorization:",
 * "x-api-key:". */
void redact(char *s, const char *const *secrets);
/* redact on every string of v, object keys included. */
void redact_json(cJSON *v, const char *const *secrets);
/* Only the first part of redact: the strings of secrets (8 bytes or
 * more; one shorter than the mark becomes as many '*'), nothing that
 * merely looks like a key.  For the model's own text, which may quote
 * key-like strings on purpose but must never carry the key we hold. */
void redact_exact(char *s, const char *const *secrets);
void redact_json_exact(cJSON *v, const char *const *secrets);

/* One audit record for a message, as a line without its newline: time,
 * session, seq, role, bytes, tools (id, name, decision, reason, rule),
 * tool_call_id, request_id, usage, and the message, all redacted. */
char *audit_record(const cJSON *msg, size_t bytes, const char *session,
		   unsigned long long seq, const char *const *secrets);

/* Appends a record (with its newline) to the log open with O_RDWR and
 * O_APPEND, in one piece under an exclusive lock; fdatasync when sync is
 * set.  A torn last line that a crashed writer left is cut first (see
 * jsonl_repair_tail); *cut receives its length. */
int audit_append(int fd, const char *rec, size_t len, int sync,
		 size_t *cut, struct ah_error *err);

/* --- file.c: whole files, atomically ----------------------------------- */

/* Writes all of p[0..len) to fd, again after a short write or EINTR.
 * 0, or -1 with errno set. */
int write_all(int fd, const char *p, size_t len);
/* Reads the whole file at path, at most max bytes (a larger file is an
 * AH_ETOOBIG error).  Returns 1 and sets *data and *len (NUL-terminated,
 * the caller frees), 0 when the file does not exist, -1 on error. */
int file_read(const char *path, size_t max, char **data, size_t *len,
	      struct ah_error *err);

/* The same for an open descriptor (not closed); name is for messages. */
int fd_read(int fd, const char *name, size_t max, char **data, size_t *len,
	    struct ah_error *err);

/* Replaces the file at path with data, so that a reader or a crash at any
 * moment sees the old contents or the new, never a mix: under an exclusive
 * lock on the directory, it removes the temporary files of path that
 * killed writers left, creates ".NAME.XXXXXXXXXXXX.tmp" beside it (a
 * random name, O_CREAT | O_EXCL | O_NOFOLLOW: nothing planted there is
 * ever opened), fsyncs it, renames it over path and fsyncs the directory;
 * on failure the temporary file is removed.  An existing file keeps its
 * permission bits but for set-user-ID and set-group-ID. */
int file_replace(const char *path, const void *data, size_t len,
		 struct ah_error *err);

/* The same for the entry name in the open directory dfd (not closed);
 * shown is the path to use in messages. */
int file_replace_at(int dfd, const char *name, const char *shown,
		    const void *data, size_t len, struct ah_error *err);

/* --- agentdir.c: the harness's own files, never through a link ------- */

/* Nonzero when a component of path is named ".agent". */
int agent_path_inside(const char *path);

/* Opens a file the harness reads or appends to (a transcript, the audit
 * log) with open(2)'s flags and mode, O_CLOEXEC added.  Under .agent
 * (a path with a component named ".agent"), that directory and every
 * component after it are opened beneath the one before without
 * following symbolic links (O_DIRECTORY|O_NOFOLLOW, the file O_NOFOLLOW)
 * and ".." there is refused; what comes before .agent is resolved as
 * usual.  With O_CREAT a missing .agent is made (0777 less the umask).
 * Any other path: its last component is not followed.  In both cases
 * the file must be a regular file: a symbolic link, a FIFO, a device, a
 * socket or a directory is an AH_EFORMAT error naming the path, found
 * before the file is opened (and checked again on the descriptor), so
 * nothing is ever read from or written to it.  what (NULL, or a noun
 * with a trailing space, "the audit log ") goes before the quoted path
 * in messages.  Returns the descriptor (blocking), or -1. */
int agent_open(const char *path, const char *what, int flags, mode_t mode,
	       struct ah_error *err);

/* --- path.c: files the model names, kept inside the working directory -- */

struct root {
	int fd;     /* O_PATH descriptor of the directory */
	char *path; /* its resolved absolute path */
};

int root_open(struct root *rt, const char *dir, struct ah_error *err);
void root_close(struct root *rt);

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

/* mkdir -p of rel beneath the root.  -1 with errno set on failure. */
int root_mkdirs(const struct root *rt, const char *rel);

/* --- sandbox.c: confining the commands the model runs ------------------ */

enum sandbox_mode {
	SANDBOX_OFF = 0,         /* no confinement */
	SANDBOX_READ_ONLY,       /* writes only to the private tmpdir */
	SANDBOX_WORKSPACE_WRITE, /* and to the workspace, but for what is
				    protected */
};

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

struct sandbox {
	enum sandbox_mode mode;
	int network;      /* nonzero: inet sockets allowed */
	int git_writable; /* nonzero: .git is not protected (unsafe) */
	char *workspace;  /* absolute, resolved */
	char *tmpdir;     /* the private temporary directory, or NULL until
			     sandbox_prepare made it */
	char **protect;   /* absolute paths kept read-only */
	size_t nprotect;
	struct sandbox_git *git; /* found by the last sandbox_scan, all kept
				    read-only */
	size_t ngit;
	struct timespec scanned; /* when */
	int abi;          /* the kernel's Landlock ABI version, 0 if none */
	int watching;     /* nonzero: watch the directories walked */
	int watch_fd;     /* their inotify, or -1 */
	struct sandbox_watch *watch; /* by wd, ascending */
	size_t nwatch;
};

/* SANDBOX_* for a name ("workspace-write", "read-only", "off"), or -1. */
int sandbox_mode_parse(const char *name);

/* Sets up *sb for the workspace (an absolute, resolved path), with the
 * paths kept read-only by default: .agent, todo_path, and (sandbox_scan)
 * every .git in the workspace and the git directories they point to.  Fails when the mode needs Landlock and the kernel has none:
 * a sandbox that cannot be had is an error, never a silent "off". */
int sandbox_init(struct sandbox *sb, enum sandbox_mode mode,
		 const char *workspace, const char *todo_path,
		 struct ah_error *err);

/* Adds a path (relative to the workspace, or absolute) to keep read-only. */
int sandbox_protect(struct sandbox *sb, const char *path,
		    struct ah_error *err);

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

/* Removes the temporary directory and frees *sb. */
void sandbox_free(struct sandbox *sb);

/* In the helper that forks the commands (proc.c), once: a mount
 * namespace in which all is read-only but the write roots (nosuid), and
 * the protected paths in them are read-only too (a user namespace first,
 * without privilege: *userns set), the bounding set emptied,
 * no_new_privs, and a seccomp filter (no inet sockets unless
 * sb->network, no io_uring, no ioctl TIOCSTI or TIOCLINUX); the Landlock
 * ruleset of the write roots is built, its fd in *ruleset.  On failure
 * the process is in an unknown state and must not run a command. */
int sandbox_setup(const struct sandbox *sb, int *ruleset, int *userns,
		  struct ah_error *err);

/* In the helper, after sandbox_setup: 0 if it protects what the snapshot
 * snap (taken by the caller before the helper started) describes, 1 if
 * that changed meanwhile, -1 if a protected path is not read-only. */
int sandbox_verify(const struct sandbox *sb, const struct buf *snap,
		   struct ah_error *err);

/* What the sandbox protects, as it is now on disk (each path, whether it
 * is there, its device and inode), into out: a helper set up for one
 * snapshot must not serve another. */
int sandbox_snapshot(const struct sandbox *sb, struct buf *out);

/* Per command, in the pid 1 of its PID namespace, in a mount namespace
 * of its own: mounts the namespace's /proc (best effort). */
void sandbox_fresh_proc(void);

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

/* --- proc.c: running a command for the model ------------------------- */

/* The bounds of one call, and how they are enforced.  The caller sets the
 * first three; proc_limits_prepare fills the rest, once. */
struct proc_limits {
	long procs;           /* processes (and threads) at once; 0: none */
	long long memory;     /* bytes for the whole call; 0: none */
	long long file_size;  /* bytes a file may be written to; 0: none */
	int prepared;
	int by_cgroup;        /* PROC_LIMIT_* bits a cgroup enforces */
	char *cg_pids;        /* the cgroup directory counting processes */
	char *cg_mem;         /* the one bounding memory (may be cg_pids) */
	int cg_v2;            /* cgroup v2 (else v1) */
	char *warning;        /* what is weaker than asked, for the caller to
				 say once; NULL if nothing */
};

enum { PROC_LIMIT_PROCS = 1, PROC_LIMIT_MEMORY = 2, PROC_LIMIT_FSIZE = 4 };

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

/* The helper of a session: a process set up once in the sandbox (mount
 * namespace, seccomp, Landlock ruleset, cgroups) that forks each command
 * from itself; it dies with its caller.  See proc_helper_start. */
struct proc_helper {
	pid_t pid;        /* 0: none */
	int sock;         /* to it; -1: none */
	int ready;        /* its first word read: 1 ready, 0 not yet */
	struct buf snap;  /* the sandbox_snapshot it was set up for */
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

/* Makes this process the reaper of its orphaned descendants, so that
 * proc_run can find and kill children that left the process group. */
int proc_become_subreaper(void);

/* Finds how the limits can be enforced here (a cgroup v2 or v1 of our
 * own beneath this process's, else rlimits and a count of the call's
 * processes) and creates the cgroup.  Idempotent.  Fails only when
 * memory runs out; a weaker enforcement is said in l->warning. */
int proc_limits_prepare(struct proc_limits *l, struct ah_error *err);

/* Removes the cgroups and frees what prepare made. */
void proc_limits_free(struct proc_limits *l);

/* Does NAME look like it holds a secret (a key, token, password, cloud or
 * forge credential, an agent socket)?  Such a variable never reaches a
 * command. */
int proc_env_secret(const char *name);

/* The environment of the commands: the variables of environ on the
 * allow-list (see tool-exec(1)) and those named in pass, in a new
 * NULL-terminated array (free with proc_env_free).  A name in pass that
 * proc_env_secret refuses is an error naming it. */
char **proc_env_build(const char *const *pass, size_t npass,
		      struct ah_error *err);
void proc_env_free(char **env);

/* Starts the helper for the commands of o (its shell, env, sandbox and
 * limits; limits prepared and the sandbox's temporary directory made),
 * and returns without waiting for it to be ready: it sets itself up while
 * the caller goes on.  proc_run starts it again when what the sandbox
 * protects changed (a new .git, a protected path created or replaced), or
 * when it died. */
int proc_helper_start(struct proc_helper *h, const struct proc_opts *o,
		      struct ah_error *err);

/* Ends the helper (and with it any command it runs) and frees *h. */
void proc_helper_stop(struct proc_helper *h);

/* Runs the command in a new session with no controlling terminal, under a
 * supervisor that is the init of a new PID namespace (where the kernel
 * allows one; see tool-exec(1)) and dies with the caller, stdin from
 * /dev/null, stdout and stderr together, no other file descriptor.
 * Returns when the shell has exited (plus the grace), on timeout, when a
 * limit is reached, or when *interrupted is set; in every case every
 * process it started is killed and reaped before it returns. */
int proc_run(const struct proc_opts *o, struct proc_result *r,
	     struct ah_error *err);

/* --- tools.c: the tools the model calls ------------------------------- */

struct tool_ctx {
	struct root root;      /* file tools stay inside it */
	const char *todo_path; /* for run_todo_write */
	const char *shell;     /* bash runs: shell -c command */
	double timeout;        /* bash: default seconds */
	double max_timeout;    /* bash: the most a call may ask for */
	double grace;          /* bash: seconds to wait for background output */
	size_t max_output;     /* bytes of a result, head and tail kept */
	volatile sig_atomic_t *interrupted;
	struct sandbox *sandbox; /* bash runs in it, the file tools obey its
				    write rules; NULL for none */
	char *const *env;      /* bash: the commands' environment */
	struct proc_limits *limits; /* bash: per call, NULL for none */
	struct proc_helper *helper; /* bash: forks the sandboxed commands */
};

enum { TOOL_OK = 0, TOOL_ERROR = 1, TOOL_INTERRUPTED = 2 };

/* The tool definitions, a JSON array in Chat Completions form. */
const char *tool_schema(void);

/* Does now what the first bash call would otherwise wait for: the limits'
 * cgroups, the sandbox's temporary directory and .git search, and the
 * start of ctx->helper, which sets itself up while the caller reads its
 * input.  A no-op without a sandbox or a helper. */
int tool_warm(const struct tool_ctx *ctx, struct ah_error *err);

/* Runs one call: name and its arguments as the JSON text the model sent.
 * *res receives the text of the tool result (the caller frees it).
 * Returns TOOL_OK, TOOL_ERROR (the text starts with "Error:"),
 * TOOL_INTERRUPTED, or -1 when memory ran out (*res is NULL). */
int tool_call(const struct tool_ctx *ctx, const char *name,
	      const char *args, char **res);

/* --- todo.c: the TodoWrite tool ---------------------------------------- */

#define TODO_MAX_ITEMS   500
#define TODO_MAX_ID      200     /* bytes */
#define TODO_MAX_CONTENT 4000    /* bytes */
#define TODO_MAX_ARGS    (1u << 20) /* bytes of arguments or of todo.json */
/* The answer to arguments over TODO_MAX_ARGS (a printf format for it). */
#define TODO_TOO_LARGE   "Error: arguments are too large (at most %u bytes)."

enum todo_status { TODO_PENDING, TODO_IN_PROGRESS, TODO_COMPLETED };

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

/* The seed's rendering of a normalised list: "Current todos:" and one
 * "[ ] id - content" line per item, or "No active todos.".  With
 * unfinished_only, only pending and in_progress items are listed, under
 * "Unfinished todos:".  No trailing newline.  NULL when out of memory. */
char *todo_render(const cJSON *list, int unfinished_only);

/* The number of items of a normalised list that are not completed. */
int todo_unfinished(const cJSON *list);

/* Loads and validates the stored list.  A missing file is an empty list; a
 * file that is not a valid list is an AH_EFORMAT error naming it. */
int todo_load(const char *path, cJSON **out, struct ah_error *err);

/* Stores a normalised list at path (file_replace). */
int todo_store(const char *path, const cJSON *list, struct ah_error *err);

/* The whole tool: parses args[0..n), validates, stores at path (unless
 * dry_run) and sets *answer to the text for the model: the rendered list,
 * or an "Error: ..." line.  Returns 0 when stored, 1 when the arguments
 * were rejected (nothing stored), -1 when storing failed (err says why;
 * *answer is then NULL). */
int todo_write(const char *path, const char *args, size_t n, int dry_run,
	       char **answer, struct ah_error *err);

/* The todo file: AGENT_TODO_FILE when set, else "todo.json". */
const char *todo_default_path(void);

#include "banned.h"

#endif
