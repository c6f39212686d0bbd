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

#include <regex.h>
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
	TERM_SHOW_HIDDEN = 2, /* (always so now: kept for the callers) */
	TERM_ASCII = 4, /* every character past ASCII as \u{XXXX} */
};

/* A copy of s[0..n) that is safe to write to a terminal: nothing in it
 * can move the cursor, rewrite a line, set the title or the clipboard.
 * C0 controls (but newline and tab with TERM_KEEP_LINES) and DEL become
 * \xnn, C1 controls \u{XXXX}, and each byte that is not well-formed
 * UTF-8 \xnn.  What a reader cannot see becomes \u{XXXX} too, in every
 * text a program shows on a terminal (one rendering for all):
 * bidirectional controls (which reorder what is shown), zero-width and
 * other invisible format characters, line and paragraph separators, tag
 * characters.  NULL when out of memory. */
char *utf8_for_terminal(const char *s, size_t n, int flags, size_t *outlen);

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
 * (0 means JSONL_MAX_LINE).  It cannot fail: memory is taken by the
 * first read, whose error says when there is none. */
void jsonl_reader_init(struct jsonl_reader *r, int fd, const char *name,
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
/* Its function's name ("" when it has none). */
const char *call_name(const cJSON *call);
/* Its arguments, as an object: function.arguments is the JSON text of
 * one (as the API sends them) or the object itself (as some servers
 * do).  NULL when they are neither, or memory ran out. */
cJSON *call_arguments(const cJSON *call);
/* Its arguments as JSON text: the string the API sent, or what else came
 * printed (*owned, which the caller frees; NULL when nothing was made);
 * none when there are none; NULL when memory ran out. */
const char *call_arguments_text(const cJSON *call, const char *none,
				char **owned);
/* The member of a tool's arguments that says what a call does, its
 * gist: "command" for bash, "path" for the file tools, else NULL. */
const char *call_gist_key(const char *tool);

/* --- body.c: a request body in parts ---------------------------------- */

/* A request body kept as parts rather than one buffer, so that a long
 * transcript is not copied to be sent: pieces the body holds (the head,
 * the brackets and commas), bytes it borrows (the messages a chat keeps
 * serialised), and pieces printed again each time they are read (a
 * message in the Messages API's shape).  Its length is known before it
 * is read, and it can be read again from any point (a retry).  What a
 * body borrows, and what its print function reads, must not change
 * until the body is reset or freed. */

/* Appends piece arg (a number the builder chose) to out: the same bytes
 * every time.  -1 when out of memory. */
typedef int (*body_print_fn)(const void *ctx, size_t arg, struct buf *out);

struct body_part;

struct model_body {
	struct body_part *parts;
	size_t nparts, cap;
	size_t len;            /* the bytes of the whole body */
	struct buf held;       /* the held pieces, one after another */
	body_print_fn print;   /* prints the printed parts, with ctx */
	const void *ctx;
	size_t at, off;        /* reading: the part, and where in it */
	struct buf piece;      /* the printed part read from, */
	size_t piece_of;       /*   and its number ((size_t)-1: none) */
	struct buf flat;       /* model_body_flat's copy */
};

/* An empty body; print (with ctx) for its printed parts, or NULL. */
void model_body_init(struct model_body *b, body_print_fn print,
		     const void *ctx);
/* Empty again, its memory kept for the next body. */
void model_body_reset(struct model_body *b, body_print_fn print,
		      const void *ctx);
void model_body_free(struct model_body *b);
/* Each appends a part, and returns 0, or -1 when out of memory: a copy
 * of data; data itself (borrowed); piece arg, *len bytes long, or when
 * *len is 0 printed once now to learn it (into *len; parts of no bytes
 * are left out). */
int model_body_hold(struct model_body *b, const void *data, size_t len);
int model_body_borrow(struct model_body *b, const void *data, size_t len);
int model_body_printed(struct model_body *b, size_t arg, size_t *len);
/* Reading goes on from byte pos; -1 when the body is shorter. */
int model_body_seek(struct model_body *b, size_t pos);
/* Up to n bytes of the body from where reading is, into dst: how many,
 * 0 at the end, -1 (err) when a printed part cannot be printed again or
 * came out another length. */
ssize_t model_body_read(struct model_body *b, char *dst, size_t n,
			struct ah_error *err);
/* The whole body in one piece, NUL-terminated (b->len bytes):
 * the one part it borrows, or a copy kept in b until the next call.
 * NULL (err) when it cannot be made. */
const char *model_body_flat(struct model_body *b, struct ah_error *err);

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
	size_t wire[2];    /* its bytes in the Messages API's shape, without
			    * and with cache_control; 0: not known yet */
	char role;         /* 's' (system, developer), 'u', 'a' or 't' */
	int said;          /* a user message of the user's own words: the
			    * first user message (the task), or one marked
			    * "from":"user" (a follow-up) */
};

/* The context budget (see agent-step(1), CONTEXT).  With a window, the
 * text of old tool results above stub_min bytes is left out of what is
 * sent, a stub in its place, whenever the estimate passes stub_at of the
 * window (or stub_cap tokens): all such results at once but the newest
 * (keep, keep_share), so that the request changes at few points and its
 * prefix stays the same between them (prompt caches keep hitting).  The decision depends only on the
 * messages, so a transcript read again gives the same requests. */
struct chat_budget {
	long window;          /* tokens; 0: no budget, nothing is left out */
	double stub_at;       /* share of the window */
	long stub_cap;        /* tokens: stub past this even below stub_at;
			       * 0: no cap */
	size_t stub_min;      /* bytes */
	int keep;             /* the newest tool results sent whole, at most */
	double keep_share;    /* ... past the newest, only while they take
			       * no more of the window; 0: no limit */
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
	double tokens;        /* the usage of the answers read, added up */
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
 * three quarters of it or 100000 tokens, for results over 1 KB but the
 * newest (and the 2 before it while the 3 take at most a tenth of the
 * window), their texts kept in the directory outputs (NULL: not kept
 * apart). */
void chat_budget_default(struct chat_budget *b, long window,
			 const char *outputs);
/* The window of a well-known model name (a prefix table), else 0. */
long chat_model_window(const char *model);
/* Applies the budget before a request is made (chat_request does it
 * too): -1 when out of memory. */
int chat_prepare(struct chat *c);
/* completions.c: the Chat Completions request body into out (reset
 * first, then valid while c is unchanged): head (an object with "model" and the other fields) with
 * "messages" spliced in, the messages borrowed from c rather than
 * copied.  Applies the budget first.  -1 when out of memory. */
int chat_request_parts(struct chat *c, const cJSON *head,
		       struct model_body *out);
/* The same body in one buffer, kept in c, valid until the next call;
 * NULL when out of memory. */
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
 * {"keep": N, "user_bytes": U, ...}: from it on, chat_add sends the
 * system messages the chat began with, the user's own messages (struct
 * chat_msg.said) of those it stands for, word for word, within U bytes
 * (compact_users; 0: all of them), the entry (the summary), the last N
 * messages sent before it, and what follows.  An entry without
 * "user_bytes" (written before it existed) keeps none of them.  The
 * transcript keeps every message. */

/* The summary instruction agent-compact sends by default. */
const char *compact_default_prompt(void);
/* How many of the newest messages sent to keep whole: those within
 * keep_bytes, at least one, never a tool result without its call.  -1
 * when nothing would be left to summarise. */
int compact_keep(const struct chat *c, size_t keep_bytes);
/* The user's own messages among those a compaction keeping the newest
 * keep would summarise (c->view[lead..from)), kept word for word before
 * the summary: the first (the task) and the newest always, then the
 * others from the newest back while they all take at most max bytes as
 * sent (0: no limit).  kept[k] is set for c->view[k] kept (c->nview
 * chars, the caller's); *left and *left_bytes tell what was left out.
 * 0, or -1 when the first and the newest alone take more than max (they
 * are kept all the same). */
int compact_users(const struct chat *c, int keep, size_t max, char *kept,
		  int *left, size_t *left_bytes);
/* The transcript (JSON Lines) of the summary request: what is sent but
 * the newest keep messages, then a user message with prompt.  NULL when
 * out of memory. */
char *compact_request(const struct chat *c, int keep, const char *prompt,
		      size_t *len);
/* The compaction entry, one JSON line without newline: a note of the
 * harness's, with the summary and the rendered todo list (or NULL) each
 * quoted as material between two lines holding a random marker that
 * neither contains; in "compaction" the keep, user_bytes (user_max),
 * the messages summarised, the user's messages kept and left out, the
 * bytes sent before (given: what the chat sent before its summary
 * request was made) and (estimated) after, and the time.  NULL when out
 * of memory or of random bytes. */
char *compact_entry(const struct chat *c, int keep, size_t before,
		    const char *summary, const char *todos, size_t user_max);
/* agent-run's rule (agent-session(1), --compactions): the lines of
 * transcript after line from end with COMPACT_IN_A_ROW compaction entries
 * or more and no message of the assistant after them, so another
 * compaction cannot make the context fit either.  1 with agent-run's
 * word on it in msg (dir: the workspace, as said), 0 when another may be
 * made, -1 (err set). */
int compact_refused(const char *dir, const char *transcript,
		    unsigned long from, struct buf *msg, struct ah_error *err);

/* --- project.c: the project's instructions -------------------------- */

/* The bytes s[0..n) takes inside a JSON string as cJSON writes it: 2 for
 * a quote, a backslash and \b \f \n \r \t, 6 for another control
 * character (\u00XX), 1 for any other byte. */
size_t json_sent_bytes(const char *s, size_t n);
/* The text of the project's instructions: a line saying what they are,
 * then for each of the n files, the top first (rel[n-1], path[n-1]) and
 * the most specific last (rel[0]), a header "## REL" and its text.  The
 * headers and texts take at most budget bytes as sent (json_sent_bytes,
 * after the repair of hook-audit --message), given to the most specific
 * first; a text cut, or left out, gets a note of the harness's saying
 * so, outside the budget.  Each path is opened without following a link
 * and must be a regular file.  names gets "REL[ (cut)| (left out)], ..."
 * in the text's order.  0, or -1 (err set). */
