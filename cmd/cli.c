/* cli.c: diagnostics and exit handling shared by the programs. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"

static void record_error(const char *msg);

/* Prints "progname: message" on one line of stderr: whatever the message
 * quotes (a file name, a server's error, a model's text) cannot act on
 * the terminal or start a line of its own. */
static void
vwarn(int error, const char *fmt, va_list ap)
{
	char *msg = NULL, *safe = NULL;
	int n = vasprintf(&msg, fmt, ap);

	if (n >= 0)
		safe = utf8_for_terminal(msg, (size_t)n, 0, NULL);
	fprintf(stderr, "%s: %s\n", progname,
		safe ? safe : "(a message, lost: out of memory)");
	if (error && safe && strncmp(safe, "warning: ", 9))
		record_error(safe);
	free(safe);
	if (n >= 0)
		free(msg);
}

/* An error line also goes to the end of $AGENT_ERROR_FILE, when it is
 * set: agent-run's, which puts the cause of a failed run into its
 * result and its session record (agent-harness(5)).  One write of the
 * whole line; a file that is not there is not made (agent-run makes
 * it), nor one reached through a symbolic link. */
static void
record_error(const char *msg)
{
	const char *path = getenv("AGENT_ERROR_FILE");
	char *line = NULL;
	int fd, n, e = errno;

	if (!path || !*path)
		return;
	fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NOCTTY |
		  O_CLOEXEC);
	if (fd < 0)
		goto out;
	n = asprintf(&line, "%s: %s\n", progname, msg);
	if (n > 0 && write(fd, line, (size_t)n) < 0) {
		/* the message is on stderr still */
	}
	free(n >= 0 ? line : NULL);
	close(fd);
out:
	errno = e;
}

void
cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(1, fmt, ap);
	va_end(ap);
}

void
cli_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(0, fmt, ap);
	va_end(ap);
}

int
cli_status(const struct ah_error *err, int bad)
{
	switch (err->code) {
	case AH_EFORMAT:
	case AH_ETOOBIG:
		return bad;
	case AH_EAPI:
	case AH_ETOOLONG:
		return ES_REFUSED;
	case AH_ENET:
	case AH_EAPIRETRY:
		return ES_APIFAIL;
	default: /* AH_ENOMEM, AH_EIO, AH_EINTR, and none said */
		return ES_IO;
	}
}

void
cli_report(const struct ah_error *err)
{
	cli_warn("%s", err->msg[0] ? err->msg : "unknown error");
}

int
cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(1, fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", progname);
	return ES_USAGE;
}

static int stdout_failed;

void
cli_stdout_failed(int errnum)
{
	if (!stdout_failed)
		cli_warn("cannot write stdout: %s",
			 errnum ? strerror(errnum) : "write error");
	stdout_failed = 1;
}

int
cli_put_line(const char *s, size_t n, int newline)
{
	int e;

	errno = 0;
	if ((n && fwrite(s, 1, n, stdout) != n) ||
	    (newline && putchar('\n') == EOF) || fflush(stdout) == EOF) {
		e = errno ? errno : EIO;
		cli_stdout_failed(e);
		errno = e;
		return -1;
	}
	return 0;
}

int
cli_finish(int status)
{
	int bad;

	errno = 0;
	bad = fflush(stdout) == EOF || ferror(stdout);
	if (fclose(stdout) == EOF)
		bad = 1;
	if (bad || stdout_failed) {
		cli_stdout_failed(errno);
		return ES_IO;
	}
	return status;
}

int
cli_bad_option(char **argv, int c)
{
	const char *opt = argv[optind - 1];

	if (c == ':')
		return cli_usage_error("option '%s' needs an argument", opt);
	if (optopt && strncmp(opt, "--", 2))
		return cli_usage_error("unknown option '-%c'", optopt);
	return cli_usage_error("unknown option '%s'", opt);
}

int
cli_number(const char *what, const char *s, double min, double max,
	   double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || v != v || v < min || v > max) {
		cli_warn("%s: '%s' is not a number from %g to %g", what, s, min,
			 max);
		return -1;
	}
	*out = v;
	return 0;
}

/* s as a whole number from min to max into *out: 0, or -1. */
static int
whole(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int
cli_whole(const char *what, const char *s, long min, long max, long *out)
{
	if (whole(s, min, max, out) < 0) {
		cli_warn("%s: '%s' is not a whole number from %ld to %ld", what,
			 s, min, max);
		return -1;
	}
	return 0;
}

const char *
cli_env(const char *name, const char *fallback)
{
	const char *v = getenv(name);

	if ((!v || !*v) && fallback)
		v = getenv(fallback);
	return v && *v ? v : NULL;
}

int
cli_window(const char *what, const char *s, const char *model, long *out)
{
	if (!strcmp(s, "off")) {
		*out = 0;
		return 0;
	}
	if (!strcmp(s, "auto")) {
		*out = chat_model_window(model) ? chat_model_window(model)
						: 32768;
		return 0;
	}
	if (whole(s, 256, 1000000000, out) < 0) {
		cli_warn("%s: '%s' is not a whole number from 256 to "
			 "1000000000, auto or off", what, s);
		return -1;
	}
	return 0;
}

int
cli_env_whole(const char *var, long min, long max, long *out)
{
	const char *s = getenv(var);

	if (!s || !*s)
		return 0;
	return cli_whole(var, s, min, max, out);
}

/* A size: a number of bytes with an optional K, M or G (powers of 1024). */
int
cli_size(const char *what, const char *s, long long *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtod(s, &end);
	if (*end == 'K' || *end == 'k')
		v *= 1024, end++;
	else if (*end == 'M' || *end == 'm')
		v *= 1024 * 1024, end++;
	else if (*end == 'G' || *end == 'g')
		v *= 1024.0 * 1024 * 1024, end++;
	if (end == s || *end || errno || !(v >= 0) || v > 1e18)
		return cli_usage_error("%s: '%s' is not a size (bytes, or a "
				       "number with K, M or G)", what, s);
	*out = (long long)v;
	return 0;
}

int
cli_version(void)
{
	printf("%s (agent-harness) %s\n", progname, AH_VERSION);
	return cli_finish(ES_OK);
}

int
cli_no_core(void)
{
	struct rlimit none = { 0, 0 };

	if (setrlimit(RLIMIT_CORE, &none) < 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		cli_warn("cannot keep core files from being written: %s",
			 strerror(errno));
		return -1;
	}
	return 0;
}

int
cli_config(int argc, char **argv)
{
	struct ah_error err = { 0 };
	struct config c;
	const char *profile = getenv("AGENT_PROFILE");
	int i, rc = 0;

	/* --profile NAME or --profile=NAME, before the options are parsed:
	 * the variables it sets are read with the others */
	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--profile") && i + 1 < argc)
			profile = argv[++i];
		else if (!strncmp(argv[i], "--profile=", 10))
			profile = argv[i] + 10;
	}
	if (config_read(&c, profile, getenv("AGENT_WORKDIR"), &err) < 0 ||
	    config_apply(&c, &err) < 0) {
		cli_report(&err);
		rc = -1;
	} else if (c.in_workspace)
		cli_note("warning: '%s' is inside the workspace, where "
			 "commands can write it: not read", c.path);
	config_free(&c);
	return rc;
}
