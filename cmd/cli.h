/*
 * cli.h: what the programs share and the library may not do: print
 * diagnostics, decide exit codes, die.
 */
#ifndef CLI_H
#define CLI_H

#include "harness.h"

/* Exit statuses: the one table.  Each program documents the ones it uses
 * in its man page (EXIT STATUS) and in --help, and t0900 checks that the
 * two agree; all stay below 126 so that 128+signal keeps its meaning.
 * 4 has two names: no program can end in both cases (todo-write has no
 * policy, hook-perm no list), and each page says what its 4 means. */
enum {
	ES_OK = 0,
	ES_REJECTED = 1,   /* the input was refused (todo-write: an Error:
			      answer; agent-step --answer: none) */
	ES_USAGE = 2,      /* bad options or arguments */
	ES_IO = 3,         /* a file or stream could not be read or written,
			      or memory ran out */
	ES_UNFINISHED = 4, /* todo-write --check: items are left */
	ES_POLICY = 4,     /* hook-perm: the policy is not valid */
	ES_BADINPUT = 5,   /* input is not JSON Lines, or not a valid transcript */
	ES_REFUSED = 6,    /* agent-step: the API refused the request */
	ES_APIFAIL = 7,    /* agent-step: unreachable, or failing after retries */
	ES_UNUSABLE = 8,   /* agent-step: the answer cannot be used */
	ES_STEPLIMIT = 9,  /* agent-step: --max-calls reached */
	ES_FULL = 10,      /* agent-step: the context is full, compact it */
	ES_COSTLIMIT = 11, /* agent-step: --max-cost reached */
};

/* The exit status for an error the library filled: memory, I/O and
 * signals are ES_IO, the API's refusals ES_REFUSED (a request too long
 * too: a program with a context budget makes that ES_FULL itself), a
 * server out of reach or failing ES_APIFAIL, and what is malformed or
 * over a bound (AH_EFORMAT, AH_ETOOBIG) is bad: the status the program
 * gives for what it was reading (ES_BADINPUT for its input, ES_POLICY
 * for hook-perm's policy, ES_UNUSABLE for a model's answer). */
int cli_status(const struct ah_error *err, int bad);

extern const char *progname;

/* --version: every program takes it, as the option below, and answers
 * with cli_version(). */
#define CLI_OPT_VERSION 0x7f00
#define CLI_VERSION_OPTION { "version", no_argument, NULL, CLI_OPT_VERSION }

/* Prints "progname (agent-harness) VERSION" on stdout; returns the exit
 * status (0, or ES_IO when stdout fails). */
int cli_version(void);

/* Keeps this process's memory out of core files and out of reach of the
 * user's other processes (/proc/PID/mem, environ, ptrace): RLIMIT_CORE 0
 * and not dumpable.  Every program calls it first: a crash must not
 * write the API key (or what the model was shown) into the workspace. */
int cli_no_core(void);

/* Prints "progname: message" on stderr.  An error (not a message that
 * starts "warning: ") is also appended to $AGENT_ERROR_FILE when that is
 * set: agent-run keeps there what its stages said went wrong. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The same, for a note that is no error (a retry): stderr only. */
void cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The user's configuration file (agent-harness(5)), for the profile of
 * --profile NAME in argv, else $AGENT_PROFILE: its variables that the
 * environment does not set are set, so that options, then the
 * environment, then the file decide.  0, or -1 after saying why (the
 * file is not the user's, is writable by others, or not valid). */
int cli_config(int argc, char **argv);

/* Prints the error the library filled, as "progname: what: why". */
void cli_report(const struct ah_error *err);

/* Prints "progname: message" and a pointer to --help on stderr, and
 * returns ES_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reports what getopt_long (called with an optstring starting with ':')
 * returned c for, '?' or ':', and returns ES_USAGE. */
int cli_bad_option(char **argv, int c);

/* Parses a number from min to max for an option or a variable named
 * what; says what is wrong and returns -1 otherwise. */
int cli_number(const char *what, const char *s, double min, double max,
	       double *out);

/* The same for a whole number: "10.5" or "1e3" is refused, not rounded. */
int cli_whole(const char *what, const char *s, long min, long max, long *out);

/* The value of the environment variable name, else of fallback (NULL:
 * none), as AGENT_API_KEY falls back to OPENAI_API_KEY; NULL when both
 * are unset or empty. */
const char *cli_env(const char *name, const char *fallback);
/* A context window as --context-window and $AGENT_CONTEXT_WINDOW take it
 * (what names the one given): N tokens, auto (model's in the table of
 * known models, else 32768) or off (0: no budget).  0, or -1 after a
 * usage message. */
int cli_window(const char *what, const char *s, const char *model, long *out);

/* cli_whole for the environment variable var: 0 when it is unset or
 * empty (*out keeps its default) or holds such a number, else -1. */
int cli_env_whole(const char *var, long min, long max, long *out);

/* A size: bytes, or a number with K, M or G (powers of 1024), into *out;
 * NULL or empty s leaves *out as it is.  0, or -1 said as a usage error
 * naming what. */
int cli_size(const char *what, const char *s, long long *out);

/* Says "cannot write stdout: why" on stderr, once per process: later
 * failures, and cli_finish, stay quiet.  The exit status becomes ES_IO. */
void cli_stdout_failed(int errnum);

/* Writes s[0..n) (and a newline) to stdout and flushes.  0, or -1 with the
 * failure reported and errno that of the write. */
int cli_put_line(const char *s, size_t n, int newline);

/* Flushes and closes stdout: a full disk or a closed pipe is reported and
 * turns status into ES_IO.  Call it last, as `return cli_finish(status);`. */
int cli_finish(int status);

#endif