int project_text(const char *const *rel, const char *const *path, int n,
		 size_t budget, struct buf *out, struct buf *names,
		 struct ah_error *err);

/* --- reaper.c: agent-run's stages, and its crash reaper ----------------- */

/* The pid of the process whose /proc/PID/stat line dir/pid.NAME holds,
 * when it still runs and started at the time the line says (not a later
 * process that got its pid); else 0. */
pid_t reaper_running(const char *dir, const char *name);
/* SIGINT to the recorded stages that act on it (agent-run's signal
 * trap). */
void reaper_interrupt(const char *dir);
/* Stops the recorded stages (SIGINT, then SIGKILL after a second),
 * removes dir, and drafts/.transcript-new.RUN.* (drafts may be NULL),
 * the drafts of the agent-run whose pid is run. */
void reaper_reap(const char *dir, const char *drafts, pid_t run);
/* Starts the watcher, not a child of the caller's caller: it waits for
 * the lock of the file lock, then reaper_reap(dir, drafts, the caller's
 * pid: agent-run's), then lets the lock go.  Its stat line goes into
 * dir/pid.watcher.  0, or -1. */
int reaper_start(const char *dir, const char *lock, const char *drafts,
		 struct ah_error *err);
/* The end of a run: the watcher killed (and gone), the policy server
 * (pid.policy) and the MCP bridge (pid.mcp, waited for up to 3 s)
 * stopped, dir removed. */
void reaper_stop(const char *dir);

/* --- servstart.c: a server of agent-run's session, started ------------- */

/* Runs argv (a server's --serve: it prints the server's pid, and maybe
 * more on that line, then exits), and writes the server's /proc/PID/stat
 * line into record, for reaper_running.  What followed the pid goes into
 * rest.  0; 1 when argv failed (it said why; *status is its exit
 * status); -1 (err set). */
int session_server_start(const char *record, char *const argv[],
			 struct buf *rest, int *status, struct ah_error *err);

/* --- projwalk.c: where the project's instructions are ------------------ */

/* The instruction files of the absolute directory dir: for each
 * directory from dir up to the repository's top (the nearest one up with
 * a .git that is the user's or root's, else dir), its AGENTS.md, else its
 * CLAUDE.md, as pairs REL (the path under the top), PATH in *pairs (*n
 * strings), the most specific first.  A file or repository of another
 * user, a link, a FIFO are left out with a line saying so in notes.  0,
 * or -1 (err set); project_walk_free frees the pairs. */
int project_walk(const char *dir, char ***pairs, int *n, struct buf *notes,
		 struct ah_error *err);
void project_walk_free(char **pairs, int n);

/* --- firstmsg.c: the first messages of a new session ------------------- */

struct first_opts {
	const char *prompt;   /* the system prompt's file */
	const char *workdir;  /* when not NULL: put for each @WORKDIR@ */
	const char *add;      /* a file whose text follows the prompt's */
	const char *project;  /* a file of the project's instructions */
	/* agent-run's choice, instead of prompt and add: the harness's
	 * data directory (its system-prompt.txt, @WORKDIR@ the workdir,
	 * then plan mode's mode-plan.txt when mode is plan), or the
	 * system prompt of --system as it is */
	const char *datadir, *system, *mode;
	struct buf project_text; /* the project's instructions, when no file */
	int skills;           /* the skills' index too */
	const char *skill;    /* the skill given at the start, or NULL */
	const char *task;     /* the task, task[0..tasklen) */
	size_t tasklen;
};

/* The first messages of a session as JSON Lines onto out: the system
 * prompt (the file's text less its trailing newlines, then a blank line
 * and that of add), the project's instructions (when any), the skills'
 * index (when any), the skill message, the task (marked as the user's
 * words).  Each skill left out gets a line in notes.  0, 1 when there
 * is no skill o->skill (notes say what was left out), -1 (err set). */
int first_messages(const struct first_opts *o, struct buf *out,
		   struct buf *notes, struct ah_error *err);
/* The first messages of a run of agent-run's session that goes on, as
 * JSON Lines onto out: its todo list at todo as todo_reminder shows it
 * (when transcript wrote it), note (when not NULL nor empty), then the
 * task[0..tasklen) when not NULL (the user's words: a follow-up).  1 when
 * the list is not shown, not being the transcript's (else 0); -1 (err
 * set). */
int going_on_messages(const char *transcript, const char *todo,
		      const char *note, const char *task, size_t tasklen,
		      struct buf *out, struct ah_error *err);
/* The project's instructions of agent-run's workspace dir (absolute):
 * the files project_walk finds, those left out said in notes, their
 * text within budget into text (project_text), their names in names
 * (control characters made '?').  0, or -1 (err set). */
int first_project(const char *dir, size_t budget, struct buf *text,
		  struct buf *names, struct buf *notes, struct ah_error *err);

/* --- runend.c: what agent-run says at the end of a run ------------------ */

struct run_end {
	int answer;           /* the last message is an answer */
	struct buf text;      /* its text */
	unsigned long lineno; /* the last message's line, 0 when none */
	size_t denied;        /* the calls after line from denied for want
				 of a terminal to ask on */
};

/* One read of transcript: its last message, and the denials of the
 * assistant's messages after line from.  0 (r->answer says whether the
 * last message is an answer: the assistant's, without tool calls), or -1
 * (err set); run_end_free frees r either way. */
int run_end_scan(const char *transcript, unsigned long from,
		 struct run_end *r, struct ah_error *err);
void run_end_free(struct run_end *r);
/* The unfinished items of the todo list at path, "id - content" each,
 * joined by "; " into items, and how many.  0, or -1 (err set: a list
 * that cannot be read). */
int todo_left(const char *path, struct buf *items, size_t *n,
	      struct ah_error *err);
/* What a session that goes on first sees of its todo list at path, into
 * text: the list as the file holds it now, quoted as data, or that it
 * cannot be read.  1 with text, 0 for nothing (no file, no active item),
 * 2 when no run_todo_write call of transcript wrote a list (a list that
 * came with the directory, or a command made it, is never shown), -1
 * (err set). */
int todo_reminder(const char *transcript, const char *path, struct buf *text,
		  struct ah_error *err);
/* line[0..len) holds a run_todo_write call, as agent-step writes it (no
 * text the model or a command gives holds these quotes unescaped): a
 * todo list this session's model wrote, not one that came with the
 * directory. */
int todo_call_line(const char *line, size_t len);
/* The note to a model that stopped with items of its todo list at path
 * unfinished (fake completion: agent-session(1), --todos-left): the
 * list as stored, quoted as data, into note.  Only a list that a
 * run_todo_write call of transcript stored (sessdir_todos_ours, secrets
 * redacted).  1 with the note, 0 for none, -1 (err set: a list that
 * cannot be read). */
int todo_nudge(const char *transcript, const char *path,
	       const char *const *secrets, struct buf *note,
	       struct ah_error *err);

/* --- reply.c: the model's answer ------------------------------------- */

struct reply_call {
	int index;
	char *id;
	struct buf name, args;
	cJSON *extra;         /* members a provider added (extra_content...) */
};

/* The API a model speaks. */
enum model_api { API_CHAT, API_ANTHROPIC, API_RESPONSES };

/* What the stop or finish reason of an answer means, as each API's
 * table (agent-step(1), STOP REASONS) says: a reason not in the table is
 * END_UNKNOWN, and only END_NONE, END_DONE and END_CALLS are answers. */
enum reply_end {
	END_NONE,     /* no reason came */
	END_DONE,     /* the answer is whole */
	END_CALLS,    /* it ends with tool calls */
	END_LENGTH,   /* cut at the most tokens of an answer */
	END_FILTERED, /* withheld by a content filter */
	END_REFUSED,  /* the model refused */
	END_CONTEXT,  /* the context window is full */
	END_FAILED,   /* the API says the answer failed (end_why says how) */
	END_UNKNOWN,  /* a reason the table does not have */
};

/* Server-sent events, read as they come (sse.c, in priv.h). */
struct sse {
	struct buf line;      /* a line not ended yet */
	struct buf data;      /* the event's data lines, joined by LF */
	char event[32];       /* its event: field, "" when none */
	int ready;            /* data and event are a whole event */
};

struct reply {
	struct buf content, reasoning, refusal;
	int has_content;
	int choices;          /* the n asked for: above 1, only choice 0 counts */
	enum model_api api;
	cJSON *blocks;        /* Anthropic: thinking blocks, to send back */
	cJSON *items;         /* Responses: reasoning items, to send back */
	int items_seen;       /* Responses: a stream's output items came */
	int summary_streamed; /* Responses: reasoning summary deltas came */
	char foreign[32];     /* Responses: a client call of a kind not run */
	int block;            /* Anthropic: the index of the open block */
	char block_type[24];  /*   and its type */
	struct reply_call *calls;
	int ncalls;
	char finish[64];      /* the API's stop or finish reason as it came
			       * (cut), "" when none came */
	enum reply_end end;   /* what finish means */
	const char *end_why;  /* END_FAILED: what the table says of it */
	struct buf why;       /* a refusal's category and explanation */
	cJSON *usage;         /* the API's usage object, or NULL */
	cJSON *error;         /* an error the API sent instead, or NULL */
	int done;             /* [DONE] came, or the answer was whole */
	/* called with each piece of text as it streams in */
	void (*on_text)(void *ctx, const char *text);
	void *ctx;
	struct sse sse;       /* a streamed answer's events */
	/* data events applied so far: what counts as progress (comments and
	 * keep-alives do not) */
	unsigned long events;
};

/* max bounds the text, each call's arguments and each event. */
void reply_init(struct reply *r, size_t max);
void reply_free(struct reply *r);
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
 * two user turns.  Into out (reset first): each message is converted
 * again as it is read, so c must not change while out is in use (its
 * length is learnt once, and kept in c); -1 when out of memory. */
int anthropic_request_parts(struct chat *c, const cJSON *head,
			    struct model_body *out);

