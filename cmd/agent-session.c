/* agent-session: the records of agent-run's sessions, and the events
 * that begin and end agent-run --json.  See agent-session(1). */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <math.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const char *progname = "agent-session";

/* The keys we may hold, and what looks like a key, are redacted from
 * the records and the events, as from the transcript and the log. */
static const char *secrets[4];

static const char usage[] =
	"usage: agent-session [-C DIR] --list\n"
	"       agent-session [-C DIR] --claim ID\n"
	"       agent-session [-C DIR] [files] --begin ID [--todo FILE]\n"
	"                     [--stdin-bytes N] [--parent ID --call ID] < TASK\n"
	"       agent-session [-C DIR] [files] --reopen continue|resume\n"
	"       agent-session [-C DIR] [files] --end STATUS [--from LINE]\n"
	"                     [--error TEXT]\n"
	"       agent-session --project N [REL FILE]...\n"
	"       agent-session --project N --walk DIR [--quiet]\n"
	"       agent-session [files] --show-todos --todo FILE [--quiet]\n"
	"       agent-session --going-on MODE --transcript F --todo FILE\n"
	"                     [--note TEXT] [--quiet] [< TASK]\n"
	"       agent-session --first --prompt FILE [--workdir DIR] [--add FILE]\n"
	"                     [--project-text FILE] [--skills] [--skill NAME]\n"
	"                     [--quiet] < TASK\n"
	"       agent-session --reaper DIR --lock FILE [--drafts DIR]\n"
	"       agent-session --interrupt DIR | --stop DIR\n"
	"       agent-session [-C DIR] --config [--profile NAME]\n"
	"       agent-session --prepare [--child ID] [--continue|--resume]\n"
	"                     [--session ID]\n"
	"       agent-session --open --lock-fd FD [-q] [--child ID]\n"
	"                     [--continue|--resume] [--session ID] [--fork]\n"
	"                     [--rewind ID --rewind-what WHAT] [--mode MODE]\n"
	"                     [--mode-given] [--sandbox MODE] [--sandbox-given]\n"
	"                     [--plan-text FILE] < TASK\n"
	"       agent-session --close STATUS --lock-fd FD [-q] [--ephemeral]\n"
	"                     [--prev ID] [--id ID] [--todo FILE]\n"
	"       agent-session [--transcript F] [--todo FILE] --todos-ours\n"
	"       agent-session --todos-left --transcript F --todo FILE\n"
	"       agent-session [-C DIR] --compactions --from LINE --transcript F\n"
	"       agent-session [-C DIR] --config --show [--profile NAME]\n"
	"                     [--from-file KEYS] [--option KEY=VALUE]...\n"
	"       agent-session --run-options BIN -- ARGS...\n"
	"       agent-session --start-server FILE -- COMMAND...\n"
	"\n"
	"Keeps the record of an agent-run session (id, times, task, status,\n"
	"model calls, tokens) and prints the first and the last of the\n"
	"session's events.  agent-run runs it; --list is for people.\n"
	"\n"
	"  -C, --directory DIR  the working directory (default .)\n"
	"      --list           print the records of DIR's sessions, newest\n"
	"                       first, one JSON object a line\n"
	"      --claim ID       session ID is the user's own: mark its record\n"
	"                       for its transcript as it is, so that agent-run\n"
	"                       goes on with it (read the transcript first)\n"
	"      --begin ID       start the record of session ID (the task is\n"
	"                       stdin) and print its session event\n"
	"      --todo FILE      the session's todo list, with --begin (or\n"
	"                       --answer)\n"
	"      --stdin-bytes N  the task as typed came with N bytes of stdin,\n"
	"                       attached to what the model got (--begin)\n"
	"      --parent ID      the session that started this one (a task\n"
	"                       call), with --begin\n"
	"      --call ID        the id of that task call, with --begin\n"
	"      --reopen MODE    the session goes on (continue: a follow-up\n"
	"                       task; resume): print its session event\n"
	"      --end STATUS     the run ended with agent-run's exit STATUS:\n"
	"                       add up the transcript into the record and\n"
	"                       print the result event\n"
	"      --from LINE      the transcript's last line before this run\n"
	"                       (for the result's run figures; 0)\n"
	"      --error TEXT     what went wrong, with --end STATUS other than\n"
	"                       0: the record's and the result's error\n"
	"      --project N      print a line of the files' names, then the\n"
	"                       text of the project's instructions: each FILE\n"
	"                       (the most specific first) under a header REL,\n"
	"                       within N bytes as sent (escapes counted) and a\n"
	"                       quarter of $AGENT_CONTEXT_WINDOW at most, cut\n"
	"                       with a note\n"
	"      --walk DIR       with --project: the files are AGENTS.md (else\n"
	"                       CLAUDE.md) of each directory from the\n"
	"                       repository's top down to DIR (absolute), and\n"
	"                       the names are said on stderr, not printed\n"
	"      --show-todos     print what a session that goes on first sees\n"
	"                       of its --todo FILE list: the list quoted as\n"
	"                       data (nothing when none is active, or when no\n"
	"                       call of the transcript wrote it: said)\n"
	"      --going-on continue|resume|branch  print the first messages of\n"
	"                       a run of a session that goes on, JSON Lines:\n"
	"                       what --show-todos shows of its list, --note\n"
	"                       TEXT, and with continue the task (stdin)\n"
	"      --first          print the first messages of a new session of\n"
	"                       agent-run, JSON Lines: the system prompt of\n"
	"                       --prompt FILE (each @WORKDIR@ the --workdir DIR)\n"
	"                       and --add FILE's text after it, the text of\n"
	"                       --project-text FILE, with --skills the skills'\n"
	"                       index, the skill --skill NAME, then the task\n"
	"      --reaper DIR     start agent-run's crash reaper: a process that\n"
	"                       waits for the lock of --lock FILE, then stops\n"
	"                       the stages recorded in DIR (pid.NAME), kills\n"
	"                       what is left after a second, removes DIR and\n"
	"                       the --drafts DIR's .transcript-new.PID.* files,\n"
	"                       PID its caller's (agent-run's)\n"
	"      --interrupt DIR  SIGINT to the stages recorded in DIR that act\n"
	"                       on it\n"
	"      --stop DIR       the end of agent-run's run: kill the reaper,\n"
	"                       stop the policy server and the MCP bridge\n"
	"                       recorded in DIR, remove DIR\n"
	"      --answer         the end of agent-run's run: the answer the\n"
	"                       transcript ends with to --print on stdout\n"
	"                       (not when --streamed on this same terminal),\n"
	"                       into --output FILE, and into --plan FILE (made\n"
	"                       in --drafts DIR); then, on stderr, the calls\n"
	"                       after --from LINE denied for want of a terminal\n"
	"                       and the items of the --todo FILE list left\n"
	"                       (when a call of the transcript stored it)\n"
	"      --config         read the configuration file (agent-harness(5))\n"
	"                       and print, as shell assignments, its variables\n"
	"                       that the environment does not set, then\n"
	"                       config_keys, the list of them (DIR: the\n"
	"                       workspace, where it must not be)\n"
	"      --profile NAME   with --config: that profile's values too\n"
	"                       ($AGENT_PROFILE)\n"
	"      --show           with --config: what is in force, a line per\n"
	"                       variable with where it came from, keys\n"
	"                       redacted\n"
	"      --from-file KEYS with --show: those variables came from the\n"
	"                       file (config_keys), not the environment\n"
	"      --option KEY=VALUE  with --show: an option gave KEY\n"
	"      --run-options BIN -- ARGS...  agent-run's arguments ARGS, with\n"
	"                       the configuration file, checked as\n"
	"                       agent-run(1) says, its workspace and stdin\n"
	"                       too, printed as shell code for agent-run\n"
	"                       (BIN: its directory) to eval; must come first\n"
	"      --start-server FILE -- COMMAND...  run COMMAND, a server's\n"
	"                       --serve that prints its pid; the server's\n"
	"                       /proc stat line into FILE (for --reaper),\n"
	"                       what followed the pid on stdout; must come\n"
	"                       first\n"
	"      --prepare        agent-run's first look at the state directory\n"
	"                       (.agent, or $AGENT_STATE_DIR): checked, made;\n"
	"                       the paths of the session's files printed as\n"
	"                       shell assignments\n"
	"      --open           under agent-run's lock (--lock-fd): the session\n"
	"                       to work on, the one before put aside, the todo\n"
	"                       file, the id and the mode, as assignments\n"
	"      --close STATUS   agent-run ended with STATUS: an --ephemeral new\n"
	"                       session removed, a new one that failed before\n"
	"                       the model answered put aside, --prev back\n"
	"      --lock-fd FD     agent-run's lock of the workspace, held\n"
	"      --child ID, --continue, --resume, --session ID, --fork,\n"
	"      --rewind ID, --rewind-what both|code|conversation, --mode MODE,\n"
	"      --mode-given, --sandbox MODE, --sandbox-given, --ephemeral\n"
	"                       agent-run's options (--mode and --sandbox: the\n"
	"                       values in force; -given: an option gave them)\n"
	"      --plan-text FILE --open: plan mode's text, for the note to a\n"
	"                       session that goes on into plan mode\n"
	"      --prev ID, --id ID  --close: the session before, this one's\n"
	"  -q, --quiet          --open, --close, --walk: say only errors\n"
	"      --todos-ours     exit 0 when the todo file (--todo, else\n"
	"                       $AGENT_TODO_FILE, else todo.json) holds a list\n"
	"                       that a run_todo_write call of the transcript\n"
	"                       stored (its rendering is a tool result of it),\n"
	"                       1 when not\n"
	"      --todos-left     print the note to a model that stopped with\n"
	"                       items of that list unfinished, the list\n"
	"                       quoted as data (exit 0), or exit 1 for none\n"
	"      --compactions    print agent-run's word and exit 1 when the\n"
	"                       transcript's lines after --from LINE end with\n"
	"                       two compactions and no answer of the model:\n"
	"                       a third would make no room either\n"
	"      --transcript F   the transcript (.agent/transcript.jsonl)\n"
	"      --record F       the record (.agent/session.json)\n"
	"\n"
	"With $AGENT_STATE_DIR set, the sessions are kept there, not in\n"
	"DIR/.agent (see agent-run(1)): --list reads it, and the default\n"
	"transcript and record are there.\n"
	"  -h, --help           print this help and exit\n"
	"      --version        print the version and exit\n"
	"\n"
	"The model and the API of a new record are $AGENT_MODEL and\n"
	"$AGENT_API; its permission_mode (agent-run's mode) is $AGENT_MODE,\n"
	"else ask, and --reopen sets it to $AGENT_MODE when that is set.\n"
	"\n"
	"Exit status: 0 done, 1 not ours (--todos-ours), none left\n"
	"(--todos-left), no more (--compactions), or --answer: no\n"
	"answer, or the plan not written, or --first: no such skill, or\n"
	"--claim: no such session, or agent-run works there, 2\n"
	"usage, 3 a file could not be read or written, or the state\n"
	"directory cannot be used, 4 --answer: not written to --output FILE,\n"
	"5 a record is not one; --prepare, --open and --close exit as\n"
	"agent-run (1, 2).\n";

