/*
 * firstmsg.c: the first messages of a new session of agent-run
 * (agent-session(1), --first), as JSON Lines for hook-audit to write:
 * the system prompt, the project's instructions, the skills' index and
 * the skill asked for, then the task; and those of a run of a session
 * that goes on (--going-on): its todo list, its mode's note, the
 * follow-up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "priv.h"

/* The most a prompt, a mode's text or the project's text may be. */
#define FIRST_MAX_FILE (1u << 24)

/* One message of role and text[0..n) onto out, a line; from_user marks
 * the user's own words ("from":"user"), which a compaction keeps. */
static int
put_message(struct buf *out, const char *role, const char *text, size_t n,
	    int from_user, struct ah_error *err)
{
	static const char from[] = ",\"from\":\"user\"}";
	size_t len;
	char *line = chat_text_message(role, text, n, &len, err);
	int rc;

	if (!line)
		return -1;
	/* the object's closing brace gives way to the mark */
	rc = buf_append(out, line, from_user ? len - 1 : len) < 0 ||
	     (from_user && buf_append(out, from, sizeof from - 1) < 0) ||
	     buf_putc(out, '\n') < 0;
	free(line);
	return rc ? ah_fail(err, AH_ENOMEM, "out of memory") : 0;
}

/* The text of the file at path, without its trailing newlines (as the
 * shell's $(cat path) had it); a file that is not there is an error. */
static int
read_trimmed(const char *path, char **text, size_t *len, struct ah_error *err)
{
	int rc = file_read(path, FIRST_MAX_FILE, text, len, err);

	if (rc == 0)
		return ah_fail(err, AH_EIO, "cannot read '%s': no such file",
			       path);
	if (rc < 0)
		return -1;
	while (*len && (*text)[*len - 1] == '\n')
		(*text)[--*len] = '\0';
	return 0;
}

/* text with each @WORKDIR@ replaced by dir: the directory's name may
 * hold any character */
static int
put_workdir(struct buf *b, const char *text, size_t len, const char *dir)
{
	static const char mark[] = "@WORKDIR@";
	const char *p = text, *end = text + len, *q;

	while ((q = memmem(p, (size_t)(end - p), mark, sizeof mark - 1))) {
		if (buf_append(b, p, (size_t)(q - p)) < 0 ||
		    buf_append(b, dir, strlen(dir)) < 0)
			return -1;
		p = q + sizeof mark - 1;
	}
	return buf_append(b, p, (size_t)(end - p));
}

/* The skill message: its text, marked with its name and path for the
 * skill event of agent-run --json */