/* --- responses.c: OpenAI's Responses API, at the wire ---------------- */

/* The Responses request for what c sends: head's fields (max_tokens as
 * max_output_tokens; store false and include
 * ["reasoning.encrypted_content"] unless head has them), the tools as
 * function tools, then "input": each message as input items (system and
 * user messages as message items, an assistant's as its reasoning items,
 * its text and its function_call items, a result as a
 * function_call_output).  Into out (reset first); -1 when out of
 * memory. */
int responses_request_parts(struct chat *c, const cJSON *head,
			    struct model_body *out);

/* --- answer.c: the request of the chat's API -------------------------- */

/* The request body for what c sends, in the shape of c->api: Chat
 * Completions (chat_request_parts), Messages (anthropic_request_parts) or
 * Responses (responses_request_parts); the budget applied first.  -1
 * when out of memory. */
int answer_request(struct chat *c, const cJSON *head, struct model_body *out);

/* --- prices.c: what a model call cost ------------------------------- */

/* The price table: the rows of the user's prices.json in
 * ${XDG_CONFIG_HOME:-$HOME/.config}/agent-harness/ first, then those of
 * share/prices.json; a row is {"model": GLOB, "input", "cached_input",
 * "cache_write", "output", "reasoning": USD per million tokens, "date",
 * "source"}.  A file that is not such an array is an AH_EFORMAT error
 * naming it.  NULL on error; the caller frees it. */
cJSON *prices_load(struct ah_error *err);
/* The first row whose pattern (fnmatch(3)) matches model, or NULL. */
const cJSON *prices_find(const cJSON *table, const char *model);
/* What a call of usage u (as agent-step records it, of any API) cost at
 * the prices of row, in USD; a missing price is the input's (cached
 * input, cache writes) or the output's (reasoning). */
double prices_cost(const cJSON *row, const cJSON *u);
/* The ledger at path (a file of ours, made when missing, under flock):
 * what the calls that share it spent, and the last one. */
int cost_ledger_read(const char *path, double *total, double *last,
		     struct ah_error *err);
int cost_ledger_add(const char *path, double cost, struct ah_error *err);

/* --- ratelimit.c: one rate-limit budget per endpoint, machine-wide ---- */

struct ratelimit;

/* What an answer's headers said of the budget: [0] requests, [1] tokens,
 * [2] Anthropic's input tokens; each its limit, remaining, and seconds
 * until it is whole again. */
struct ratelimit_seen {
	double v[3][3];
	int set[3][3];
};

enum { RATELIMIT_WAITING, RATELIMIT_WAITED };

/* A wait: said once when it will be long (WAITING: seconds is the
 * estimate), and when it is over (WAITED: the seconds waited). */
struct ratelimit_wait {
	int phase;
	double seconds;
	const char *reason;   /* retry-after, budget, queue, probe,
				 concurrency */
	const char *endpoint;
};

/* The state shared by the sessions of base_url and key (which is only
 * hashed), in ${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}/agent-harness/: a
 * directory or file that is not ours with no access for others is an
 * error.  max_concurrent: requests in flight at most, machine-wide; 0
 * for no bound.  NULL on error. */
struct ratelimit *ratelimit_open(const char *base_url, const char *key,
				 int max_concurrent, struct ah_error *err);
void ratelimit_free(struct ratelimit *rl);
/* Waits until a request of about tokens may go: in the order the
 * sessions came, after the back-off of a 429, within the budget the
 * server told of and the bound of requests in flight.  0, or -1 (err:
 * AH_EINTR when *stop was set, AH_ENET when deadline (monotonic)
 * would pass first).  on_wait, when not NULL, hears of the wait. */
int ratelimit_acquire(struct ratelimit *rl, double tokens, double deadline,
		      volatile sig_atomic_t *stop,
		      void (*on_wait)(void *, const struct ratelimit_wait *),
		      void *ctx, struct ah_error *err);
/* A header of the answer, taken into seen when it tells of the budget. */
void ratelimit_header(struct ratelimit_seen *seen, const char *name,
		      const char *value);
/* After the request acquired: what the server said (status 0: no
 * answer).  A 429 makes every session wait; *wait is that wait, else
 * -1. */
void ratelimit_done(struct ratelimit *rl, const struct ratelimit_seen *seen,
		    long status, double retry_after, double *wait);

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
	struct ratelimit *rl;  /* the endpoint's shared budget, or NULL */
	double tokens;         /* about the tokens of the request, for it */
	void (*on_wait)(void *ctx, const struct ratelimit_wait *w);
};

struct model;

#define MODEL_FLAT_MAX (64 * 1024)

/* Ends libcurl, if a model_new loaded it; once, at the end. */
void model_global_cleanup(void);
/* One connection, kept alive from one call to the next: over http.c for
 * a plain http:// URL, else over libcurl, loaded then. */
struct model *model_new(const struct model_opts *o, struct ah_error *err);
void model_free(struct model *m);
/* Sends body and reads the answer into reply (initialised here).  A
 * body up to MODEL_FLAT_MAX bytes goes as one buffer, a longer one is
 * read out of its parts as it is sent (with its Content-Length, and
 * read again from the start for a retry or a rewind).  The
 * request id the server gave goes to request_id.  On failure err->code
 * is AH_ENET, AH_EAPI or AH_EAPIRETRY, or AH_EFORMAT/AH_ETOOBIG for an
 * answer we cannot use; the message has the status, the API's message and
 * the request id, never the key.  An attempt ends when no data event (a
 * stream) or no byte (a whole answer) came for o->timeout seconds; the
 * call ends, AH_ENET, not retried, when o->deadline passes. */
int model_call(struct model *m, const struct model_opts *o,
	       struct model_body *body, struct reply *reply, char *request_id,
	       size_t idsize, struct ah_error *err);

/* --- shsplit.c: shell command lines for permission rules ------------- */

/* Splits a command line into the simple commands it runs:
 * {"commands": [[argv...], ...], "redirects": [targets...],
 *  "outputs": [output targets, a descriptor as "&N"], "complex": b,
 *  "literal": b, "dynamic_command": b}.
 * "complex" is false only for a line within the allow-listed grammar of
 * hook-perm(1), "The grammar"; then "commands" lists every command bash
 * runs.  Quotes are removed; expansions are kept as text.  A command goes
 * in as written, leading assignments included; when it has assignments
 * or is a wrapper (command, env, nice, timeout, xargs, ...), the command
 * it runs follows as an entry of its own.  For a complex line a lenient
 * reader still lists what it finds, for deny rules; no rule may trust it
 * to allow.  "dynamic_command": a command's name is known only when it
 * runs.  NULL when out of memory. */
cJSON *shell_split(const char *cmd);

/* --- policy.c: permission rules in jq ---------------------------------- */

enum { DECIDE_ALLOW = 0, DECIDE_ASK = 1, DECIDE_DENY = 2 }; /* by strictness */

struct rule {
	char *name, *expr, *reason;
	int decision;
	int always; /* an allow that answers the asks of other rules */
};

/* Who evaluates the rules: nobody yet, a child forked here from the
 * compiled rules, or a policy server's worker (policysrv.c). */
enum { POLICY_NO_WORKER, POLICY_CHILD, POLICY_SERVER };

struct policy {
	int deflt;          /* when no rule matches */
	struct rule *rules;
	int n;
	char *source;       /* the file, or "built-in" */
	void *jq;           /* the compiled rules (jq_state *) */
	char *prog;         /* the jq program of all rules, once made */
	size_t prog_len;
	int worker;         /* POLICY_* */
	pid_t pid;          /* POLICY_CHILD: the child */
	int to_worker, from_worker; /* its pipes; a server's: one socket */
};

struct verdict {
	int decision;
	char rule[128];
	char reason[512];
};

/* What the rules gave for one input, for policy_verdict. */
struct rule_results {
	int n;                  /* the rules that gave a result, in order */
	unsigned char *matched; /* matched[i] for i < n: rule i is true */
	int failed;             /* the first rule that failed, or -1 */
	char why[320];          /* its error */
	double timed_out;       /* rule n ran past this many seconds; 0: no */
};

/* The built-in policy (share/policy.json), as JSON text. */
const char *policy_builtin(void);
const char *decision_name(int d);
/* Reads a policy: {"default": D, "rules": [{"name", "if", "decision",
 * "reason"}, ...]}.  Its errors name the source and the rule. */
int policy_parse(struct policy *p, const char *text, size_t len,
		 const char *source, struct ah_error *err);
/* Compiles every rule into one jq program (libjq starts here, once);
 * a rule that does not compile is an error naming it. */
int policy_compile(struct policy *p, struct ah_error *err);
/* Compiles the rules if need be and forks the worker that evaluates
 * them, unless one runs (or a server's is attached), so that the first
 * policy_eval finds it ready. */
int policy_start(struct policy *p, struct ah_error *err);
/* Runs the rules on input, in a worker bounded by timeout seconds (a
 * child forked from the compiled rules, started first if need be,
 * unless a server's worker is attached) and gives policy_verdict.
 * -1 only when no worker can be had. */
int policy_eval(struct policy *p, const cJSON *input, double timeout,
		struct verdict *v, struct ah_error *err);
/* The verdict: every matching rule counts and the strictest wins (deny
 * over ask over allow); none matching gives the default.  A rule that
 * failed, ran too long, or gave no result denies, naming it.  "{tool}"
 * in a reason becomes tool.  No I/O: a unit test can call it. */
void policy_verdict(const struct policy *p, const struct rule_results *r,
		    const char *tool, struct verdict *v);
void policy_free(struct policy *p);

/* The rule input of a call, the contract of every rule (hook-perm(1)):
 * {tool, args, id, workdir}, and for bash what shell_split finds in
 * args.command (commands, redirects, outputs, complex, literal,
 * dynamic_command;
 * complex is true when command is not a string).  args is copied.
 * NULL when out of memory. */
cJSON *policy_input(const char *tool, const cJSON *args, const char *id,
		    const char *workdir);