/* (agent-run's own: from M_REAPER on, the files are given) */
enum mode { M_NONE, M_LIST, M_BEGIN, M_REOPEN, M_END, M_PROJECT, M_CONFIG,
	    M_PREPARE, M_OPEN, M_CLOSE, M_OURS,
	    M_REAPER, M_INTERRUPT, M_STOP, M_ANSWER, M_FIRST, M_SHOWTODOS,
	    M_CLAIM, M_LEFT, M_COMPACTIONS, M_GOINGON };

struct opts {
	enum mode mode;
	const char *dir, *transcript, *record, *id, *parent, *call, *how;
	const char *todo, *error, *note;
	const char *profile, *from_file;   /* --config */
	const char *option[32];            /* --option KEY=VALUE */
	int noption, show;
	long status, from;
	long stdin_bytes;   /* the size of the stdin attached to the task, or -1 */
	char *task;         /* --open: stdin */
	size_t tasklen;
	long project;       /* --project: the budget of project files */
	struct sessdir sd;  /* --prepare, --open, --close */
	long lock_fd;
	int quiet;
	const char *prev;
	const char *run_dir, *lock, *drafts; /* --reaper, --interrupt, --stop */
	const char *output, *plan;         /* --answer */
	const char *walk;                  /* --project --walk */
	struct first_opts first;           /* --first */
	long project_bytes;                /* --first: -1, or the budget */
	int print, streamed;
};

/* agent-run's exit status as the status of its session. */
static const char *
status_name(long st)
{
	switch (st) {
	case 0:
		return "done";
	case 3:
		return "step-limit";
	case 130:
	case 143:
		return "interrupted";
	default:
		return "failed";
	}
}

/* Prints rec as an event of type: its fields after "type" and
 * "session", as one line. */
static int
print_event(const char *type, const cJSON *rec, const char *mode)
{
	cJSON *e = cJSON_CreateObject(), *f;
	const cJSON *v;
	char *s;
	size_t n;
	int ok;

	ok = e && cJSON_AddStringToObject(e, "type", type) &&
		cJSON_AddItemToObject(e, "session", cJSON_Duplicate(
			cJSON_GetObjectItemCaseSensitive(rec, "id"), 1));
	cJSON_ArrayForEach(v, rec) {
		if (!ok)
			break;
		f = cJSON_Duplicate(v, 1);
		ok = f && cJSON_AddItemToObject(e, v->string, f);
		if (!ok)
			cJSON_Delete(f);
	}
	if (ok && mode)
		ok = cJSON_AddStringToObject(e, "mode", mode) != NULL;
	s = ok ? cJSON_PrintUnformatted(e) : NULL;
	cJSON_Delete(e);
	if (!s) {
		cli_warn("out of memory");
		return ES_IO;
	}
	/* as one write, under the lock of the events (a child's, in
	 * parallel with others) */
	n = strlen(s);
	s[n] = '\n';
	if ((fflush(stdout) == EOF || events_write(1, s, n + 1) < 0) &&
	    errno != EPIPE)
		cli_warn("cannot write the %s event: %s", type, strerror(errno));
	free(s);
	return ES_OK;
}

/* Puts v (taken) as rec's key, in place of what was there.  0 or -1, v
 * freed by the caller on -1. */
static int
set_item(cJSON *rec, const char *key, cJSON *v)
{
	if (cJSON_GetObjectItemCaseSensitive(rec, key))
		return cJSON_ReplaceItemInObjectCaseSensitive(rec, key, v) ? 0 : -1;
	return cJSON_AddItemToObject(rec, key, v) ? 0 : -1;
}

/* set_item of a new value, freed here on -1. */
static int
set_value(cJSON *rec, const char *key, cJSON *v)
{
	if (v && set_item(rec, key, v) == 0)
		return 0;
	cJSON_Delete(v);
	return -1;
}

static int
set_string(cJSON *rec, const char *key, const char *val)
{
	return set_value(rec, key, cJSON_CreateString(val));
}

static int
set_number(cJSON *rec, const char *key, double val)
{
	return set_value(rec, key, cJSON_CreateNumber(val));
}

/* A cost in USD, rounded to a millionth of a cent; null when a part of
 * it is not known (a model not in the price table). */
static cJSON *
cost(double usd, int unknown)
{
	return unknown ? cJSON_CreateNull()
		       : cJSON_CreateNumber(round(usd * 1e8) / 1e8);
}

static int
do_list(const struct opts *o)
{
	struct ah_error err = { 0 };
	struct buf out = BUF_INIT(0);
	char agentdir[PATH_MAX];
	int rc = ES_OK;

	if (state_dir_given())
		snprintf(agentdir, sizeof agentdir, "%s", state_dir());
	else
		snprintf(agentdir, sizeof agentdir, "%s/.agent", o->dir);
	if (session_list(agentdir, &out, &err) < 0) {
		cli_report(&err);
		rc = err.code == AH_EFORMAT ? ES_BADINPUT : ES_IO;
	} else if (out.len)
		fwrite(out.data, 1, out.len, stdout);
	buf_free(&out);
	return rc;
}

/* The record's mode_mark, for its id and permission_mode: what lets a
 * session that goes on keep its mode (agent-run(1), Modes).  Without
 * the user's key (no HOME), none: the mode is then not kept. */
static int
set_mode_mark(cJSON *rec)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(rec, "id");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(rec,
							  "permission_mode");
	struct ah_error err = { 0 };
	char hex[65];

	cJSON_DeleteItemFromObjectCaseSensitive(rec, "mode_mark");
	if (!cJSON_IsString(id) || !cJSON_IsString(m) ||
	    sessdir_mode_mark(id->valuestring, m->valuestring, hex, &err) < 0)
		return 0;
	return set_string(rec, "mode_mark", hex);
}

/* The record's session_mark: what lets the session go on (agent-run(1),
 * Sessions).  --begin marks none of the transcript (made after it);
 * --end moves the mark on to the transcript's whole lines, from a mark
 * that checks only.  Without the user's key (no HOME), or from a mark
 * that does not check, none: the session cannot go on (said then). */