static int
put_skill(struct buf *out, const struct skills *sk, struct ah_error *err)
{
	struct buf b = BUF_INIT(0);
	cJSON *msg = NULL, *k;
	char *line = NULL;
	int rc = -1;

	if (skill_text(sk, &b) < 0 || !(msg = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(msg, "role", "system") ||
	    !cJSON_AddStringToObject(msg, "content", b.data ? b.data : "") ||
	    !(k = cJSON_AddObjectToObject(msg, "skill")) ||
	    !cJSON_AddStringToObject(k, "name", sk->v[sk->found].name) ||
	    !cJSON_AddStringToObject(k, "path", sk->v[sk->found].path) ||
	    !(line = cJSON_PrintUnformatted(msg)) ||
	    buf_append(out, line, strlen(line)) < 0 || buf_putc(out, '\n') < 0)
		ah_fail(err, AH_ENOMEM, "out of memory");
	else
		rc = 0;
	free(line);
	cJSON_Delete(msg);
	buf_free(&b);
	return rc;
}

/* dir/name, or NULL when out of memory */
static char *
data_file(const char *dir, const char *name)
{
	char *p;

	return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

int
first_messages(const struct first_opts *o, struct buf *out,
	       struct buf *notes, struct ah_error *err)
{
	struct buf prompt = BUF_INIT(0), index = BUF_INIT(0);
	struct skills sk;
	char *text = NULL, *add = NULL, *ppath = NULL, *apath = NULL;
	const char *workdir = o->workdir, *addfile = o->add;
	size_t len, addlen;
	int rc = -1, have_sk = 0;

	/* the system prompt, @WORKDIR@ the workspace when it is the
	 * harness's; plan mode's text after it */
	if (o->datadir) {
		if (o->system)
			workdir = NULL;
		else if (!(ppath = data_file(o->datadir, "system-prompt.txt")))
			goto oom;
		addfile = NULL;
		if (o->mode && !strcmp(o->mode, "plan") &&
		    !(addfile = apath = data_file(o->datadir, "mode-plan.txt")))
			goto oom;
	}
	if (read_trimmed(ppath ? ppath : o->system ? o->system : o->prompt,
			 &text, &len, err) < 0)
		goto out;
	if ((workdir ? put_workdir(&prompt, text, len, workdir) :
	     buf_append(&prompt, text, len)) < 0)
		goto oom;
	if (addfile) {
		if (read_trimmed(addfile, &add, &addlen, err) < 0)
			goto out;
		if (buf_append(&prompt, "\n\n", 2) < 0 ||
		    buf_append(&prompt, add, addlen) < 0)
			goto oom;
	}
	if (put_message(out, "system", prompt.data ? prompt.data : "",
			prompt.len, 0, err) < 0)
		goto out;
	/* the project's instructions, as first_project (agent-session
	 * --project --walk) made them */
	if (o->project_text.len && put_message(out, "system",
			o->project_text.data, o->project_text.len, 0, err) < 0)
		goto out;
	if (o->project) {
		free(text);
		text = NULL;
		if (file_read(o->project, FIRST_MAX_FILE, &text, &len, err) < 0)
			goto out;
		if (text && len && put_message(out, "system", text, len, 0,
					       err) < 0)
			goto out;
	}
	/* the skills' index, and the skill asked for (agent-run(1),
	 * Skills); those left out are said */
	if (o->skills || o->skill) {
		have_sk = 1;
		if (skills_find(".", o->skill, &sk, err) < 0)
			goto out;
		if ((o->skills || (o->skill && sk.found == (size_t)-1)) &&
		    sk.notes.len && buf_append(notes, sk.notes.data,
					       sk.notes.len) < 0)
			goto oom;
		if (o->skill && sk.found == (size_t)-1) {
			rc = 1;
			goto out;
		}
		if (o->skills) {
			if (skills_index(&sk, &index) < 0)
				goto oom;
			if (index.len && put_message(out, "system", index.data,
						     index.len, 0, err) < 0)
				goto out;
		}
		if (o->skill && put_skill(out, &sk, err) < 0)
			goto out;
	}
	/* the task: the user's own words */
	if (put_message(out, "user", o->task ? o->task : "", o->tasklen, 1,
			err) < 0)
		goto out;
	rc = 0;
	goto out;
oom:
	ah_fail(err, AH_ENOMEM, "out of memory");
out:
	if (have_sk)
		skills_free(&sk);
	buf_free(&prompt);
	buf_free(&index);
	free(text);
	free(add);
	free(ppath);
	free(apath);
	return rc;
}

int
going_on_messages(const char *transcript, const char *todo, const char *note,
		  const char *task, size_t tasklen, struct buf *out,
		  struct ah_error *err)
{
	struct buf text = BUF_INIT(0);
	int rc = todo_reminder(transcript, todo, &text, err);

	if (rc < 0 ||
	    (rc == 1 && put_message(out, "user", text.data, text.len, 0,
				    err) < 0) ||
	    (note && *note && put_message(out, "user", note, strlen(note), 0,
					  err) < 0) ||
	    (task && put_message(out, "user", task, tasklen, 1, err) < 0))
		rc = -1;
	buf_free(&text);
	return rc < 0 ? -1 : rc == 2;
}

int
first_project(const char *dir, size_t budget, struct buf *text,
	      struct buf *names, struct buf *notes, struct ah_error *err)
{
	const char **rel = NULL, **path = NULL;
	char **pairs;
	int n, i, rc = -1;
	size_t k;

	if (project_walk(dir, &pairs, &n, notes, err) < 0)
		return -1;
	if (!n) {
		rc = 0;
		goto out;
	}
	rel = calloc((size_t)n / 2 + 1, sizeof *rel);
	path = calloc((size_t)n / 2 + 1, sizeof *path);
	if (!rel || !path) {
		ah_fail(err, AH_ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n / 2; i++) {
		rel[i] = pairs[2 * i];
		path[i] = pairs[2 * i + 1];
	}
	if (project_text(rel, path, n / 2, budget, text, names, err) < 0)
		goto out;
	/* one line: a name's control characters do not end it */
	for (k = 0; k < names->len; k++)
		if ((unsigned char)names->data[k] < 0x20)
			names->data[k] = '?';
	rc = 0;
out:
	free(rel);
	free(path);
	project_walk_free(pairs, n);
	return rc;
}