/* The policy text (NULL: the built-in one) with a rule named name added
 * that allows exactly this call: its tool, and the member of args that
 * says what it does (call_gist_key), or all of args.  A new text, or
 * NULL (the text is not a JSON object, or memory ran out). */
char *policy_always(const char *text, size_t len, const char *tool,
		    const cJSON *args, const char *name, struct ah_error *err);

/* Trust in a policy found in a working directory: its SHA-256 and its
 * absolute path, one "sha256:HEX PATH" line each, in the store
 * ${XDG_CONFIG_HOME:-$HOME/.config}/agent-harness/trusted-policies. */
void policy_hash(const char *text, size_t len, char hex[65]);
/* 1 when this text of file is trusted, 0 when not, -1 on error. */
int policy_is_trusted(const char *file, const char *text, size_t len,
		      struct ah_error *err);
/* Records this text of file as trusted, replacing what was recorded for
 * file before. */
int policy_trust(const char *file, const char *text, size_t len,
		 struct ah_error *err);

/* --- modes.c: agent-run's modes, presets of policy and sandbox -------- */

/* A mode of share/modes.json (plan, ask, edit, auto). */
struct run_mode {
	char name[16];
	int sandbox;      /* the sandbox it holds commands and file tools in
			     (enum sandbox_mode), or -1: as given */
	int approve_asks; /* every ask of the policy is approved (-y) */
};

/* Looks the mode name up: 0 with *m, or -1 (an unknown name: AH_EFORMAT,
 * saying which names there are). */
int mode_lookup(const char *name, struct run_mode *m, struct ah_error *err);
/* The policy text (from source, for its errors) with the rules of mode
 * name added after its own, and a "mode" member saying what the mode is:
 * a new text, or NULL with err (the policy's own errors first). */
char *mode_policy(const char *text, size_t len, const char *source,
		  const char *name, struct ah_error *err);
/* Whether tool leaves the workspace as it is: only those run in the
 * read-only sandbox. */
int mode_tool_reads_only(const char *tool);
/* Whether tool may run in the read-only sandbox: it leaves the workspace
 * as it is (mode_tool_reads_only), and for run_todo_write, the todo file
 * todo_path is in the state directory (state_dir: .agent/, else under
 * AGENT_STATE_DIR when it is set). */
int mode_may_run(const char *tool, const char *todo_path);
/* The result of a call of tool refused in the read-only sandbox, into
 * *res: TOOL_ERROR, or -1 when out of memory (*res NULL). */
int mode_refuse(const char *tool, char **res);

/* --- cctool.c: other agents' tool calls, and their hooks' answers ---- */

/* The agents whose PreToolUse hooks hook-perm --format answers. */
enum { HOOK_AGENT_CLAUDE, HOOK_AGENT_CODEX, HOOK_AGENT_GEMINI };

/* HOOK_AGENT_* for "claude", "codex" or "gemini"; -1 for another name. */
int hook_agent(const char *name);
/* The absolute form of path (relative to workdir, an absolute path)
 * with "." and ".." taken out as text; *inside: it is workdir or under
 * it.  NULL when out of memory. */
char *hook_path_in(const char *path, const char *workdir, int *inside);
/* A tool call of agent (tool_name, tool_input) as ours: *tool our name
 * (or name, for a tool we do not know, borrowed from the arguments or
 * a constant), and the arguments returned: file paths as "path"
 * (relative to workdir when inside it), a command line as "command".
 * NULL when out of memory. */
cJSON *hook_our_call(int agent, const char *name, const cJSON *input,
		     const char *workdir, const char **tool);
/* One of our calls as Claude Code names it: *name (borrowed), and the
 * input returned, with absolute "file_path"s and a timeout in
 * milliseconds.  NULL when out of memory. */
cJSON *hook_cc_call(const char *tool, const cJSON *args, const char *workdir,
		    const char **name);
/* What agent's PreToolUse hook prints for a decision (DECIDE_*): one
 * line of JSON without newline, or "" when nothing is to be printed
 * (Codex: an allow).  Codex can neither allow nor ask: an ask is a
 * deny.  NULL when out of memory. */
char *hook_answer(int agent, int decision, const char *reason);

/* --- hooks.c: Claude Code-style hooks ------------------------------- */

enum { HOOK_PRE_TOOL_USE, HOOK_POST_TOOL_USE, HOOK_USER_PROMPT_SUBMIT,
       HOOK_SESSION_START, HOOK_STOP, HOOK_SUBAGENT_STOP, HOOK_PRE_COMPACT,
       HOOK_NOTIFICATION, HOOK_SESSION_END, HOOK_NEVENTS };

#define HOOK_TIMEOUT 60            /* seconds, when a hook gives none */
#define HOOK_OUTPUT_MAX (64 * 1024) /* bytes kept of a hook's stdout, stderr */

struct hook {
	int event;
	char *command;   /* for a type we cannot run, the type */
	char *matcher;   /* "" for all */
	char *source;    /* the settings file */
	double timeout;
	int runnable;    /* a "command" hook */
	int is_regex;
	regex_t re;
};

struct hooks {
	struct hook *h;
	int n;
	char *ignored;   /* the events of the settings we do not run, or NULL */
};

/* HOOK_* of an event's name, -1 for another; and back. */
int hooks_event(const char *name);
const char *hooks_event_name(int event);
/* Adds the hooks of a settings file's text ({"hooks": {EVENT: [{"matcher",
 * "hooks": [{"type", "command", "timeout"}]}]}}; other members are not
 * ours).  A shape we do not know is an error naming source. */
int hooks_add(struct hooks *h, const char *text, size_t len,
	      const char *source, struct ah_error *err);
void hooks_free(struct hooks *h);
/* Nonzero when hook x runs for event on subject (a tool's name, ...):
 * no matcher, "" or "*": always; letters, digits, '_' and '|': one of
 * the names; else an extended regular expression, anywhere in it. */
int hooks_match(const struct hook *x, int event, const char *subject);

enum { HOOK_RAN = 0, HOOK_UNRUNNABLE, HOOK_NOSTART, HOOK_TIMEOUT_HIT,
       HOOK_SIGNALED, HOOK_UNREADABLE, HOOK_EXITED, HOOK_STOPPED };

struct hook_result {
	const struct hook *hook;
	int status;          /* its exit status, or -1 */
	int failed;          /* HOOK_* above; HOOK_RAN when it ran to its end */
	int overflow;        /* stdout or stderr passed HOOK_OUTPUT_MAX */
	struct buf out, err;
};

/* Runs the hooks of event matching subject, at once, each `sh -c
 * COMMAND` in a process group of its own, in cwd, with env, the input
 * on stdin; one past its timeout is killed with its group, and so is
 * every one once *stop is set (by a signal handler; NULL: never).  *out
 * (free with hook_results_free) gets the *nout results, in the
 * settings' order.  -1 when they could not be run at all. */
int hooks_run(const struct hooks *h, int event, const char *subject,
	      const char *input, char *const *env, const char *cwd,
	      volatile sig_atomic_t *stop, struct hook_result **out,
	      int *nout, struct ah_error *err);
void hook_results_free(struct hook_result *r, int n);

/* What the hooks of one event answered, the strictest first. */
struct hook_answer {
	int decision;        /* DECIDE_*, or -1: nobody decided */
	struct buf reason;   /* the reasons of that decision, a line each */
	struct buf context;  /* additionalContext (and plain stdout where
				Claude Code takes it as context) */
	struct buf failures; /* the hooks that failed, a line each */
	cJSON *updated;      /* PreToolUse: the last updatedInput, unless
				denied */
	int stop;            /* a hook said "continue": false */
};

/* Reads the results as Claude Code does (exit 2: block, stderr the
 * reason; exit 0: the JSON on stdout), but a failing hook (another exit,
 * a signal, a timeout, stdout that is not an answer) denies a
 * PreToolUse call unless fail_open. */
void hooks_answer(const struct hook_result *r, int n, int event,
		  int fail_open, struct hook_answer *a);
void hook_answer_free(struct hook_answer *a);

/* --- hookmoment.c: the moments of agent-run's session (hook-cc --add) - */

/* Adds to in the fields of event's input at its moment of an agent-run
 * session, from arg: SessionStart's source (arg, also *subject, what
 * the matchers are tried on; else ""), UserPromptSubmit's prompt (arg),
 * Stop's and SubagentStop's stop_hook_active (arg not ""), PreCompact's
 * trigger "auto" (also *subject), SessionEnd's reason ("exit" when arg,
 * the run's exit status, is "0", else "other").  -1 out of memory, or
 * for another event. */
int hook_moment_input(cJSON *in, int event, const char *arg,
		      const char **subject);
/* What agent-run makes of a, the answer of event's hooks: the text of
 * the message for the model into add ("Context from a ... hook", or a
 * Stop hook's reason), nothing when there is none; the words it says
 * into say (a UserPromptSubmit block, a Stop block).  1 when the hooks
 * blocked (the task, or the model's stop), 0 when not, -1 out of
 * memory. */
int hook_moment_answer(int event, const struct hook_answer *a,
		       struct buf *add, struct buf *say);

/* --- policysrv.c: the compiled rules, kept for other processes ------- */

/* Creates the socket at path, for this user only; it must not exist. */
int policy_listen(const char *path, struct ah_error *err);
/* Serves on lfd: a client that sends the program of p gets a worker of
 * its own, forked from the compiled rules.  For a client with other
 * rules, reload reads the policy again into a fresh struct (parsed, not
 * compiled): when that one has the client's rules it replaces p;
 * still other rules are refused, so that the server only ever runs
 * rules from the policy file.  Returns when the process starter ends,
 * when path is removed or replaced, or when *stop becomes non-zero. */
int policy_serve(struct policy *p, int lfd, const char *path, pid_t starter,
		 int (*reload)(void *ctx, struct policy *fresh,
			       struct ah_error *err),
		 void *ctx, volatile sig_atomic_t *stop, struct ah_error *err);

/* A client of a policy server. */
struct policy_client {
	const char *server; /* its socket, or NULL for none */
	int failed;         /* it could not be used: evaluate here */
};

