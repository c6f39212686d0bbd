/* agent-compact: a summary of a transcript's older messages, as one
 * compaction entry.  See agent-compact(1). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

const char *progname = "agent-compact";

static const char usage[] =
	"usage: agent-compact [-nq] [-C DIR] [-f FILE] [--own-todos]\n"
	"                     [--keep-bytes N] [--prompt FILE]\n"
	"                     [-- AGENT-STEP-OPTIONS] < TRANSCRIPT\n"
	"\n"
	"Asks the model, through agent-step, for a summary of the transcript's\n"
	"older messages and prints one line: a compaction entry holding it and\n"
	"the current todo list.  Appended to the transcript, it stands in for\n"
	"those messages in everything agent-step sends from then on; the\n"
	"transcript keeps them all.\n"
	"\n"
	"  -f, --file FILE      the todo list (default $AGENT_TODO_FILE, else\n"
	"                       todo.json)\n"
	"      --own-todos      the todo list only when a run_todo_write call\n"
	"                       of the transcript wrote one (never a list\n"
	"                       that came with the directory)\n"
	"  -C, --directory DIR  work in DIR, as if started there\n"
	"      --keep-bytes N   keep the newest messages within N bytes whole\n"
	"                       (default 24000, at most a quarter of the window)\n"
	"      --context-window N|auto|off  the model's window in tokens,\n"
	"                       auto or off (none), for the stubs of old tool\n"
	"                       output ($AGENT_CONTEXT_WINDOW)\n"
	"      --prompt FILE    the summary instruction instead of the built-in\n"
	"      --profile NAME   the profile of the configuration file\n"
	"                       ($AGENT_PROFILE; see agent-harness(5))\n"
	"  -n, --dry-run        print the summary request, send nothing\n"
	"  -q, --quiet          no progress on stderr\n"
	"  -h, --help           print this help and exit\n"
	"      --version        print the version and exit\n"
	"\n"
	"Exit status: 0 written, 1 nothing to compact, 2 usage, 3 I/O error,\n"
	"5 the input is not a valid transcript, 8 the summary is empty,\n"
	"10 the user's own messages alone do not fit half the window;\n"
	"agent-step's own status (6, 7, ...) when it fails.\n";

/* Runs agent-step with the request on its stdin; its answer's text goes
 * into summary.  0, or an exit status. */
static int
ask(const char *prog, const char *request, size_t len, char **argv,
    struct buf *summary)
{
	struct buf out = BUF_INIT(1 << 24);
	FILE *in = tmpfile();
	int pipefd[2] = { -1, -1 }, status, rc = ES_IO;
	char chunk[65536], *nl;
	size_t start;
	cJSON *msg = NULL;
	ssize_t n;
	pid_t pid;