static int
set_session_mark(cJSON *rec, const char *transcript, int fresh)
{
	struct ah_error err = { 0 };

	return sessmark_set(rec, transcript, fresh, &err) < 0 &&
	       err.code == AH_ENOMEM;
}

/* --claim ID: the user's word that a session the mark refuses is theirs */
static int
do_claim(const struct opts *o)
{
	struct ah_error err = { 0 };
	char *transcript = NULL;

	if (strcmp(o->dir, ".") && chdir(o->dir) < 0) {
		cli_warn("cannot change to '%s': %s", o->dir, strerror(errno));
		return ES_IO;
	}
	if (state_dir_check(".", 0, &err) < 0 ||
	    sessmark_claim(o->id, &transcript, &err) < 0) {
		cli_report(&err);
		return err.code == AH_EFORMAT ? ES_REJECTED : ES_IO;
	}
	cli_note("session %s (%s) is marked as yours: agent-run -c or "
		 "--session %s goes on with it", o->id, transcript, o->id);
	free(transcript);
	return ES_OK;
}

static int
do_begin(const struct opts *o)
{
	struct ah_error err = { 0 };
	const char *model = getenv("AGENT_MODEL"), *api = getenv("AGENT_API");
	const char *pmode = getenv("AGENT_MODE");
	char now[32], *task = NULL, cwd[PATH_MAX];
	size_t len;
	cJSON *rec = cJSON_CreateObject();
	int rc = ES_IO;

	if (fd_read(STDIN_FILENO, "stdin", JSONL_MAX_LINE, &task, &len,
		    &err) < 0) {
		cli_report(&err);
		goto out;
	}
	session_now(now);
	if (!getcwd(cwd, sizeof cwd)) {
		cli_warn("cannot tell the working directory: %s",
			 strerror(errno));
		goto out;
	}
	if (!rec || set_string(rec, "id", o->id) ||
	    set_string(rec, "started", now) || set_string(rec, "updated", now) ||
	    set_string(rec, "task", task) ||
	    set_string(rec, "status", "running") ||
	    set_number(rec, "model_calls", 0) || set_number(rec, "tokens", 0) ||
	    set_string(rec, "directory", cwd) ||
	    set_string(rec, "model", model ? model : "") ||
	    set_string(rec, "api", api && *api ? api : "chat") ||
	    set_string(rec, "permission_mode", pmode && *pmode ? pmode : "ask") ||
	    set_string(rec, "todo", o->todo ? o->todo : "todo.json") ||
	    (o->stdin_bytes >= 0 &&
	     set_number(rec, "stdin_bytes", (double)o->stdin_bytes)) ||
	    (o->parent && (set_string(rec, "parent", o->parent) ||
			   set_string(rec, "call", o->call ? o->call : ""))) ||
	    set_mode_mark(rec) || set_session_mark(rec, NULL, 1)) {
		cli_warn("out of memory");
		goto out;
	}
	redact_json(rec, secrets);
	if (session_write(o->record, rec, &err) < 0) {
		cli_report(&err);
		goto out;
	}
	rc = print_event("session", rec, "new");
out:
	free(task);
	cJSON_Delete(rec);
	return rc;
}

/* The record of an earlier session, or a new one for a transcript that
 * has none (made before sessions had records). */
static cJSON *
record_of(const struct opts *o, struct ah_error *err)
{
	char now[32];
	cJSON *rec;

	if (access(o->record, F_OK) == 0 || errno != ENOENT)
		return session_read(o->record, err);
	session_now(now);
	rec = cJSON_CreateObject();
	if (!rec || set_string(rec, "id", o->id ? o->id : "unknown") ||
	    set_string(rec, "started", now) || set_string(rec, "task", "")) {
		cJSON_Delete(rec);
		ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		return NULL;
	}
	return rec;
}

static int
do_reopen(const struct opts *o)
{
	struct ah_error err = { 0 };
	const char *pmode = getenv("AGENT_MODE");
	char now[32];
	cJSON *rec = record_of(o, &err);
	int rc = ES_IO;

	if (!rec) {
		cli_report(&err);
		return err.code == AH_EFORMAT ? ES_BADINPUT : ES_IO;
	}
	session_now(now);
	redact_json(rec, secrets);
	if (set_string(rec, "updated", now) || set_string(rec, "status", "running") ||
	    (pmode && *pmode && (set_string(rec, "permission_mode", pmode) ||
				 set_mode_mark(rec))) ||
	    sessmark_reopen(rec, &err) < 0) {
		cli_warn("out of memory");
	} else if (session_write(o->record, rec, &err) < 0) {
		cli_report(&err);
	} else
		rc = print_event("session", rec, o->how);
	cJSON_Delete(rec);
	return rc;
}

/* The error of a run that ended: null when it is done; else what
 * went wrong, as agent-run said it (its last word, or the first of the
 * stage that failed), or its exit status when it said nothing. */
static cJSON *
error_of(const struct opts *o)
{
	char why[96];

	if (o->status == 0)
		return cJSON_CreateNull();
	if (o->error && *o->error)
		return cJSON_CreateString(o->error);
	snprintf(why, sizeof why, "agent-run: exit %ld (%s)", o->status,
		 status_name(o->status));
	return cJSON_CreateString(why);
}

static int
do_end(const struct opts *o)
{
	struct ah_error err = { 0 };
	struct session_stats st = { .from = (unsigned long)o->from };
	char now[32];
	double kids[5];
	cJSON *rec = record_of(o, &err), *run = NULL, *children;
	int rc = ES_IO;

	if (!rec) {
		cli_report(&err);
		return err.code == AH_EFORMAT ? ES_BADINPUT : ES_IO;
	}
	if (session_stats(o->transcript, &st, &err) < 0) {
		cli_report(&err);
		goto out;
	}
	/* a child's calls count in its parent's totals, and apart */
	if (session_children(state_dir(), cJSON_GetObjectItemCaseSensitive(
				     rec, "id")->valuestring, kids, &err) < 0) {
		cli_report(&err);
		goto out;
	}
	session_now(now);
	children = cJSON_CreateObject();
	if (!children || set_number(children, "sessions", kids[0]) ||
	    set_number(children, "model_calls", kids[1]) ||
	    set_number(children, "tokens", kids[2]) ||
	    set_value(children, "cost_usd", cost(kids[3], kids[4] > 0)) ||
	    set_string(rec, "updated", now) ||
	    set_string(rec, "status", status_name(o->status)) ||
	    set_value(rec, "error", error_of(o)) ||
	    set_number(rec, "model_calls", st.model_calls + kids[1]) ||
	    set_number(rec, "tokens", st.tokens + kids[2]) ||
	    set_value(rec, "cost_usd", cost(st.cost + kids[3],
					    st.cost_unknown || kids[4] > 0)) ||
	    set_item(rec, "children", children) ||
	    set_session_mark(rec, o->transcript, 0)) {
		cJSON_Delete(children);
		cli_warn("out of memory");
		goto out;
	}
	redact_json(rec, secrets);
	if (session_write(o->record, rec, &err) < 0) {
		cli_report(&err);
		goto out;
	}
	/* the event: the record, the exit status, the answer, this run */
	run = cJSON_CreateObject();
	if (!run || set_number(run, "model_calls", st.run_calls) ||
	    set_number(run, "tokens", st.run_tokens) ||
	    set_value(run, "cost_usd", cost(st.run_cost,
					    st.run_cost_unknown)) ||
	    set_number(run, "tool_calls", st.tool_calls) ||
	    set_number(run, "denied", st.denied) ||
	    set_number(rec, "exit", (double)o->status) ||
	    !cJSON_AddItemToObject(rec, "answer", st.answered && st.answer
				   ? cJSON_CreateString(st.answer)
				   : cJSON_CreateNull()) ||
	    !cJSON_AddItemToObject(rec, "run", run)) {
		cJSON_Delete(run);
		cli_warn("out of memory");
		goto out;
	}
	/* the calls denied in this run, for a script to say why */
	if (!st.denials || !cJSON_AddItemToObject(rec, "denied", st.denials)) {
		cli_warn("out of memory");
		goto out;
	}
	st.denials = NULL; /* rec holds it */
	/* (the answer and the denials come from the transcript, which
	 * hook-audit keeps redacted) */
	redact_json(rec, secrets);
	rc = print_event("result", rec, NULL);
out:
	session_stats_free(&st);
	cJSON_Delete(rec);
	return rc;
}

/* The budget of the project's instructions is what is sent: the bytes
 * after JSON's escapes (a file of control characters takes six times its
 * size), n at most, and never more than a quarter of the window. */