/* Readies p's worker before the first call: the server's, when c has
 * one with the same rules (which saves compiling them: it connects and
 * hands the server p's program), else one forked here (policy_start).
 * Once the server fails (none, other rules, gone), the rules are
 * compiled and evaluated here.  -1 only when neither can be had (a rule
 * that does not compile). */
int policy_client_start(struct policy_client *c, struct policy *p,
			double timeout, struct ah_error *err);
/* policy_eval, by the worker policy_client_start readies, readied
 * again first when none runs (it ended: a rule ran too long). */
int policy_client_eval(struct policy_client *c, struct policy *p,
		       const cJSON *input, double timeout, struct verdict *v,
		       struct ah_error *err);

/* --- redact.c: secrets out of text ----------------------------------- */

/* Replaces secrets in s by "[REDACTED]", in place (s never grows): the
 * strings of secrets (NULL-terminated list; the API key we hold), keys and
 * tokens of the usual providers (sk-, ghp_, github_pat_, xoxb-, AKIA,
 * AIza, hf_, ...), and the credential after "Bearer", "Authorization:",
 * "x-api-key:". */
size_t redact(char *s, const char *const *secrets);
/* Only the first part of redact: the strings of secrets (8 bytes or
 * more; one shorter than the mark becomes as many '*'), nothing that
 * merely looks like a key.  For the model's own text, which may quote
 * key-like strings on purpose but must never carry the key we hold. */
size_t redact_exact(char *s, const char *const *secrets);
void redact_json_exact(cJSON *v, const char *const *secrets);
/* redact on every string of v, object keys included. */
size_t redact_json(cJSON *v, const char *const *secrets);
/* All three return how many they replaced. */
/* A message as it is kept on disk (the transcript, hook-audit --tee):
 * redact on each of its strings.  1 and *out (malloc'd, one line
 * without its newline) when something was redacted, 0 and *out NULL
 * when nothing was (the line is kept as it came, byte for byte), -1
 * when memory ran out. */
int redact_line(const cJSON *msg, const char *const *secrets, char **out);

/* --- audit.c: the audit log ------------------------------------------ */

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

/* --- events.c: the events of agent-run --json -------------------------- */

/* Appends to out the events of one message (agent-harness(5)), each a line
 * with its newline: an assistant message gives "assistant", "usage" (when
 * it has one) and a "tool_call" per call with its decision; a tool result
 * "tool_result" (its first 2 KiB); a user message "user", or
 * "compaction" for a compaction entry; a system message none.  All
 * redacted.  0, or -1 (out of memory). */
int events_of_message(struct buf *out, const cJSON *msg, const char *session,
		      const char *const *secrets, struct ah_error *err);

/* Writes the events p[0..len) to fd as one piece: under a POSIX lock of
 * fd, since every session of a run writes to the same descriptor (the
 * children of task calls in parallel too) and a write past PIPE_BUF
 * would interleave with theirs.  A descriptor that takes no lock is
 * written anyway.  0, or -1 with errno set. */
int events_write(int fd, const char *p, size_t len);