	if (!in || fwrite(request, 1, len, in) != len || fflush(in) ||
	    fseek(in, 0, SEEK_SET) || pipe(pipefd) < 0) {
		cli_warn("cannot pass the request to agent-step: %s",
			 strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		cli_warn("cannot fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		if (dup2(fileno(in), 0) < 0 || dup2(pipefd[1], 1) < 0)
			_exit(127);
		close(pipefd[0]);
		close(pipefd[1]);
		execv(prog, argv);
		dprintf(2, "%s: cannot run '%s': %s\n", progname, prog,
			strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	pipefd[1] = -1;
	while ((n = read(pipefd[0], chunk, sizeof chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || buf_append(&out, chunk, (size_t)n) < 0) {
			cli_warn("cannot read agent-step's answer: %s",
				 n < 0 ? strerror(errno) : "too large");
			break;
		}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		rc = WIFEXITED(status) ? WEXITSTATUS(status)
				       : 128 + WTERMSIG(status);
		cli_warn("agent-step failed (exit %d); nothing was written", rc);
		goto out;
	}
	nl = out.data ? memchr(out.data, '\n', out.len) : NULL;
	msg = out.data ? json_parse(out.data, nl ? (size_t)(nl - out.data)
					      : out.len, NULL) : NULL;
	if (!msg || chat_answer_text(msg, summary) != 1) {
		cli_warn("agent-step did not answer with text: %s",
			 msg ? "it called a tool" : "no message");
		rc = ES_UNUSABLE;
		goto out;
	}
	if (!summary->len || utf8_strip(summary->data, summary->len,
					 &start) == 0) {
		cli_warn("the model's summary is empty; nothing was written");
		rc = ES_UNUSABLE;
		goto out;
	}
	rc = ES_OK;
out:
	cJSON_Delete(msg);
	buf_free(&out);
	if (in)
		fclose(in);
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	return rc;
}

/* The transcript on stdin, into c; *written: it holds a run_todo_write
 * call. */
static int
read_transcript(struct chat *c, int *written)
{
	struct ah_error err = { 0 };
	struct jsonl_reader in;
	cJSON *msg;
	int r;

	jsonl_reader_init(&in, STDIN_FILENO, "stdin", 0);
	while ((r = jsonl_read_object(&in, &msg, &err)) > 0) {
		*written = *written || todo_call_line(in.line.data, in.line.len);
		r = chat_add(c, msg, in.lineno, &err);
		cJSON_Delete(msg);
		if (r < 0) {
			cli_warn("stdin: %s", err.msg);
			jsonl_reader_free(&in);
			return cli_status(&err, ES_BADINPUT);
		}
	}
	jsonl_reader_free(&in);
	if (r < 0) {
		cli_report(&err);
		return cli_status(&err, ES_BADINPUT);
	}
	if (calls_pending(&c->calls)) {
		cli_warn("stdin: the tool calls of line %lu have no result",
			 c->calls_line);
		return ES_BADINPUT;
	}
	return ES_OK;
}

/* The todo list rendered, or NULL (with *rc set on an error). */
static char *
todos(const char *path, int *rc)
{
	struct ah_error err = { 0 };
	cJSON *list = NULL;
	char *text = NULL;

	if (access(path, F_OK) < 0)
		return NULL;
	if (todo_load(path, &list, &err) < 0) {
		cli_report(&err);
		*rc = ES_IO;
		return NULL;
	}
	text = todo_render(list, 0);
	if (!text)
		*rc = ES_IO;
	cJSON_Delete(list);
	return text;
}

int
main(int argc, char **argv)
{
	enum { OPT_KEEP = 256, OPT_PROMPT, OPT_WINDOW, OPT_PROFILE, OPT_OWN };
	static const struct option longopts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "directory", required_argument, NULL, 'C' },
		{ "keep-bytes", required_argument, NULL, OPT_KEEP },
		{ "prompt", required_argument, NULL, OPT_PROMPT },
		{ "context-window", required_argument, NULL, OPT_WINDOW },
		{ "profile", required_argument, NULL, OPT_PROFILE },
		{ "own-todos", no_argument, NULL, OPT_OWN },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	struct ah_error err = { 0 };
	struct buf summary = BUF_INIT(0);
	const char *path = NULL, *dir = NULL, *promptfile = NULL;
	const char *env, *wopt;
	char *prompt = NULL, *request = NULL, *list = NULL, *entry = NULL;
	char **sargv = NULL, step[4096], *kept = NULL;
	long keep_bytes = 24000, window = 0;
	size_t len, before, user_max = 0, left_bytes;
	int c, i, keep, left, dry_run = 0, quiet = 0, keep_set = 0, rc = ES_OK;
	int own = 0, written = 0;
	struct chat chat;

	if (cli_no_core() < 0)
		return ES_IO;
	/* the configuration file under the environment, before it is read */
	if (cli_config(argc, argv) < 0)
		return ES_USAGE;
	env = getenv("AGENT_CONTEXT_WINDOW");
	wopt = env && *env ? env : NULL;

	while ((c = getopt_long(argc, argv, ":f:C:nqh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_PROFILE: /* read first, by cli_config */
			break;
		case 'f':
			path = optarg;
			break;
		case 'C':
			dir = optarg;
			break;
		case OPT_KEEP:
			if (cli_whole("--keep-bytes", optarg, 0, 1000000000,
				      &keep_bytes))
				return ES_USAGE;
			keep_set = 1;
			break;
		case OPT_WINDOW:
			wopt = optarg;
			break;
		case OPT_PROMPT:
			promptfile = optarg;
			break;
		case 'n':
			dry_run = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case OPT_OWN:
			own = 1;
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
	if (wopt && cli_window(wopt == env ? "AGENT_CONTEXT_WINDOW" :
			       "--context-window", wopt, getenv("AGENT_MODEL"),
			       &window) < 0)
		return ES_USAGE;
	if (promptfile && file_read(promptfile, 1 << 20, &prompt, &len,
				    &err) != 1) {
		if (!err.msg[0])
			ah_fail(&err, AH_EIO, "'%s' does not exist", promptfile);
		cli_report(&err);
		return ES_IO;
	}
	if (!path)
		path = todo_default_path();
	/* the agent-step installed beside us, resolved now: never one found
	 * on PATH (a workspace directory there could hold the model's) */
	if (!dry_run && harness_program("agent-step", step, sizeof step,
					&err) < 0) {
		cli_report(&err);
		free(prompt);
		return ES_IO;
	}
	if (dir && chdir(dir) < 0) {
		cli_warn("cannot change to directory '%s': %s", dir,
			 strerror(errno));
		free(prompt);
		return ES_IO;
	}
	/* the newest turns kept whole take a quarter of the window at
	 * most, so that the compacted context is well within it */
	if (!keep_set && window > 0 && keep_bytes > window * CHAT_BYTES_PER_TOKEN / 4)
		keep_bytes = window * CHAT_BYTES_PER_TOKEN / 4;
	chat_init(&chat);
	if (window > 0)
		chat_budget_default(&chat.budget, window,
				    getenv("AGENT_OUTPUTS"));
	rc = read_transcript(&chat, &written);
	if (rc)
		goto out;
	/* what to keep, measured on what agent-step sends */
	keep = compact_keep(&chat, (size_t)keep_bytes);
	if (keep < 0) {
		cli_warn("nothing to compact: the transcript is all newest "
			 "messages and system prompt");
		rc = ES_REJECTED;
		goto out;
	}
	before = chat.msgs.len;
	/* The user's own messages go on word for word, within half the
	 * window: the task and the newest follow-up always, the others
	 * from the newest back; when the two alone take more, no summary
	 * can make room. */
	if (window > 0)
		user_max = (size_t)window * CHAT_BYTES_PER_TOKEN / 2;
	kept = malloc((size_t)chat.nview + 1);
	if (!kept) {
		cli_warn("out of memory");
		rc = ES_IO;
		goto out;
	}
	if (compact_users(&chat, keep, user_max, kept, &left,
			  &left_bytes) < 0) {
		cli_warn("the user's own messages (the task and the newest "
			 "follow-up) take more than half of the model's "
			 "window (%zu bytes): no summary can make room; "
			 "nothing was written", user_max);
		rc = ES_FULL;
		goto out;
	}
	if (left && !quiet)
		cli_warn("%d of the user's older follow-ups (%zu bytes) are "
			 "left out of the context, to fit half the window",
			 left, left_bytes);
	/* the summary needs what was done, not every output: all tool
	 * output over 1 KB goes as a stub, its text kept */
	if (window > 0) {
		chat.budget.stub_at = 0;
		chat.budget.keep = 0;
		if (chat_prepare(&chat) < 0) {
			cli_warn("out of memory");
			rc = ES_IO;
			goto out;
		}
	}
	request = compact_request(&chat, keep, prompt ? prompt :
				  compact_default_prompt(), &len);
	if (!request) {
		cli_warn("out of memory");
		rc = ES_IO;
		goto out;
	}
	if (dry_run) {
		if (fwrite(request, 1, len, stdout) != len)
			cli_stdout_failed(errno);
		goto out;
	}
	if (!quiet)
		cli_warn("asking for a summary of %d messages (%zu bytes), "
			 "keeping the newest %d", chat.nview - keep, len, keep);
	sargv = calloc((size_t)(argc - optind) + 5, sizeof *sargv);
	if (!sargv) {
		rc = ES_IO;
		goto out;
	}
	sargv[0] = "agent-step";
	sargv[1] = "-q";
	/* the request is smaller than the one that was too large: only the
	 * server may refuse it, not the share kept for growth */
	sargv[2] = "--compact-at";
	sargv[3] = "1";
	for (i = optind; i < argc; i++)
		sargv[i - optind + 4] = argv[i];
	rc = ask(step, request, len, sargv, &summary);
	if (rc)
		goto out;
	/* (--own-todos: a list no call of this session wrote is not the
	 * session's, and never put in its summary) */
	list = own && !written ? NULL : todos(path, &rc);
	if (rc)
		goto out;
	entry = compact_entry(&chat, keep, before, summary.data, list,
			      user_max);
	if (!entry) {
		cli_warn("out of memory");
		rc = ES_IO;
		goto out;
	}
	if (cli_put_line(entry, strlen(entry), 1))
		rc = ES_IO;
out:
	free(kept);
	free(sargv);
	free(entry);
	free(list);
	free(request);
	free(prompt);
	buf_free(&summary);
	chat_free(&chat);
	return cli_finish(rc);
}