static int
project_budget(long n, size_t *budget)
{
	const char *env = getenv("AGENT_CONTEXT_WINDOW");
	long window = 0;

	*budget = (size_t)n;
	if (env && *env && cli_window("AGENT_CONTEXT_WINDOW", env,
				      getenv("AGENT_MODEL"), &window) < 0)
		return ES_USAGE;
	if (window > 0 && *budget > (size_t)window * CHAT_BYTES_PER_TOKEN / 4)
		*budget = (size_t)window * CHAT_BYTES_PER_TOKEN / 4;
	return ES_OK;
}

/* --project: the names, then the text. */
static int
do_project(const struct opts *o, int n, char **args)
{
	/* (--walk: the names are said on stderr, as agent-run says them) */
	const char **rel = calloc((size_t)n / 2 + 1, sizeof *rel);
	const char **path = calloc((size_t)n / 2 + 1, sizeof *path);
	struct buf text = BUF_INIT(0), names = BUF_INIT(0);
	struct ah_error err = { 0 };
	size_t budget, k;
	int i, rc = ES_IO;

	if (project_budget(o->project, &budget) != ES_OK) {
		rc = ES_USAGE;
		goto out;
	}
	if (!rel || !path) {
		cli_warn("out of memory");
		goto out;
	}
	for (i = 0; i < n / 2; i++) {
		rel[i] = args[2 * i];
		path[i] = args[2 * i + 1];
	}
	if (project_text(rel, path, n / 2, budget, &text, &names, &err) < 0) {
		cli_report(&err);
		goto out;
	}
	/* one line: a name's control characters do not end it */
	for (k = 0; k < names.len; k++)
		if ((unsigned char)names.data[k] < 0x20)
			names.data[k] = '?';
	if (o->walk) {
		if (!o->quiet && n)
			fprintf(stderr, "agent-run: project instructions: %s\n",
				names.data ? names.data : "");
	} else {
		if (names.len && fwrite(names.data, 1, names.len, stdout) !=
		    names.len)
			cli_stdout_failed(errno);
		putchar('\n');
	}
	if (text.len && n && fwrite(text.data, 1, text.len, stdout) != text.len)
		cli_stdout_failed(errno);
	rc = ES_OK;
out:
	buf_free(&text);
	buf_free(&names);
	free(rel);
	free(path);
	return rc;
}

/* "agent-run: MSG" on stderr, made safe for a terminal as cli_warn
 * makes every diagnostic: a message may hold the model's words (a task
 * call's id) or a path's bytes (a skill's, a repository's). */
static void
say_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void
say_run(const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL, *safe = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n >= 0)
		safe = utf8_for_terminal(msg, (size_t)n, 0, NULL);
	fprintf(stderr, "agent-run: %s\n",
		safe ? safe : "(a message, lost: out of memory)");
	free(safe);
	if (n >= 0)
		free(msg);
}

/* A todo list no call of the session wrote, not shown: said */
static void
not_shown(const struct opts *o)
{
	if (!o->quiet)
		say_run("'%s' was not written by this session (it came with "
			"the directory, or a command made it): not shown to the "
			"model", o->todo);
}

/* --show-todos: the text on stdout, or a word on stderr */
static int
do_show_todos(const struct opts *o)
{
	struct ah_error err = { 0 };
	struct buf text = BUF_INIT(0);
	int rc = todo_reminder(o->transcript, o->todo, &text, &err);

	if (rc < 0)
		cli_report(&err);
	else if (rc == 2)
		not_shown(o);
	else if (rc == 1 && fwrite(text.data, 1, text.len, stdout) != text.len)
		cli_stdout_failed(errno);
	buf_free(&text);
	return rc < 0 ? ES_IO : ES_OK;
}

/* --going-on: the lines on stdout, a list not shown said as
 * --show-todos says it */
static int
do_going_on(const struct opts *o)
{
	struct ah_error err = { 0 };
	struct buf out = BUF_INIT(0);
	char *task = NULL;
	size_t len = 0;
	int rc, cont = !strcmp(o->how, "continue");

	if (cont && fd_read(STDIN_FILENO, "stdin", JSONL_MAX_LINE, &task, &len,
			    &err) < 0) {
		cli_report(&err);
		return cli_status(&err, ES_BADINPUT);
	}
	rc = going_on_messages(o->transcript, o->todo, o->note,
			       cont ? (task ? task : "") : NULL, len, &out,
			       &err);
	if (rc < 0)
		cli_report(&err);
	else if (rc)
		not_shown(o);
	if (rc >= 0 && out.len && fwrite(out.data, 1, out.len, stdout) != out.len)
		cli_stdout_failed(errno);
	buf_free(&out);
	free(task);
	return rc < 0 ? ES_IO : ES_OK;
}

/* --first: the lines on stdout, the skills left out said as agent-run
 * says them; 1 when there is no skill --skill NAME.  With
 * --project-bytes, the project's instructions found from --workdir up
 * first, what is left out and what is given said as --project --walk
 * says them, and the skills' index. */
static int
do_first(struct opts *o)
{
	struct ah_error err = { 0 };
	struct buf out = BUF_INIT(0), notes = BUF_INIT(0), names = BUF_INIT(0);
	char *task = NULL, *line, *next;
	size_t len = 0, budget;
	int rc;

	if (o->project_bytes >= 0) {
		if ((rc = project_budget(o->project_bytes, &budget)) != ES_OK)
			return rc;
		rc = first_project(o->first.workdir, budget,
				   &o->first.project_text, &names, &notes, &err);
		for (line = notes.data; !o->quiet && line && *line;
		     line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			say_run("%s", line);
		}
		if (rc == 0 && !o->quiet && names.len)
			say_run("project instructions: %s", names.data);
		buf_free(&names);
		buf_reset(&notes);
		if (rc < 0) {
			cli_report(&err);
			buf_free(&notes);
			return err.code == AH_EFORMAT ? ES_USAGE : ES_IO;
		}
		o->first.skills = 1;
	}
	o->first.mode = o->sd.amode;
	if (fd_read(STDIN_FILENO, "stdin", JSONL_MAX_LINE, &task, &len,
		    &err) < 0) {
		cli_report(&err);
		return cli_status(&err, ES_BADINPUT);
	}
	o->first.task = task;
	o->first.tasklen = len;
	rc = first_messages(&o->first, &out, &notes, &err);
	for (line = notes.data; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		say_run("skill %s", line);
	}
	if (rc == 1)
		say_run("no skill named '%s' (tool-exec --skills lists them)",
			o->first.skill);
	else if (rc < 0)
		cli_report(&err);
	else if (out.len && fwrite(out.data, 1, out.len, stdout) != out.len)
		cli_stdout_failed(errno);
	else if (o->first.skill && !o->quiet)
		say_run("skill %s", o->first.skill);
	buf_free(&out);
	buf_free(&notes);
	buf_free(&o->first.project_text);
	free(task);
	return rc == 1 ? ES_REJECTED : rc < 0 ? ES_IO : ES_OK;
}

/* What a library function of agent-run's said: rc 1, the text in b on
 * stdout and exit yes; rc 0, exit no; else the error. */
static int
said(int rc, const struct buf *b, const struct ah_error *err, int yes, int no)
{
	if (rc < 0) {
		cli_report(err);
		return ES_IO;
	}
	if (rc && b->len && fwrite(b->data, 1, b->len, stdout) != b->len)
		cli_stdout_failed(errno);
	return rc ? yes : no;
}

/* --project --walk: the files found from the workspace up, each left out
 * said as agent-run says it, then their text */
static int
do_walk(const struct opts *o)
{
	struct ah_error err = { 0 };
	struct buf notes = BUF_INIT(0);
	char **pairs;
	char *line, *next;
	int n, rc;

	if (project_walk(o->walk, &pairs, &n, &notes, &err) < 0) {
		cli_report(&err);
		buf_free(&notes);
		return err.code == AH_EFORMAT ? ES_USAGE : ES_IO;
	}
	for (line = notes.data; !o->quiet && line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		say_run("%s", line);
	}
	rc = n ? do_project(o, n, pairs) : ES_OK;
	project_walk_free(pairs, n);
	buf_free(&notes);
	return rc;
}

/* s quoted for the shell, on stdout */
static void
put_quoted(const char *s)
{
	putchar('\'');
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	putchar('\'');
}

/* key is a word of the list words (separated by spaces) */
static int
listed(const char *words, const char *key)
{
	size_t n = strlen(key);
	const char *p = words;

	while (p && (p = strstr(p, key))) {
		if ((p == words || p[-1] == ' ') && (!p[n] || p[n] == ' '))
			return 1;
		p += n;
	}
	return 0;
}