/* What events_of_todo saw of the todo file last. */
struct event_todo {
	int known, quiet; /* quiet: the first look tells nothing */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

/* Appends a "todo" event with the list of the file at path when the file
 * changed since *seen (its inode, size or time): the list as the file
 * holds it, or "error" when it is not one.  0 (also when unchanged or
 * absent), or -1 (out of memory). */
int events_of_todo(struct buf *out, const char *path, struct event_todo *seen,
		   const char *session, struct ah_error *err);

/* --- session.c: the records of agent-run's sessions ------------------ */

/* The longest session id. */
#define SESSION_ID_MAX 128

/* id is a session id: letters, digits, '.', '_' and '-', not starting
 * with '.' or '-', at most SESSION_ID_MAX bytes (it names files). */
int session_id_ok(const char *id);
/* The tokens of a usage object: its total_tokens, else prompt plus
 * completion (input plus output); 0 for none. */
double usage_tokens(const cJSON *usage);
/* The time now, as the records keep it: 2026-12-03T18:04:05Z. */
void session_now(char out[32]);

/* What a transcript adds up to.  from: the last line before this run;
 * the run_ fields, tool_calls and denied count the lines after it. */
struct session_stats {
	unsigned long from;
	double model_calls, tokens, run_calls, run_tokens;
	double tool_calls, denied;
	double cost, run_cost;   /* USD, of the calls that have a cost_usd */
	int cost_unknown, run_cost_unknown; /* a call without one */
	cJSON *denials; /* this run's denied calls, [{tool, reason}], the
			 * first SESSION_DENIALS_MAX of them; NULL when out
			 * of memory */
	int answered;  /* it ends with an answer: an assistant message
			* without tool calls */
	char *answer;  /* that answer's text, when it is text */
};

/* Reads the transcript at path (never through a link under .agent) into
 * *st, which the caller zeroed (but for from).  Lines that are not
 * messages count for nothing.  0, or -1 when it cannot be read. */
#define SESSION_DENIALS_MAX 100
int session_stats(const char *transcript, struct session_stats *st,
		  struct ah_error *err);
void session_stats_free(struct session_stats *st);

/* The record at path, an object with an "id"; NULL on error. */
cJSON *session_read(const char *path, struct ah_error *err);
/* Replaces the record at path with rec, atomically. */
int session_write(const char *path, const cJSON *rec, struct ah_error *err);
/* Appends to out the records of the sessions of the directory whose
 * .agent is agentdir (session.json, then each sessions/ID.json), newest first
 * (by "updated"), one a line; a "running" one whose agent-run is gone
 * (its lock free) is shown "interrupted".  0, or -1. */
int session_list(const char *agentdir, struct buf *out, struct ah_error *err);
/* What the child sessions of session id (task calls; records under
 * agentdir/sessions whose "parent" is id) add up to: sums[0] sessions,
 * sums[1] model calls, sums[2] tokens, sums[3] their cost in USD,
 * sums[4] how many have no known cost, each child's own children
 * included (its record has them).  0, or -1. */
int session_children(const char *agentdir, const char *id, double sums[5],
		     struct ah_error *err);

/* --- sessdir.c: agent-run's session bookkeeping ---------------------- */

/* The state directory: $AGENT_STATE_DIR when set, else ".agent" (the
 * workspace's).  Where the session lives: transcript, record, lock,
 * sessions/, outputs/, the audit log. */
const char *sessdir_state(void);

/* agent-session --prepare, --open and --close for agent-run
 * (agent-session(1)).  The caller fills the first fields; each function
 * appends shell assignments for agent-run to eval to out (even when it
 * fails: what was decided before), and what agent-run says on the way to
 * notes (entries of a kind byte, 'q' said unless -q, 'e' always, then
 * the text and a NUL).  -1 when it fails: err.msg is agent-run's message
 * (without "agent-run: "), status its exit status, usage set for a usage
 * error.  sessdir_free frees what they made (not the struct). */
struct sessdir {
	const char *workdir;     /* the workspace, as messages name it */
	const char *child;       /* a task call's id: a child session */
	const char *session;     /* --session: an id, or its prefix */
	int cont, resume, fork, ephemeral;
	const char *rewind;      /* --rewind's checkpoint */
	const char *rewind_what; /* both, code or conversation */
	const char *task;        /* the task (for --fork and --rewind) */
	const char *amode;       /* the mode given, or a default ("" none) */
	int amode_given;         /* by --mode or -y: over the session's own */
	const char *sandbox;     /* the sandbox's mode */
	int sandbox_given;       /* by --sandbox */
	const char *plan_text;   /* --open: plan mode's text, for mode_note */
	const char *close_todo;  /* --close: the session's todo file */
	const char *close_id;    /* --close: the session's id */
	long pid;                /* agent-run's, for a new session's id */
	int lock_fd;             /* agent-run's lock, held */
	const char *const *secrets;
	struct buf out, notes;
	struct ah_error err;
	int status, usage;
	/* made here */
	char *state, *A, *T, *S, *L, *todo, *todo_fixed, *parent, *call, *id;
	char *resolved, *bfile, *bsrc, *bmsg;
	long bkeep, bstep;
	char shown[4200];         /* a path as a message shows it */
};
/* Before agent-run's lock: the state directory checked (nothing in it a
 * link, or what it should not be) and made, the paths of the session's
 * files (a child's named after its parent and the task call). */
int sessdir_prepare(struct sessdir *sd);
/* Under the lock: the session (new, continue, resume or branch), the
 * one before it put aside or the one named taken up, the todo file, the
 * id and the permission mode; --rewind's files put back (agent-snap
 * restore) and its transcript made. */
int sessdir_open(struct sessdir *sd);
/* At the end: an --ephemeral session removed, or a new one that failed
 * before the model answered put aside; prev is the last session again. */
int sessdir_close(struct sessdir *sd, int status, const char *prev);
void sessdir_free(struct sessdir *sd);
/* The todo file holds a list a run_todo_write call of the transcript
 * stored (its rendering is one of the transcript's tool results). */
int sessdir_todos_ours(const char *transcript, const char *todo,
		       const char *const *secrets);
/* The mode_mark of a session record that names mode for session id:
 * a hash of the user's key, the state directory's device and inode, id
 * and mode, in hex (64 digits and a NUL).  A record that a repository
 * shipped, or that was copied, cannot have it: the mode it names is not
 * kept when its session goes on (agent-run(1), Modes).  0, or -1 with
 * err. */
int sessdir_mode_mark(const char *id, const char *mode, char hex[65],
		      struct ah_error *err);

/* --- sessmark.c: the session mark, what makes a session the user's own */

/* A session is continued (-c, --resume, --session, --fork, --rewind)
 * only when its record's session_mark checks: a hash of the user's key,
 * the state directory's device and inode, the session's id and the first
 * marked_bytes bytes of its transcript (agent-run(1), Sessions).
 * sessmark_set puts it in rec for transcript's whole lines (NULL: none
 * yet); unless fresh, only when rec's mark checks for transcript as it
 * was marked: 1 marked, 0 not (rec as it was, why in err), -1 on error. */
int sessmark_set(cJSON *rec, const char *transcript, int fresh,
		 struct ah_error *err);
/* The record at path is that of session id (NULL: any) and its mark
 * checks for transcript: 1; 0 when not (why in err->msg, "its record has
 * no mark" ...); -1 when it cannot be told (no key: err). */
int sessmark_check(const char *record, const char *transcript,
		   const char *id, struct ah_error *err);
/* agent-session --claim ID: the user says session id (the current one,
 * or one kept in sessions/) is theirs: its record is marked for its
 * transcript as it is, under the state directory's lock.  *transcript:
 * its path (the caller's).  0, or -1 with err. */
int sessmark_claim(const char *id, char **transcript, struct ah_error *err);
/* A run of the session whose record is rec begins (agent-session
 * --reopen): lines may follow its mark until it ends (sessmark.c). */
int sessmark_reopen(const cJSON *rec, struct ah_error *err);

/* --- file.c: whole files, atomically ----------------------------------- */

/* Writes all of p[0..len) to fd, again after a short write or EINTR.
 * 0, or -1 with errno set. */
int write_all(int fd, const char *p, size_t len);

/* Reads the whole file at path, at most max bytes (a larger file is an
 * AH_ETOOBIG error).  Returns 1 and sets *data and *len (NUL-terminated,
 * the caller frees), 0 when the file does not exist, -1 on error.  A
 * path under .agent is opened with agent_open (no link followed). */
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
 * permission bits but for set-user-ID and set-group-ID.  The directory of
 * a path under .agent is opened with agent_open_dir (no link followed). */
int file_replace(const char *path, const void *data, size_t len,
		 struct ah_error *err);

/* --- agentdir.c: the harness's own files, never through a link ------- */

/* Opens a file the harness reads or appends to (a transcript, the audit
 * log) with open(2)'s flags and mode, O_CLOEXEC added.  Under .agent
 * (a path with a component named ".agent"), that directory and every
 * component after it are opened beneath the one before without
 * following symbolic links (O_DIRECTORY|O_NOFOLLOW, the file O_NOFOLLOW)
 * and ".." there is refused; what comes before .agent is resolved as
 * usual.  With O_CREAT the missing directories are made, beneath the one
 * before (.agent 0777, those under it 0700, less the umask).  Every file
 * the harness reads or writes under .agent is opened through it (or
 * agent_open_dir), at any depth.
 * Any other path: its last component is not followed.  In both cases
 * the file must be a regular file: a symbolic link, a FIFO, a device, a
 * socket or a directory is an AH_EFORMAT error naming the path, found
 * before the file is opened (and checked again on the descriptor), so
 * nothing is ever read from or written to it.  what (NULL, or a noun
 * with a trailing space, "the audit log ") goes before the quoted path
 * in messages.  Returns the descriptor (blocking), or -1. */
int agent_open(const char *path, const char *what, int flags, mode_t mode,
	       struct ah_error *err);

/* The directory path, opened O_RDONLY | O_DIRECTORY (for flock, fsync
 * and the *at calls): under .agent, walked as agent_open walks it (no
 * link followed from .agent on, ".." refused), the missing directories
 * made when create; any other path opened as usual.  -1 on error. */
int agent_open_dir(const char *path, int create, struct ah_error *err);

/* The state directory, where a session is kept: AGENT_STATE_DIR (its
 * trailing slashes dropped) when it is set and not empty, else ".agent"
 * (of the workspace, the working directory).  It takes .agent's place
 * for what the harness writes (transcripts, records, lock, sessions/,
 * outputs/, the audit log, snap/, plan mode's plan.md and todo.json);
 * .agent/policy.json and .agent/skills stay the project's.  A path
 * beneath it, spelled as state_path spells it, is walked by agent_open
 * as one under .agent is.  Points to static storage (or the
 * environment): valid until the next call. */
const char *state_dir(void);

/* Nonzero when AGENT_STATE_DIR is set (and not empty). */
int state_dir_given(void);

/* "STATE_DIR/name" into buf; -1 with err when it does not fit. */
int state_path(char *buf, size_t size, const char *name,
	       struct ah_error *err);

/* Checks AGENT_STATE_DIR for the workspace (the comment in agentdir.c
 * says what is refused, and why) and, with create, makes it (0700) when
 * it is missing (its parent must exist) and marks it as the workspace's.
 * Returns 0 when it can be used (also when AGENT_STATE_DIR is unset or
 * names WORKSPACE/.agent: the callers handle .agent as they always
 * did), 1 when it is missing or still empty and create is 0 (nothing is
 * kept there), -1 with err (AH_EFORMAT for a refusal, AH_EIO when a
 * system call failed: "cannot create 'DIR', where the session is kept:
 * WHY"). */
int state_dir_check(const char *workspace, int create, struct ah_error *err);

/* The workspace that the state directory dir (absolute) serves, as its
 * mark names it, into ws: 1; 0 when dir is not there, is not a
 * directory (or is a link), or has no mark; -1 with err when the mark is
 * not a regular file or cannot be read.  Nothing else is checked
 * (state_dir_check does that). */
int state_dir_workspace(const char *dir, char *ws, size_t size,
			struct ah_error *err);

/* --- ask.c: what a person approving a call is shown ------------------ */

struct ask_shown {
	char *text;   /* the lines to show, each ending in a newline */
	char *first;  /* the first line that is not blank, at most 100 bytes
			 of it ("" when there is none) */
	size_t lines; /* the lines of the text given */
};

/* s[0..n) as a terminal may show it (utf8_for_terminal: controls as \xnn,
 * what hides or reorders text as \u{XXXX}, newlines and tabs kept), on
 * one screen: each run of blank lines (empty, or spaces and tabs only)
 * becomes one line "[N blank lines]", and past max_lines lines or
 * max_bytes bytes the rest is replaced by a line that counts it.  Both
 * strings of *out are the caller's (ask_shown_free).  -1 when out of
 * memory. */
int ask_text(const char *s, size_t n, size_t max_lines, size_t max_bytes,
	     struct ask_shown *out);
void ask_shown_free(struct ask_shown *s);

/* A unified diff of old (the file as it is) and new (as the call would
 * leave it), one hunk with three lines of context, headed by path (as
 * given, not escaped: pass the result through ask_text).  Lines are
 * compared one by one while the changed part is under 500 lines or so;
 * past that, all of it is shown removed and added.  *out is the
 * caller's.  -1 when out of memory. */
int ask_diff(const char *path, const char *old, size_t olen, const char *new,
	     size_t nlen, char **out);

/* --- self.c: the harness's own programs, never found on PATH ---------- */

/* The path of the harness's program name (agent-run, agent-step, ...):
 * name in the directory of the running program (/proc/self/exe), read
 * at the first call and kept.  PATH is never searched.  path gets at
 * most size bytes.  0, or -1 when that file is not there or cannot be
 * run. */
int harness_program(const char *name, char *path, size_t size,
		    struct ah_error *err);

/* --- path.c: files the model names, kept inside the working directory -- */

struct root {
	int fd;     /* O_PATH descriptor of the directory */
	char *path; /* its resolved absolute path */
};

int root_open(struct root *rt, const char *dir, struct ah_error *err);
void root_close(struct root *rt);

/* --- sandbox.c: confining the commands the model runs ------------------ */

enum sandbox_mode {
	SANDBOX_OFF = 0,         /* no confinement */
	SANDBOX_READ_ONLY,       /* writes only to the private tmpdir */
	SANDBOX_WORKSPACE_WRITE, /* and to the workspace, but for what is
				    protected */
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
	int watching;     /* nonzero: watch the directories walked (0 after
			     sandbox_init) */
	int watch_fd;     /* their inotify, or -1 */
	struct sandbox_watch *watch; /* by wd, ascending */
	size_t nwatch;
	struct sandbox_allow *allow; /* let into the commands' view */
	size_t nallow;
};

/* A path let into the commands' view (--allow-read, --allow-socket). */
struct sandbox_allow {
	char *src;  /* what is shown: resolved */
	char *dst;  /* where: the absolute path as named */
	int socket; /* a unix socket, to connect to */
};

/* Lets the file or directory path (absolute, or relative to the
 * workspace) into the commands' view, read-only; socket: path must be a
 * unix socket, which commands may then connect to.  An error when it is
 * not there (or not a socket). */
int sandbox_allow(struct sandbox *sb, const char *path, int socket,
		  struct ah_error *err);

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

/* Removes the temporary directory and frees *sb. */
void sandbox_free(struct sandbox *sb);

/* --- proc.c: running a command for the model ------------------------- */

/* The bounds of one call, and how they are enforced.  The caller sets the
 * first three; proc_limits_prepare fills the rest, once. */
struct proc_limits {
	long procs;           /* processes (and threads) at once; 0: none */
	long long memory;     /* bytes for the whole call; 0: none */
	long long file_size;  /* bytes a file may be written to; 0: none */
	const char *tag;      /* the cgroups' names end in it; NULL: none */
	int prepared;
	int by_cgroup;        /* PROC_LIMIT_* bits a cgroup enforces */
	char *cg_pids;        /* the cgroup directory counting processes */
	char *cg_mem;         /* the one bounding memory (may be cg_pids) */
	int cg_v2;            /* cgroup v2 (else v1) */
	char *warning;        /* what is weaker than asked, for the caller to
				 say once; NULL if nothing */
};

enum { PROC_LIMIT_PROCS = 1, PROC_LIMIT_MEMORY = 2, PROC_LIMIT_FSIZE = 4 };

/* The helper of a session: a process set up once in the sandbox (mount
 * namespace, seccomp, Landlock ruleset, cgroups) that forks each command
 * from itself; it dies with its caller.  See proc_helper_start. */
struct proc_helper {
	pid_t pid;        /* 0: none */
	int sock;         /* to it; -1: none */
	int ready;        /* its first word read: 1 ready, 0 not yet */
	struct buf snap;  /* the sandbox_snapshot it was set up for */
	pid_t warm;       /* the supervisor of a shell started ahead, waiting
			     for its command (proc_prestart); 0: none */
	int warm_fd[4];   /* its output, error and status pipes (read ends)
			     and its command pipe (write end) */
	int pids_extra;   /* the cgroup's process limit has one more for it */
};

/* Ends the helper (and with it any command it runs) and frees *h. */
void proc_helper_stop(struct proc_helper *h);

/* Makes this process the reaper of its orphaned descendants, so that
 * proc_run can find and kill children that left the process group. */
int proc_become_subreaper(void);

/* Removes the cgroups and frees what prepare made. */
void proc_limits_free(struct proc_limits *l);

/* The environment of the commands: the variables of environ on the
 * allow-list (see tool-exec(1)) and those named in pass, in a new
 * NULL-terminated array (free with proc_env_free).  A name in pass that
 * proc_env_secret refuses is an error naming it. */
char **proc_env_build(const char *const *pass, size_t npass,
		      struct ah_error *err);
void proc_env_free(char **env);

/* --- tools.c: the tools the model calls ------------------------------- */

struct task_opts;

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
	const struct task_opts *task; /* task: subagents, NULL for none */
	struct proc_helper *helper; /* bash: forks the sandboxed commands */
	const char *mcp;       /* mcp__SERVER__TOOL calls go to the
				  mcp-bridge at this socket; NULL: none */
	const char *tools;     /* the tools offered (tool-exec --tools),
				  NULL for the default set */
};

