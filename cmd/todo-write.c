/* todo-write: the TodoWrite tool as a program.  See todo-write(1). */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const char *progname = "todo-write";

static const char usage[] =
	"usage: todo-write [-nq] [-C DIR] [-f FILE] < ARGUMENTS\n"
	"       todo-write [-C DIR] [-f FILE] --show | --check\n"
	"\n"
	"Validates TodoWrite arguments {\"todos\":[...]} read on stdin, stores\n"
	"the list in todo.json and prints it rendered; a list that breaks a rule\n"
	"prints one 'Error: ...' line instead and nothing is stored.\n"
	"\n"
	"  -f, --file FILE      the todo file (default $AGENT_TODO_FILE, else\n"
	"                       todo.json)\n"
	"  -C, --directory DIR  work in DIR, as if started there\n"
	"  -n, --dry-run        validate and render, store nothing\n"
	"  -q, --quiet          print nothing on success\n"
	"      --show           render the stored list\n"
	"      --check          exit 4 listing the items not completed, if any\n"
	"  -h, --help           print this help and exit\n"
	"      --version        print the version and exit\n"
	"\n"
	"Exit status: 0 stored (or shown, or nothing left), 1 arguments\n"
	"rejected, 2 usage, 3 I/O error or corrupt todo file, 4 --check found\n"
	"unfinished items.\n";

enum { MODE_WRITE, MODE_SHOW, MODE_CHECK };

/* Prints a list the model wrote.  On a terminal, escape sequences in it
 * (a title, the clipboard through OSC 52, concealed text) would act:
 * they are shown as \xnn, and what reorders or hides text as \u{XXXX}.
 * Into a pipe or a file it goes as stored. */
static int
put_list(const char *text)
{
	size_t len;
	char *t;

	if (!isatty(STDOUT_FILENO))
		return printf("%s\n", text) < 0 ? -1 : 0;
	t = utf8_for_terminal(text, strlen(text),
			      TERM_KEEP_LINES | TERM_SHOW_HIDDEN, &len);
	if (!t)
		return -1;
	fwrite(t, 1, len, stdout);
	putchar('\n');
	free(t);
	return 0;
}

static int
show(const char *path, int mode)
{
	struct ah_error err = { 0 };
	cJSON *list = NULL;
	char *text = NULL;
	int rc = ES_OK;

	if (todo_load(path, &list, &err) < 0) {
		cli_report(&err);
		return ES_IO;
	}
	if (mode == MODE_CHECK && !todo_unfinished(list))
		goto out;
	text = todo_render(list, mode == MODE_CHECK);
	if (!text) {
		cli_warn("cannot render '%s': out of memory", path);
		rc = ES_IO;
		goto out;
	}
	if (put_list(text) < 0) {
		cli_warn("cannot render '%s': out of memory", path);
		rc = ES_IO;
		goto out;
	}
	if (mode == MODE_CHECK)
		rc = ES_UNFINISHED;
out:
	free(text);
	cJSON_Delete(list);
	return rc;
}

static int
write_list(const char *path, int dry_run, int quiet)
{
	struct ah_error err = { 0 };
	char *args = NULL, *answer = NULL;
	size_t len;
	int rc;

	if (fd_read(STDIN_FILENO, "stdin", TODO_MAX_ARGS, &args, &len, &err)
	    < 0) {
		if (err.code != AH_ETOOBIG) {
			cli_report(&err);
			return ES_IO;
		}
		printf(TODO_TOO_LARGE "\n", TODO_MAX_ARGS);
		return ES_REJECTED;
	}
	rc = todo_write(path, args, len, dry_run, &answer, &err);
	if (rc < 0) {
		cli_report(&err);
		rc = ES_IO;
		goto out;
	}
	if ((rc == 1 || !quiet) && put_list(answer) < 0) {
		cli_warn("out of memory");
		rc = ES_IO;
		goto out;
	}
	rc = rc == 1 ? ES_REJECTED : ES_OK;
out:
	free(args);
	free(answer);
	return rc;
}

int
main(int argc, char **argv)
{
	enum { OPT_SHOW = 256, OPT_CHECK };
	static const struct option longopts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "directory", required_argument, NULL, 'C' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "show", no_argument, NULL, OPT_SHOW },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL, *dir = NULL;
	int c, mode = MODE_WRITE, dry_run = 0, quiet = 0, rc;

	if (cli_no_core() < 0)
		return ES_IO;
	while ((c = getopt_long(argc, argv, ":f:C:nqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			path = optarg;
			break;
		case 'C':
			dir = optarg;
			break;
		case 'n':
			dry_run = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case OPT_SHOW:
		case OPT_CHECK:
			if (mode != MODE_WRITE)
				return cli_usage_error("--show and --check "
						       "exclude each other");
			mode = c == OPT_SHOW ? MODE_SHOW : MODE_CHECK;
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
	if (optind < argc)
		return cli_usage_error("unexpected argument '%s'", argv[optind]);
	if (mode != MODE_WRITE && (dry_run || quiet))
		return cli_usage_error("-n and -q go with writing, not with "
				       "--show or --check");
	if (!path)
		path = todo_default_path();
	if (dir && chdir(dir) < 0) {
		cli_warn("cannot change to directory '%s': %s", dir,
			 strerror(errno));
		return ES_IO;
	}
	rc = mode == MODE_WRITE ? write_list(path, dry_run, quiet)
				: show(path, mode);
	return cli_finish(rc);
}