/* --config --show: a line per variable in force, and where from */
static int
show_config(const struct opts *o, const struct config *c)
{
	const char *const *keys = config_keys();
	const char *v, *from;
	char *shown;
	size_t i;
	int k;

	printf("# configuration file: %s%s%s%s\n", c->path[0] ? c->path :
	       "(none: neither XDG_CONFIG_HOME nor HOME is absolute)",
	       c->in_workspace ? " (inside the workspace: not read)" :
	       c->found ? "" : " (not there)",
	       c->profile ? ", profile " : "", c->profile ? c->profile : "");
	for (i = 0; keys[i]; i++) {
		v = NULL;
		from = NULL;
		for (k = 0; k < o->noption; k++)
			if (!strncmp(o->option[k], keys[i], strlen(keys[i])) &&
			    o->option[k][strlen(keys[i])] == '=') {
				v = o->option[k] + strlen(keys[i]) + 1;
				from = "an option";
			}
		if (!from && (v = getenv(keys[i])) && *v)
			from = listed(o->from_file, keys[i]) ? "the file" :
				"the environment";
		if (!from)
			continue;
		shown = strdup(config_secret_key(keys[i]) ? "[REDACTED]" : v);
		if (!shown) {
			cli_warn("out of memory");
			return ES_IO;
		}
		redact(shown, secrets);
		printf("%s=", keys[i]);
		put_quoted(shown);
		free(shown);
		if (!strcmp(from, "the file")) {
			printf("\t# from %s", c->path);
			for (k = 0; k < (int)c->n; k++)
				if (!strcmp(c->key[k], keys[i]))
					printf(" line %u", c->line[k]);
			putchar('\n');
		} else
			printf("\t# from %s\n", from);
	}
	return ES_OK;
}

static int
do_config(const struct opts *o)
{
	struct ah_error err = { 0 };
	struct config c;
	const char *v;
	size_t i;
	int rc = ES_OK, first = 1;

	if (config_read(&c, o->profile, NULL, &err) < 0) {
		cli_report(&err);
		/* and for agent-run, which says it in its own words */
		if (!o->show) {
			fputs("config_error=", stdout);
			put_quoted(err.msg);
			putchar('\n');
		}
		return ES_USAGE;
	}
	if (c.in_workspace && !o->show) {
		char note[sizeof c.path + 128];

		snprintf(note, sizeof note, "warning: '%s' is inside the "
			 "workspace, where commands can write it: not read",
			 c.path);
		fputs("config_note=", stdout);
		put_quoted(note);
		putchar('\n');
	}
	if (o->show) {
		rc = show_config(o, &c);
		config_free(&c);
		return rc;
	}
	for (i = 0; i < c.n; i++) {
		v = getenv(c.key[i]);
		if (v && *v)
			continue; /* the environment over the file */
		printf("%s=", c.key[i]);
		put_quoted(c.value[i]);
		printf("\nexport %s\n", c.key[i]);
	}
	fputs("config_keys='", stdout);
	for (i = 0; i < c.n; i++) {
		v = getenv(c.key[i]);
		if (v && *v)
			continue;
		printf("%s%s", first ? "" : " ", c.key[i]);
		first = 0;
	}
	fputs("'\n", stdout);
	config_free(&c);
	return rc;
}

/* stdout is the terminal stderr is: where agent-step --stream showed the
 * answer as it came */
static int
same_terminal(void)
{
	char a[PATH_MAX], b[PATH_MAX];
	ssize_t n, m;

	if (!isatty(STDOUT_FILENO))
		return 0;
	n = readlink("/proc/self/fd/1", a, sizeof a);
	m = readlink("/proc/self/fd/2", b, sizeof b);
	return n == m && (n < 0 || !memcmp(a, b, (size_t)n));
}

/* text, and a newline when there is any, into fd, closed */
static int
put_file(int fd, const struct buf *text)
{
	int ok = fd >= 0 &&
		(!text->len || (write_all(fd, text->data, text->len) == 0 &&
				write_all(fd, "\n", 1) == 0));

	if (fd >= 0 && close(fd) < 0)
		ok = 0;
	return ok ? 0 : -1;
}

/* --answer: agent-run's last words, each as it said them (agent-run(1)) */
static int
do_answer(const struct opts *o)
{
	struct ah_error err = { 0 };
	struct run_end r;
	struct buf items = BUF_INIT(0), path = BUF_INIT(0);
	size_t n;
	int rc = ES_OK, have, fd;

	have = run_end_scan(o->transcript, (unsigned long)o->from, &r,
			    &err) == 0;
	if (!have)
		cli_report(&err);
	else if (!r.lineno)
		cli_warn("'%s': no messages, so no answer", o->transcript);
	else if (!r.answer)
		cli_warn("'%s': line %lu: the last message is not an answer "
			 "(the assistant's, without tool calls)", o->transcript,
			 r.lineno);
	have = have && r.answer;
	/* streamed on the terminal already, when stdout is that same
	 * terminal: not printed again */
	if (o->print && !(o->streamed && same_terminal())) {
		if (!have)
			rc = err.code ? cli_status(&err, ES_BADINPUT) :
				ES_REJECTED;
		else if (r.text.len) {
			/* on a terminal, without its escape sequences, as
			 * --stream shows it; into a pipe or a file, as it is */
			int tty = isatty(STDOUT_FILENO);
			char *safe = tty ? utf8_for_terminal(r.text.data,
				r.text.len, TERM_KEEP_LINES, &n) : NULL;

			if (tty && !safe) {
				cli_warn("out of memory");
				rc = ES_IO;
			} else if (cli_put_line(safe ? safe : r.text.data,
						safe ? n : r.text.len, 1))
				rc = ES_IO;
			free(safe);
		}
	}
	/* (O_CREAT: 0666 less the umask, as the shell's >) */
	if (o->output && (!have || put_file(open(o->output, O_WRONLY |
			O_CREAT | O_TRUNC | O_CLOEXEC, 0666), &r.text) < 0)) {
		say_run("the answer could not be written to '%s'", o->output);
		rc = 4;
	}
	/* plan mode: the plan, the final answer, made beside and renamed
	 * into place */
	if (o->plan) {
		fd = -1;
		if (buf_printf(&path, "%s/.transcript-new.%ld.XXXXXX", o->drafts,
			       (long)getppid()) < 0 ||
		    !have || (fd = mkostemp(path.data, O_CLOEXEC)) < 0 ||
		    put_file(fd, &r.text) < 0 ||
		    rename(path.data, o->plan) < 0) {
			if (fd >= 0)
				unlink(path.data);
			say_run("the plan could not be written to '%s'",
				o->plan);
			if (rc != 4)
				rc = ES_REJECTED;
		}
	}
	/* calls denied for want of a terminal to ask on: the answer may
	 * claim what they did not do */
	if (r.denied)
		fprintf(stderr, "agent-run: %zu %s denied (no terminal to ask): "
			"rerun with -y, or allow them with a rule\n", r.denied,
			r.denied == 1 ? "tool call was" : "tool calls were");
	/* items of the session's list left unfinished are said last,
	 * whatever --stop-checks let the model do about them */
	if (o->todo && o->transcript &&
	    sessdir_todos_ours(o->transcript, o->todo, secrets) &&
	    todo_left(o->todo, &items, &n, &err) == 0 && n)
		say_run("%zu todo %s left: %s", n, n == 1 ? "item" : "items",
			items.data);
	buf_free(&items);
	buf_free(&path);
	run_end_free(&r);
	return rc;
}

/* --run-options BIN -- ARGS...: for agent-run, which evals what it
 * prints; the messages are agent-run's, and so are the exit statuses. */
static int
run_options(int argc, char **argv)
{
	struct runopts_out out;
	int rc;

	if (argc < 2 || strcmp(argv[1], "--"))
		return cli_usage_error("--run-options: BIN -- ARGS...");
	rc = runopts(argv[0], argc - 2, argv + 2, &out);
	if (out.say.len) {
		/* (lines: made safe for a terminal, as say_run) */
		size_t n;
		char *safe = utf8_for_terminal(out.say.data, out.say.len,
					       TERM_KEEP_LINES, &n);

		if (safe)
			fwrite(safe, 1, n, stderr);
		else
			fputs("agent-run: (a message, lost: out of memory)\n",
			      stderr);
		free(safe);
	}
	if (rc == 0 && out.sh.len &&
	    fwrite(out.sh.data, 1, out.sh.len, stdout) != out.sh.len)
		cli_stdout_failed(errno);
	runopts_free(&out);
	return rc ? rc : cli_finish(ES_OK);
}