enum { TOOL_OK = 0, TOOL_ERROR = 1, TOOL_INTERRUPTED = 2 };

/* The tool definitions, a JSON array in Chat Completions form; with_task:
 * the task tool too (task_offered). */
const char *tool_schema(int with_task);

/* The definitions of the tools offered, a JSON array in *out (the
 * caller frees): those of list (names separated by commas; task only
 * with with_task), or with none the default set (tool_schema) and with
 * with_skill the skill tool.  0, 1 with msg naming a tool there is not,
 * -1 out of memory. */
int tool_schema_select(const char *list, int with_task, int with_skill,
		       char **out, char *msg, size_t size);

/* Is the tool name offered by list (NULL or "": the default set, every
 * tool but apply_patch)? */
int tool_is_offered(const char *list, const char *name);

/* Checks the arguments of a call of tool (an object) against its schema
 * (share/tools.json, share/task.json), which allows no other key: 0 when
 * they fit, or when tool is none of ours (not judged here); 1 with *why
 * set (the caller frees) to what does not fit: a key the tool does not
 * take (shown in ASCII, so that a look-alike letter shows), and with all
 * a value of the wrong type or a required key missing; -1 when out of
 * memory.  A null value counts as absent. */
int tool_args_check(const char *tool, const cJSON *args, int all,
		    char **why);

/* Does now what the first bash call would otherwise wait for: the limits'
 * cgroups, the sandbox's temporary directory and .git search, and the
 * start of ctx->helper, which sets itself up while the caller reads its
 * input.  A no-op without a sandbox or a helper. */
int tool_warm(const struct tool_ctx *ctx, struct ah_error *err);

/* While the input is idle: starts the shell of the next bash call ahead
 * (proc_prestart), so that the call does not wait for bash to start.
 * A no-op without a sandbox or a helper, or with a shell other than
 * bash; on failure the next call starts its shell itself. */
int tool_prestart(const struct tool_ctx *ctx, struct ah_error *err);

/* Runs one call: name and its arguments as the JSON text the model sent.
 * *res receives the text of the tool result (the caller frees it).
 * Returns TOOL_OK, TOOL_ERROR (the text starts with "Error:"),
 * TOOL_INTERRUPTED, or -1 when memory ran out (*res is NULL). */
int tool_call(const struct tool_ctx *ctx, const char *name,
	      const char *args, char **res);

/* --- skills.c: skills (SKILL.md, Anthropic's Agent Skills format) ------ */

struct skill_info {
	char *name, *description;
	char *path;      /* its directory, as shown: relative to the working
			    directory, or absolute for the user's own */
	int user;        /* the user's own (~/.config/agent-harness/skills) */
};

/* The skills found, in the order they are offered, and what was left
 * out (notes: a line each, "PATH: left out: WHY"). */
struct skills {
	struct skill_info *v;
	size_t n;
	struct buf notes;
	size_t found;    /* the index of the one asked for, or (size_t)-1 */
	char *body;      /* its instructions */
	struct buf files; /* the files beside it, a line each */
};

/* The skills of workdir's .agent/skills and .claude/skills, then of
 * the user's; with want, the instructions and files of that one too.
 * 0, or -1 (out of memory, err set).  skills_free frees s, whatever
 * the result. */
int skills_find(const char *workdir, const char *want, struct skills *s,
		struct ah_error *err);
void skills_free(struct skills *s);

/* The index for the model (names, descriptions, where each is), bounded
 * to 8 KiB, appended to out; nothing when there is no skill.  0 or -1. */
int skills_index(const struct skills *s, struct buf *out);

/* The text of the skill found (framed as the repository's or the user's
 * words, then its files), appended to out.  0 or -1. */
int skill_text(const struct skills *s, struct buf *out);

/* Are skills on: not turned off by AGENT_PROJECT_FILES=0 (agent-run
 * --no-project-files)? */
int skills_on(void);

/* --- task.c: the task tool, subagents as child sessions -------------- */

#define TASK_DEPTH_LIMIT 3    /* the most AGENT_MAX_DEPTH can give */
#define TASK_PARALLEL 4       /* children at once by default */
#define TASK_PARALLEL_MAX 16  /* the most AGENT_MAX_TASKS can give */
#define TASK_EVENTS_FD 8       /* agent-run --json's events, in a child */
#define TASK_TERM_GRACE 5.0   /* seconds from SIGTERM to SIGKILL */

struct task_opts {
	int depth;            /* AGENT_DEPTH of this session (unset: 0) */
	int max_depth;        /* AGENT_MAX_DEPTH (unset: 1), at most
				 TASK_DEPTH_LIMIT */
	int clamped;          /* the larger AGENT_MAX_DEPTH asked, or 0 */
	int parallel;         /* AGENT_MAX_TASKS (unset: TASK_PARALLEL) */
	size_t max_output;    /* bytes of an answer, head and tail kept */
	int progress_fd;      /* the children's stderr goes here in whole
				 lines; -1: dropped */
	double term_grace;    /* after SIGTERM, seconds before SIGKILL */
	const struct sandbox *sandbox; /* children get its mode, network and
				 git settings; NULL: the environment's */
	const char *workdir;  /* absolute: the children's AGENT_WORKDIR, or
				 NULL */
	volatile sig_atomic_t *interrupted; /* set: stop the children */
	int events_fd;        /* agent-run --json's events (AGENT_EVENTS_FD),
				 given to the children as fd 8; or -1 */
	char tty[64];         /* our terminal's path, for the children's
				 asks (AGENT_TTY); "" for none */
	const struct proc_helper *helper; /* the sandbox helper, our child:
				 not a process a child left; or NULL */
	char agent_run[4096]; /* the agent-run beside us (harness_program) */
};

/* One task call: the caller sets id and args (the JSON text the model
 * sent), and may set result and rc first (a call denied): such a call
 * is not run.  task_run sets the others. */
struct task {
	const char *id;
	const char *args;
	char *result;         /* the tool result text; the caller frees */
	int rc;               /* TOOL_OK, TOOL_ERROR or TOOL_INTERRUPTED */
};

/* Reads AGENT_DEPTH, AGENT_MAX_DEPTH and AGENT_MAX_TASKS into *o (the
 * rest gets defaults).  A value that is not a whole number in range is
 * an AH_EFORMAT error naming the variable; an AGENT_MAX_DEPTH above
 * TASK_DEPTH_LIMIT is clamped to it, and said in o->clamped. */
int task_config(struct task_opts *o, struct ah_error *err);

/* Nonzero when the depth allows a child (depth < max_depth) and there is
 * an agent-run beside us to run it. */
int task_offered(const struct task_opts *o);

/* Runs the n task calls: each call is checked, then run as
 * `agent-run --child ID [--sandbox read-only] -- PROMPT` in a new
 * session (tool-exec(1), "Subagents: the task tool"), at most
 * o->parallel at once, started in call order.  done(arg, i) is called for i = 0 .. n-1 in
 * order, each as soon as the results of 0 .. i are in.  When
 * *o->interrupted is set the running children get SIGTERM (SIGKILL to
 * their sessions after o->term_grace) and the calls not started are
 * answered as interrupted.  A child's process group is killed when the
 * child has exited; at the end, every process left that was reparented
 * to us (see proc_become_subreaper) is killed: call it when no other
 * child of ours is to live on.  Blocks SIGINT and SIGTERM but while it
 * waits.  -1 when memory ran out or done failed: then every child is
 * killed, and the results not yet given are lost. */
int task_run(const struct task_opts *o, struct task *t, int n,
	     int (*done)(void *arg, int i), void *arg);

/* --- todo.c: the TodoWrite tool ---------------------------------------- */

#define TODO_MAX_ITEMS   500
#define TODO_MAX_ID      200     /* bytes */
#define TODO_MAX_CONTENT 4000    /* bytes */
#define TODO_MAX_ARGS    (1u << 20) /* bytes of arguments or of todo.json */
/* The answer to arguments over TODO_MAX_ARGS (a printf format for it). */
#define TODO_TOO_LARGE   "Error: arguments are too large (at most %u bytes)."

enum todo_status { TODO_PENDING, TODO_IN_PROGRESS, TODO_COMPLETED };

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

/* The whole tool: parses args[0..n), validates, stores at path (unless
 * dry_run) and sets *answer to the text for the model: the rendered list,
 * or an "Error: ..." line.  Returns 0 when stored, 1 when the arguments
 * were rejected (nothing stored), -1 when storing failed (err says why;
 * *answer is then NULL). */
int todo_write(const char *path, const char *args, size_t n, int dry_run,
	       char **answer, struct ah_error *err);

/* The todo file: AGENT_TODO_FILE when set, else "todo.json". */
const char *todo_default_path(void);

/* --- mcp.c: Model Context Protocol servers, for mcp-bridge ----------- */

/* The protocol versions spoken, newest first, NULL-terminated. */
extern const char *const mcp_versions[];

struct mcp_opts {
	double start_timeout; /* seconds for initialize and tools/list */
	double call_timeout;  /* seconds of a call without progress */
	double max_timeout;   /* seconds of a call, progress or not */
	size_t max_output;    /* bytes of a result, head and tail kept */
	size_t max_message;   /* bytes of one message from a server */
	int max_restarts;     /* of a server that died, in a session */
	long max_procs;       /* processes of a stdio server at once; 0: none */
	long long max_memory; /* bytes of a stdio server's processes; 0: none */
	int verbose;          /* progress and logs go to note too */
	const char *workdir;  /* the servers' working directory */
	volatile sig_atomic_t *interrupted; /* set: a call is cancelled */
	struct sandbox *sandbox; /* stdio servers run in it (the model's
				    commands' one; its network is the
				    server's "network") unless their
				    "sandbox" is false; NULL: none */
	int sandbox_off;       /* no sandbox, as the session's commands have
				  none: servers run unconfined; else a
				  server that asks for it is not started */
	const char *sandbox_error; /* why there is none, for that error */
	const char *cafile;    /* https servers' certificates are checked
				  against it; NULL: libcurl's CA bundle */
	/* what the user should hear (a server down, a refused request),
	 * one line, secrets redacted; NULL: nothing */
	void (*note)(void *ctx, const char *text);
	void *note_ctx;
};

struct mcp_server;

struct mcp {
	struct mcp_opts opts;
	struct mcp_server **servers;
	size_t n;
	char **secrets;       /* values of the configurations' env: never
				 in a result, a message or a note */
	size_t nsecrets;
};

/* Defaults in m->opts (see mcp-bridge(1)), no server. */
void mcp_init(struct mcp *m);
/* Adds the servers of a configuration, {"mcpServers": {NAME: {...}}};
 * a server of a name added before replaces it.  Anything not understood
 * is an AH_EFORMAT error naming file and server. */
int mcp_config_add(struct mcp *m, const char *file, const char *text,
		   size_t len, int trusted, struct ah_error *err);
size_t mcp_count(const struct mcp *m);
/* A line per server: its name, what it runs, and whether it is
 * sandboxed; secrets redacted.  NULL when out of memory. */
char *mcp_describe(const struct mcp *m);
/* Starts every server (initialize, tools/list); one that fails is said
 * through note and stays down.  Returns the number that started. */
int mcp_start(struct mcp *m);
/* The tools of the servers that are up, in Chat Completions form, named
 * mcp__SERVER__TOOL.  NULL when out of memory. */
cJSON *mcp_schema(struct mcp *m);
/* Calls tool name (mcp__SERVER__TOOL) with args (JSON text); *res gets
 * the text for the model.  Any input on client (a descriptor, or -1)
 * cancels the call, as does *opts.interrupted.  TOOL_OK, TOOL_ERROR,
 * TOOL_INTERRUPTED, or -1 when memory ran out. */
int mcp_call(struct mcp *m, const char *name, const char *args, int client,
	     char **res);
/* Stops every server (stdin closed, then TERM, then KILL) and frees. */
void mcp_free(struct mcp *m);

/* The client side, in tool-exec: the bridge listening at the socket
 * path.  mcp_client_schema: the tools it offers (a JSON array, text);
 * mcp_client_call: one call, as tool_call answers it; a set
 * *interrupted cancels it. */
char *mcp_client_schema(const char *path, struct ah_error *err);
int mcp_client_call(const char *path, const char *name, const char *args,
		    volatile sig_atomic_t *interrupted, double timeout,
		    char **res);

/* --- snap.c: snapshots of the workspace (agent-snap) ------------------- */

/* A snapshot's id as shown: the first hex digits of its commit. */
#define SNAP_ID_LEN 12

/* The shadow repository .agent/snap of the working directory (which
 * every function here takes for the workspace), open and locked. */
struct snap {
	char *work;          /* the workspace, absolute */
	char *git;           /* the git program, absolute */
	char **env;          /* git's environment, made from nothing */
	int dirfd;           /* .agent/snap */
	int lockfd;          /* .agent/snap/lock, held */
	int include_ignored; /* snapshots hold ignored files too */
	char moved_aside[4200]; /* a STATE/snap not ours, moved here */
	unsigned long seq;   /* the number of the last snapshot written */
};

/* What a snapshot records besides the files. */
struct snap_meta {
	const char *session; /* NULL: none */
	long step;           /* -1: none */
	const char *calls;   /* call ids, comma-separated, or NULL */
	const char *kind;    /* "step" (NULL), "before-restore", "restore" */
	const char *of;      /* the snapshot a restore went back to */
};

/* Opens (create: makes) .agent/snap and waits for its lock.  A
 * .agent/snap that agent-snap did not make for this user there is never
 * used: an AH_EFORMAT error, or with create moved aside (its new name in
 * moved_aside) for a new one.  snap_close frees, but keeps moved_aside. */
int snap_open(struct snap *s, int create, struct ah_error *err);
void snap_close(struct snap *s);
/* Lets go of the lock of an open s, and takes it again: 1 (not locked)
 * when .agent/snap is no longer the directory s opened. */
void snap_unlock(struct snap *s);
int snap_lock(struct snap *s, struct ah_error *err);

/* Takes a snapshot of the workspace; id receives its commit (40 hex). */
int snap_take(struct snap *s, const struct snap_meta *m, char id[41],
	      struct ah_error *err);
/* The full commit of snapshot id (a unique prefix of 4 to 40 hex). */
int snap_resolve(struct snap *s, const char *id, char hash[41],
		 struct ah_error *err);
/* Appends the records of the snapshots (of session, unless NULL), newest
 * first, as JSON Lines, to out. */
int snap_list(struct snap *s, const char *session, struct buf *out,
	      struct ah_error *err);
/* Writes to outfd the unified diff from id to id2, or to the workspace
 * when id2 is NULL. */
int snap_diff(struct snap *s, const char *id, const char *id2, int outfd,
	      struct ah_error *err);
/* Puts the workspace (or paths[0..npaths) of it) back as it was at id,
 * after a snapshot of it as it is (before); after is the snapshot of the
 * result. */
int snap_restore(struct snap *s, const char *id, char *const *paths,
		 size_t npaths, char before[41], char after[41],
		 struct ah_error *err);

/* gc's budget: -1 for no bound. */
struct snap_budget {
	long long max_age;   /* seconds */
	long long max_bytes; /* of the object store */
};
struct snap_gc_result {
	size_t kept, dropped, referenced;
	long long bytes;
};
/* A checkpoint stage's knowledge of the workspace between snapshots: the
 * directories it watches and the tree of its last snapshot (snapfast.c).
 * full: every snapshot walks the whole workspace. */
struct snap_fast;
struct snap_fast *snap_fast_new(int full);
void snap_fast_free(struct snap_fast *f);
/* Takes a snapshot like snap_take: from f's last one and the paths
 * changed since, when they are known for sure, else by a whole walk. */
int snap_fast_take(struct snap *s, struct snap_fast *f,
		   const struct snap_meta *m, char id[41],
		   struct ah_error *err);

/* Drops the snapshots past the budget that no transcript of .agent (the
 * current one, sessions/ *.jsonl) refers to, oldest first, and what git
 * then no longer needs. */
int snap_gc(struct snap *s, const struct snap_budget *b,
	    struct snap_gc_result *res, struct ah_error *err);

/* --- runopts.c: agent-run's options (agent-session --run-options) ----- */

/* What runopts made of agent-run's arguments: sh, shell code for the
 * driver to eval (its variables, with values quoted; or the command that
 * answers --help, --version or --print-config); say, what to print on
 * stderr first ("agent-run: ..." lines); status, 0 or the exit status
 * (2 usage, 1 a check of the workspace failed), sh empty then.  Freed
 * with runopts_free. */
struct runopts_out {
	struct buf sh, say;
	int status;
};

/* agent-run's argv (without $0) as agent-run(1) takes it, with the
 * configuration file, the workspace's checks (the process goes to the
 * workspace) and the stdin attached to the task; bin: the directory of
 * agent-run.  Runs bin/agent-step --dry-run and bin/hook-perm to check
 * their options.  Returns out->status. */
int runopts(const char *bin, int argc, char **argv, struct runopts_out *out);
void runopts_free(struct runopts_out *out);

/* --- config.c: the user's configuration file -------------------------- */

/* ${XDG_CONFIG_HOME:-~/.config}/agent-harness/config: KEY=value lines of
 * the documented variables (config_keys()), then [profile NAME]
 * sections.  The values in force: the file's top, and the chosen
 * profile's over it. */
struct config {
	char path[4096];
	const char *profile;    /* the one chosen, or NULL */
	int found;              /* the file was read */
	int in_workspace;       /* it is inside the workspace: not read */
	size_t n;
	char *key[32], *value[32];
	unsigned line[32];
};
/* The file's path into out: 0, or -1 when neither XDG_CONFIG_HOME nor
 * HOME is an absolute path. */
int config_path(char *out, size_t size);
/* Reads the file, when there is one, for profile (NULL: none; a profile
 * named must be there).  Refused (-1, err set): a file or directory that
 * is not the user's or that others can write, a line that is not
 * KEY=value of a known key or [profile NAME], a key twice in a section.
 * A file inside workdir (NULL: the current directory) is not read
 * (in_workspace).  0, c to be freed with config_free. */
int config_read(struct config *c, const char *profile, const char *workdir,
		struct ah_error *err);
/* The value of key in c, or NULL. */
const char *config_get(const struct config *c, const char *key);
/* setenv of each key of c that the environment does not set (or sets
 * empty): the environment over the file. */
int config_apply(const struct config *c, struct ah_error *err);
void config_free(struct config *c);
/* The keys a configuration may set, NULL-terminated. */
const char *const *config_keys(void);
int config_known(const char *key);
/* The key holds a secret (*_API_KEY): shown redacted. */
int config_secret_key(const char *key);

#include "banned.h"

#endif