/* --start-server FILE -- COMMAND...: agent-run's policy server or MCP
 * bridge, recorded in FILE for the reaper; what the command printed after
 * the pid (the bridge's token) on stdout.  The command's failure is its
 * exit status, said by it. */
static int
start_server(int argc, char **argv)
{
	struct ah_error err = { 0 };
	struct buf rest = BUF_INIT(0);
	int rc, status;

	if (argc < 3 || strcmp(argv[1], "--"))
		return cli_usage_error("--start-server: FILE -- COMMAND...");
	rc = session_server_start(argv[0], argv + 2, &rest, &status, &err);
	if (rc < 0)
		cli_report(&err);
	else if (rc == 0 && rest.len &&
		 (fwrite(rest.data, 1, rest.len, stdout) != rest.len ||
		  putchar('\n') == EOF))
		cli_stdout_failed(errno);
	buf_free(&rest);
	return rc < 0 ? ES_IO : rc ? status : cli_finish(ES_OK);
}

/* --prepare, --open, --close: agent-run's words, its exit status, and
 * the assignments it evals */
static int
do_sessdir(struct opts *o)
{
	struct sessdir *sd = &o->sd;
	char cwd[PATH_MAX];
	const char *p;
	int rc;

	if (!getcwd(cwd, sizeof cwd)) {
		cli_warn("cannot tell the working directory: %s",
			 strerror(errno));
		return ES_IO;
	}
	sd->workdir = cwd;
	sd->secrets = secrets;
	sd->pid = (long)getppid();
	sd->lock_fd = (int)o->lock_fd;
	if (o->mode == M_OPEN &&
	    fd_read(STDIN_FILENO, "stdin", JSONL_MAX_LINE, &o->task, &o->tasklen,
		    &sd->err) < 0) {
		cli_report(&sd->err);
		return ES_IO;
	}
	sd->task = o->task;
	rc = o->mode == M_PREPARE ? sessdir_prepare(sd) :
		o->mode == M_OPEN ? sessdir_open(sd) :
		sessdir_close(sd, (int)o->status, o->prev);
	for (p = sd->notes.data; p && p < sd->notes.data + sd->notes.len;
	     p += strlen(p) + 1)
		if (*p == 'e' || !o->quiet)
			say_run("%s", p + 1);
	if (sd->out.len && fwrite(sd->out.data, 1, sd->out.len, stdout) !=
	    sd->out.len)
		cli_stdout_failed(errno);
	if (rc < 0) {
		say_run("%s", sd->err.msg);
		if (sd->usage)
			fputs("Try 'agent-run --help' for more information.\n",
			      stderr);
	}
	sessdir_free(sd);
	return rc < 0 ? sd->status : ES_OK;
}

static int
set_mode(struct opts *o, enum mode m)
{
	if (o->mode != M_NONE && o->mode != m)
		return cli_usage_error("--list, --begin, --reopen, --end, "
				       "--project, --prepare, --open and --close "
				       "go one at a time");
	o->mode = m;
	return ES_OK;
}

int
main(int argc, char **argv)
{
	enum { OPT_LIST = 256, OPT_BEGIN, OPT_PARENT, OPT_CALL, OPT_REOPEN,
	       OPT_END, OPT_FROM, OPT_TRANSCRIPT, OPT_RECORD, OPT_TODO,
	       OPT_STDIN_BYTES, OPT_ERROR, OPT_PROJECT, OPT_CONFIG, OPT_PROFILE,
	       OPT_SHOW, OPT_FROMFILE, OPT_OPTION, OPT_PREPARE, OPT_OPEN,
	       OPT_CLOSE, OPT_LOCKFD, OPT_CHILD, OPT_CONTINUE, OPT_RESUME,
	       OPT_SESSION, OPT_FORK, OPT_REWIND, OPT_REWINDWHAT, OPT_MODE,
	       OPT_MODEGIVEN, OPT_SANDBOX, OPT_SANDBOXGIVEN, OPT_EPHEMERAL,
	       OPT_PLANTEXT,
	       OPT_PREV, OPT_ID, OPT_OURS,
	       OPT_REAPER, OPT_LOCK, OPT_DRAFTS, OPT_INTERRUPT, OPT_STOP,
	       OPT_ANSWER, OPT_PRINT, OPT_STREAMED, OPT_OUTPUT, OPT_PLAN,
	       OPT_WALK, OPT_FIRST, OPT_PROMPT, OPT_WORKDIR, OPT_ADD,
	       OPT_PROJECTTEXT, OPT_SKILLS, OPT_SKILL, OPT_SHOWTODOS,
	       OPT_CLAIM, OPT_LEFT, OPT_COMPACTIONS, OPT_DATADIR, OPT_SYSTEM,
	       OPT_PROJECTBYTES, OPT_GOINGON, OPT_NOTE };
	static const struct option longopts[] = {
		{ "directory", required_argument, NULL, 'C' },
		{ "list", no_argument, NULL, OPT_LIST },
		{ "begin", required_argument, NULL, OPT_BEGIN },
		{ "parent", required_argument, NULL, OPT_PARENT },
		{ "call", required_argument, NULL, OPT_CALL },
		{ "reopen", required_argument, NULL, OPT_REOPEN },
		{ "end", required_argument, NULL, OPT_END },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "transcript", required_argument, NULL, OPT_TRANSCRIPT },
		{ "record", required_argument, NULL, OPT_RECORD },
		{ "todo", required_argument, NULL, OPT_TODO },
		{ "stdin-bytes", required_argument, NULL, OPT_STDIN_BYTES },
		{ "error", required_argument, NULL, OPT_ERROR },
		{ "project", required_argument, NULL, OPT_PROJECT },
		{ "config", no_argument, NULL, OPT_CONFIG },
		{ "profile", required_argument, NULL, OPT_PROFILE },
		{ "show", no_argument, NULL, OPT_SHOW },
		{ "from-file", required_argument, NULL, OPT_FROMFILE },
		{ "option", required_argument, NULL, OPT_OPTION },
		{ "prepare", no_argument, NULL, OPT_PREPARE },
		{ "open", no_argument, NULL, OPT_OPEN },
		{ "close", required_argument, NULL, OPT_CLOSE },
		{ "lock-fd", required_argument, NULL, OPT_LOCKFD },
		{ "quiet", no_argument, NULL, 'q' },
		{ "child", required_argument, NULL, OPT_CHILD },
		{ "continue", no_argument, NULL, OPT_CONTINUE },
		{ "resume", no_argument, NULL, OPT_RESUME },
		{ "session", required_argument, NULL, OPT_SESSION },
		{ "fork", no_argument, NULL, OPT_FORK },
		{ "rewind", required_argument, NULL, OPT_REWIND },
		{ "rewind-what", required_argument, NULL, OPT_REWINDWHAT },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "mode-given", no_argument, NULL, OPT_MODEGIVEN },
		{ "sandbox", required_argument, NULL, OPT_SANDBOX },
		{ "sandbox-given", no_argument, NULL, OPT_SANDBOXGIVEN },
		{ "plan-text", required_argument, NULL, OPT_PLANTEXT },
		{ "ephemeral", no_argument, NULL, OPT_EPHEMERAL },
		{ "prev", required_argument, NULL, OPT_PREV },
		{ "id", required_argument, NULL, OPT_ID },
		{ "todos-ours", no_argument, NULL, OPT_OURS },
		{ "todos-left", no_argument, NULL, OPT_LEFT },
		{ "compactions", no_argument, NULL, OPT_COMPACTIONS },
		{ "going-on", required_argument, NULL, OPT_GOINGON },
		{ "note", required_argument, NULL, OPT_NOTE },
		{ "reaper", required_argument, NULL, OPT_REAPER },
		{ "lock", required_argument, NULL, OPT_LOCK },
		{ "drafts", required_argument, NULL, OPT_DRAFTS },
		{ "interrupt", required_argument, NULL, OPT_INTERRUPT },
		{ "stop", required_argument, NULL, OPT_STOP },
		{ "answer", no_argument, NULL, OPT_ANSWER },
		{ "print", no_argument, NULL, OPT_PRINT },
		{ "streamed", no_argument, NULL, OPT_STREAMED },
		{ "output", required_argument, NULL, OPT_OUTPUT },
		{ "plan", required_argument, NULL, OPT_PLAN },
		{ "walk", required_argument, NULL, OPT_WALK },
		{ "first", no_argument, NULL, OPT_FIRST },
		{ "show-todos", no_argument, NULL, OPT_SHOWTODOS },
		{ "prompt", required_argument, NULL, OPT_PROMPT },
		{ "workdir", required_argument, NULL, OPT_WORKDIR },
		{ "add", required_argument, NULL, OPT_ADD },
		{ "project-text", required_argument, NULL, OPT_PROJECTTEXT },
		{ "skills", no_argument, NULL, OPT_SKILLS },
		{ "skill", required_argument, NULL, OPT_SKILL },
		{ "claim", required_argument, NULL, OPT_CLAIM },
		{ "datadir", required_argument, NULL, OPT_DATADIR },
		{ "system", required_argument, NULL, OPT_SYSTEM },
		{ "project-bytes", required_argument, NULL, OPT_PROJECTBYTES },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .dir = ".", .stdin_bytes = -1, .lock_fd = -1,
			  .project_bytes = -1,
			  .sd = { .out = BUF_INIT(0), .notes = BUF_INIT(0) } };
	static char transcript[PATH_MAX], record[PATH_MAX];
	struct ah_error err = { 0 };
	struct buf note = BUF_INIT(0);
	const char *const keys[] = { getenv("AGENT_API_KEY"),
		getenv("OPENAI_API_KEY"), getenv("ANTHROPIC_API_KEY") };
	size_t k, nsecrets = 0;
	int c, rc;

	if (cli_no_core() < 0)
		return ES_IO;
	for (k = 0; k < sizeof keys / sizeof *keys; k++)
		if (keys[k] && *keys[k])
			secrets[nsecrets++] = keys[k];
	if (argc > 1 && !strcmp(argv[1], "--run-options"))
		return run_options(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "--start-server"))
		return start_server(argc - 2, argv + 2);
	while ((c = getopt_long(argc, argv, ":C:hq", longopts, NULL)) != -1) {
		rc = ES_OK;
		switch (c) {
		case 'C':
			o.dir = optarg;
			break;
		case OPT_LIST:
			rc = set_mode(&o, M_LIST);
			break;
		case OPT_BEGIN:
			rc = set_mode(&o, M_BEGIN);
			o.id = optarg;
			break;
		case OPT_PARENT:
			o.parent = optarg;
			break;
		case OPT_CALL:
			o.call = optarg;
			break;
		case OPT_REOPEN:
			rc = set_mode(&o, M_REOPEN);
			o.how = optarg;
			break;
		case OPT_END:
			rc = set_mode(&o, M_END);
			if (rc == ES_OK)
				rc = cli_whole("--end", optarg, 0, 255,
					       &o.status);
			break;
		case OPT_FROM:
			rc = cli_whole("--from", optarg, 0, LONG_MAX, &o.from);
			break;
		case OPT_TRANSCRIPT:
			o.transcript = optarg;
			break;
		case OPT_RECORD:
			o.record = optarg;
			break;
		case OPT_TODO:
			o.todo = optarg;
			break;
		case OPT_ERROR:
			o.error = optarg;
			break;
		case OPT_STDIN_BYTES:
			rc = cli_whole("--stdin-bytes", optarg, 0, LONG_MAX,
				       &o.stdin_bytes);
			break;
		case OPT_CONFIG:
			rc = set_mode(&o, M_CONFIG);
			break;
		case OPT_PROFILE:
			o.profile = optarg;
			break;
		case OPT_SHOW:
			o.show = 1;
			break;
		case OPT_FROMFILE:
			o.from_file = optarg;
			break;
		case OPT_OPTION:
			if (o.noption == (int)(sizeof o.option /
					       sizeof *o.option))
				return cli_usage_error("too many --option");
			o.option[o.noption++] = optarg;
			break;
		case OPT_PROJECT:
			rc = set_mode(&o, M_PROJECT);
			if (rc == ES_OK)
				rc = cli_whole("--project", optarg, 0,
					       1000000000, &o.project);
			break;
		case OPT_PREPARE:
			rc = set_mode(&o, M_PREPARE);
			break;
		case OPT_OURS:
			rc = set_mode(&o, M_OURS);
			break;
		case OPT_OPEN:
			rc = set_mode(&o, M_OPEN);
			break;
		case OPT_CLOSE:
			rc = set_mode(&o, M_CLOSE);
			if (rc == ES_OK)
				rc = cli_whole("--close", optarg, 0, 255,
					       &o.status);
			break;
		case OPT_LOCKFD:
			rc = cli_whole("--lock-fd", optarg, 3, INT_MAX,
				       &o.lock_fd);
			break;
		case 'q':
			o.quiet = 1;
			break;
		case OPT_CHILD:
			o.sd.child = optarg;
			break;
		case OPT_CONTINUE:
			o.sd.cont = 1;
			break;
		case OPT_RESUME:
			o.sd.resume = 1;
			break;
		case OPT_SESSION:
			o.sd.session = optarg;
			break;
		case OPT_FORK:
			o.sd.fork = 1;
			break;
		case OPT_REWIND:
			o.sd.rewind = optarg;
			break;
		case OPT_REWINDWHAT:
			if (strcmp(optarg, "both") && strcmp(optarg, "code") &&
			    strcmp(optarg, "conversation"))
				return cli_usage_error("--rewind-what: '%s' is "
						       "not both, code or "
						       "conversation", optarg);
			o.sd.rewind_what = optarg;
			break;
		case OPT_MODE:
			o.sd.amode = optarg;
			break;
		case OPT_MODEGIVEN:
			o.sd.amode_given = 1;
			break;
		case OPT_SANDBOX:
			o.sd.sandbox = optarg;
			break;
		case OPT_SANDBOXGIVEN:
			o.sd.sandbox_given = 1;
			break;
		case OPT_PLANTEXT:
			o.sd.plan_text = optarg;
			break;
		case OPT_EPHEMERAL:
			o.sd.ephemeral = 1;
			break;
		case OPT_PREV:
			o.prev = optarg;
			break;
		case OPT_ID:
			o.sd.close_id = optarg;
			break;
		case OPT_REAPER:
			rc = set_mode(&o, M_REAPER);
			o.run_dir = optarg;
			break;
		case OPT_INTERRUPT:
			rc = set_mode(&o, M_INTERRUPT);
			o.run_dir = optarg;
			break;
		case OPT_STOP:
			rc = set_mode(&o, M_STOP);
			o.run_dir = optarg;
			break;
		case OPT_LOCK:
			o.lock = optarg;
			break;
		case OPT_DRAFTS:
			o.drafts = optarg;
			break;
		case OPT_ANSWER:
			rc = set_mode(&o, M_ANSWER);
			break;
		case OPT_PRINT:
			o.print = 1;
			break;
		case OPT_STREAMED:
			o.streamed = 1;
			break;
		case OPT_OUTPUT:
			o.output = optarg;
			break;
		case OPT_PLAN:
			o.plan = optarg;
			break;
		case OPT_WALK:
			o.walk = optarg;
			break;
		case OPT_FIRST:
			rc = set_mode(&o, M_FIRST);
			break;
		case OPT_SHOWTODOS:
			rc = set_mode(&o, M_SHOWTODOS);
			break;
		case OPT_LEFT:
			rc = set_mode(&o, M_LEFT);
			break;
		case OPT_COMPACTIONS:
			rc = set_mode(&o, M_COMPACTIONS);
			break;
		case OPT_GOINGON:
			rc = set_mode(&o, M_GOINGON);
			o.how = optarg;
			break;
		case OPT_NOTE:
			o.note = optarg;
			break;
		case OPT_PROMPT:
			o.first.prompt = optarg;
			break;
		case OPT_WORKDIR:
			o.first.workdir = optarg;
			break;
		case OPT_ADD:
			o.first.add = optarg;
			break;
		case OPT_PROJECTTEXT:
			o.first.project = optarg;
			break;
		case OPT_SKILLS:
			o.first.skills = 1;
			break;
		case OPT_SKILL:
			o.first.skill = optarg;
			break;
		case OPT_CLAIM:
			rc = set_mode(&o, M_CLAIM);
			o.id = optarg;
			break;
		case OPT_DATADIR:
			o.first.datadir = optarg;
			break;
		case OPT_SYSTEM:
			o.first.system = optarg;
			break;
		case OPT_PROJECTBYTES:
			rc = cli_whole("--project-bytes", optarg, 0, 1000000000,
				       &o.project_bytes);
			break;
		case CLI_OPT_VERSION:
			return cli_version();
		case 'h':
			fputs(usage, stdout);
			return cli_finish(ES_OK);
		default:
			return cli_bad_option(argv, c);
		}
		if (rc != ES_OK)
			return rc;
	}
	if ((o.first.prompt || o.first.workdir || o.first.add ||
	     o.first.project || o.first.skills || o.first.skill ||
	     o.first.datadir || o.first.system || o.project_bytes >= 0) &&
	    o.mode != M_FIRST)
		return cli_usage_error("--prompt, --workdir, --add, "
				       "--project-text, --skills, --skill, "
				       "--datadir, --system and --project-bytes "
				       "go with --first");
	if (o.mode == M_FIRST && !o.first.prompt == !o.first.datadir)
		return cli_usage_error("--first: say the system prompt's "
				       "--prompt FILE, or agent-run's "
				       "--datadir DIR");
	if (o.mode == M_FIRST && ((o.first.system && !o.first.datadir) ||
	    (o.project_bytes >= 0 && !o.first.workdir)))
		return cli_usage_error("--first: --system goes with --datadir, "
				       "--project-bytes with --workdir");
	if (o.walk && o.mode != M_PROJECT)
		return cli_usage_error("--walk goes with --project");
	if (o.walk) {
		if (optind < argc)
			return cli_usage_error("--walk: no REL FILE with it");
		return cli_finish(do_walk(&o));
	}
	if (o.mode == M_PROJECT) {
		if ((argc - optind) % 2)
			return cli_usage_error("--project: a FILE for each REL");
		return cli_finish(do_project(&o, argc - optind,
					     argv + optind));
	}
	if (optind < argc)
		return cli_usage_error("unexpected argument '%s'", argv[optind]);
	if (o.mode == M_NONE)
		return cli_usage_error("say what to do: --list, --begin, "
				       "--reopen, --end or --config");
	if (o.mode == M_BEGIN && !session_id_ok(o.id))
		return cli_usage_error("--begin: '%s' is not a session id "
				       "(letters, digits, '.', '_', '-')", o.id);
	if (o.parent && !session_id_ok(o.parent))
		return cli_usage_error("--parent: '%s' is not a session id",
				       o.parent);
	if (o.mode == M_OURS && !o.transcript) {
		if (state_path(transcript, sizeof transcript,
			       "transcript.jsonl", &err) < 0) {
			cli_report(&err);
			return ES_IO;
		}
		o.transcript = transcript;
	}
	if (o.mode == M_OURS)
		return cli_finish(sessdir_todos_ours(o.transcript, o.todo ? o.todo
						     : todo_default_path(),
						     secrets) ? ES_OK
				  : ES_REJECTED);
	if (o.mode == M_CLOSE)
		o.sd.close_todo = o.todo, o.todo = NULL;
	if (o.mode == M_COMPACTIONS && !o.transcript)
		return cli_usage_error("--compactions: say the --transcript "
				       "FILE");
	if ((o.mode == M_SHOWTODOS || o.mode == M_LEFT ||
	     o.mode == M_GOINGON) && (!o.todo || !o.transcript))
		return cli_usage_error("%s: say the --transcript FILE and the "
				       "--todo FILE", o.mode == M_LEFT ?
				       "--todos-left" : o.mode == M_GOINGON ?
				       "--going-on" : "--show-todos");
	if (o.mode == M_GOINGON && strcmp(o.how, "continue") &&
	    strcmp(o.how, "resume") && strcmp(o.how, "branch"))
		return cli_usage_error("--going-on: '%s' is not continue, "
				       "resume or branch", o.how);
	if (o.note && o.mode != M_GOINGON)
		return cli_usage_error("--note goes with --going-on");
	if ((o.parent || o.call ||
	     (o.todo && o.mode != M_ANSWER && o.mode != M_SHOWTODOS &&
	      o.mode != M_LEFT && o.mode != M_GOINGON) ||
	     o.stdin_bytes >= 0) &&
	    o.mode != M_BEGIN)
		return cli_usage_error("--parent, --call, --todo and "
				       "--stdin-bytes go with --begin");
	if (o.error && o.mode != M_END)
		return cli_usage_error("--error goes with --end");
	if ((o.profile || o.show || o.from_file || o.noption) &&
	    o.mode != M_CONFIG)
		return cli_usage_error("--profile, --show, --from-file and "
				       "--option go with --config");
	if (o.lock && o.mode != M_REAPER)
		return cli_usage_error("--lock goes with --reaper");
	if (o.drafts && o.mode != M_REAPER && !o.plan)
		return cli_usage_error("--drafts goes with --reaper, or "
				       "--answer --plan");
	if ((o.print || o.streamed || o.output || o.plan) &&
	    o.mode != M_ANSWER)
		return cli_usage_error("--print, --streamed, --output and "
				       "--plan go with --answer");
	if (o.plan && !o.drafts)
		return cli_usage_error("--plan: say where to make it "
				       "(--drafts DIR)");
	if (o.mode == M_REAPER && !o.lock)
		return cli_usage_error("--reaper: say the lock's --lock FILE");
	if (o.mode == M_CONFIG && !o.profile)
		o.profile = getenv("AGENT_PROFILE");
	if ((o.mode == M_OPEN || o.mode == M_CLOSE) && o.lock_fd < 0)
		return cli_usage_error("--open and --close need --lock-fd");
	if (o.mode != M_OPEN && o.mode != M_CLOSE && o.lock_fd >= 0)
		return cli_usage_error("--lock-fd goes with --open and --close");
	if (o.mode == M_OPEN && o.sd.rewind && !o.sd.rewind_what)
		o.sd.rewind_what = "both";
	if (o.mode == M_PREPARE || o.mode == M_OPEN || o.mode == M_CLOSE) {
		if (strcmp(o.dir, ".") && chdir(o.dir) < 0) {
			cli_warn("cannot change to '%s': %s", o.dir,
				 strerror(errno));
			return ES_IO;
		}
		rc = do_sessdir(&o);
		free(o.task);
		return cli_finish(rc);
	}
	if (o.mode == M_CLAIM)
		return cli_finish(do_claim(&o));
	if (o.mode == M_REOPEN && strcmp(o.how, "continue") &&
	    strcmp(o.how, "resume"))
		return cli_usage_error("--reopen: '%s' is neither continue nor "
				       "resume", o.how);
	/* --list reads beneath the directory without going there, but a
	 * directory that is not there is an error, not an empty list */
	if (o.mode == M_LIST && access(o.dir, X_OK) < 0) {
		cli_warn("cannot read '%s': %s", o.dir, strerror(errno));
		return ES_IO;
	}
	if (o.mode != M_LIST && strcmp(o.dir, ".") && chdir(o.dir) < 0) {
		cli_warn("cannot change to '%s': %s", o.dir, strerror(errno));
		return ES_IO;
	}
	/* the session's files are in the state directory, checked (made
	 * by --begin) for this workspace first; none yet: nothing listed */
	if (o.mode != M_CONFIG && o.mode < M_REAPER &&
	    (!o.transcript || !o.record || o.mode == M_LIST)) {
		rc = state_dir_check(o.mode == M_LIST ? o.dir : ".",
				     o.mode == M_BEGIN, &err);
		if (rc < 0 || (!o.transcript && state_path(transcript,
				sizeof transcript, "transcript.jsonl",
				&err) < 0) ||
		    (!o.record && state_path(record, sizeof record,
					     "session.json", &err) < 0)) {
			cli_report(&err);
			return ES_IO;
		}
		if (rc > 0 && o.mode == M_LIST)
			return cli_finish(ES_OK);
		if (!o.transcript)
			o.transcript = transcript;
		if (!o.record)
			o.record = record;
	}
	switch (o.mode) {
	case M_LIST:
		rc = do_list(&o);
		break;
	case M_BEGIN:
		rc = do_begin(&o);
		break;
	case M_REOPEN:
		rc = do_reopen(&o);
		break;
	case M_CONFIG:
		rc = do_config(&o);
		break;
	case M_REAPER:
		rc = ES_OK;
		if (reaper_start(o.run_dir, o.lock, o.drafts, &err) < 0) {
			cli_report(&err);
			rc = ES_IO;
		}
		break;
	case M_INTERRUPT:
		reaper_interrupt(o.run_dir);
		break;
	case M_STOP:
		reaper_stop(o.run_dir);
		break;
	case M_ANSWER:
		rc = do_answer(&o);
		break;
	case M_FIRST:
		rc = do_first(&o);
		break;
	case M_SHOWTODOS:
		rc = do_show_todos(&o);
		break;
	case M_GOINGON:
		rc = do_going_on(&o);
		break;
	case M_LEFT:
		rc = said(todo_nudge(o.transcript, o.todo, secrets, &note,
				     &err), &note, &err, ES_OK, ES_REJECTED);
		break;
	case M_COMPACTIONS:
		rc = said(compact_refused(o.dir, o.transcript,
					  (unsigned long)o.from, &note, &err),
			  &note, &err, ES_REJECTED, ES_OK);
		break;
	default:
		rc = do_end(&o);
		break;
	}
	buf_free(&note);
	return cli_finish(rc);
}
