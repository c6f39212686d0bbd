/* events.c: the events of agent-run --json (see agent-harness(5)), made
 * from the messages as hook-audit passes them: one JSON object a line,
 * each with a "type" and the session's id. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "priv.h"

/* The most bytes of a tool result an event carries; the transcript has
 * the whole of it. */
#define EVENT_RESULT_MAX 2048

int
events_write(int fd, const char *p, size_t len)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int locked, rc, e;

	while ((locked = fcntl(fd, F_SETLKW, &fl) == 0) == 0 && errno == EINTR)
		;
	rc = write_all(fd, p, len);
	e = errno;
	if (locked) {
		fl.l_type = F_UNLCK;
		fcntl(fd, F_SETLK, &fl);
	}
	errno = e;
	return rc;
}

/* A new event object of type for session, or NULL. */
static cJSON *
event_new(const char *type, const char *session)
{
	cJSON *e = cJSON_CreateObject();

	if (!e || !cJSON_AddStringToObject(e, "type", type) ||
	    !cJSON_AddStringToObject(e, "session", session ? session : "")) {
		cJSON_Delete(e);
		return NULL;
	}
	return e;
}

/* Appends e, redacted, as a line to out, and frees it.  0, or -1 (out of
 * memory) with err set. */
static int
event_put(struct buf *out, cJSON *e, const char *const *secrets,
	  struct ah_error *err)
{
	char *s;
	int rc;

	if (!e)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	redact_json(e, secrets);
	s = cJSON_PrintUnformatted(e);
	cJSON_Delete(e);
	rc = s && buf_append(out, s, strlen(s)) == 0 && buf_putc(out, '\n') == 0
		? 0 : ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	free(s);
	return rc;
}

/* Copies field key of from into to, when it is there.  0 or -1. */
static int
copy_field(cJSON *to, const cJSON *from, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, key);
	cJSON *d;

	if (!v)
		return 0;
	d = cJSON_Duplicate(v, 1);
	if (!d || !cJSON_AddItemToObject(to, key, d)) {
		cJSON_Delete(d);
		return -1;
	}
	return 0;
}

/* The content of a message as text: a string as it is, the text parts of
 * an array joined; NULL (no content) as JSON null.  Adds it to e as
 * "content", cut at max bytes (0: whole) on a character boundary, with
 * "bytes" and "truncated" when max is set. */
static int
add_content(cJSON *e, const cJSON *msg, size_t max)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(msg, "content");
	struct buf text = BUF_INIT(0);
	const cJSON *part;
	size_t n;
	int rc = -1;

	if (cJSON_IsString(c)) {
		if (buf_append(&text, c->valuestring, strlen(c->valuestring)))
			goto out;
	} else if (cJSON_IsArray(c)) {
		cJSON_ArrayForEach(part, c) {
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(part,
									  "text");

			if (cJSON_IsString(t) &&
			    buf_append(&text, t->valuestring,
				       strlen(t->valuestring)))
				goto out;
		}
	} else {
		rc = cJSON_AddNullToObject(e, "content") ? 0 : -1;
		goto out;
	}
	n = text.len;
	if (max && n > max)
		n = utf8_valid_prefix(text.data, max);
	if (text.data)
		text.data[n] = '\0';
	if (!cJSON_AddStringToObject(e, "content", text.data ? text.data : ""))
		goto out;
	if (max && (!cJSON_AddNumberToObject(e, "bytes", (double)text.len) ||
		    !cJSON_AddBoolToObject(e, "truncated", n < text.len)))
		goto out;
	rc = 0;
out:
	buf_free(&text);
	return rc;
}

/* One tool_call event for each call of an assistant message. */
static int
call_events(struct buf *out, const cJSON *msg, const char *session,
	    const char *const *secrets, struct ah_error *err)
{
	const cJSON *calls = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	const cJSON *call;

	cJSON_ArrayForEach(call, calls) {
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call,
								   "function");
		const cJSON *perm = cJSON_GetObjectItemCaseSensitive(call,
								     "permission");
		const cJSON *v;
		cJSON *e = event_new("tool_call", session);

		if (e && !cJSON_AddStringToObject(e, "id", call_id(call))) {
			cJSON_Delete(e);
			e = NULL;
		}
		if (e) {
			v = cJSON_GetObjectItemCaseSensitive(fn, "name");
			if (!cJSON_AddStringToObject(e, "name", cJSON_IsString(v)
						     ? v->valuestring : "") ||
			    copy_field(e, fn, "arguments") < 0 ||
			    copy_field(e, perm, "decision") < 0 ||
			    copy_field(e, perm, "reason") < 0 ||
			    copy_field(e, perm, "rule") < 0) {
				cJSON_Delete(e);
				e = NULL;
			}
		}
		if (event_put(out, e, secrets, err) < 0)
			return -1;
	}
	return 0;
}

/* A skill given to the model (agent-run --skill: a system message) or
 * read by it (the result of a skill call): the message's "skill"
 * member, {name, path?}, as an event, with how it came. */
static int
skill_event(struct buf *out, const cJSON *msg, const char *session,
	    const char *const *secrets, struct ah_error *err)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(msg, "skill");
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
	cJSON *e;

	if (!cJSON_IsObject(k) ||
	    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(k, "name")))
		return 0;
	e = event_new("skill", session);
	if (e && (copy_field(e, k, "name") < 0 || copy_field(e, k, "path") < 0
		  || !cJSON_AddStringToObject(e, "via", cJSON_IsString(role) &&
					      !strcmp(role->valuestring, "tool")
					      ? "tool" : "start") ||
		  copy_field(e, msg, "tool_call_id") < 0)) {
		cJSON_Delete(e);
		e = NULL;
	}
	return event_put(out, e, secrets, err);
}

int
events_of_message(struct buf *out, const cJSON *msg, const char *session,
		  const char *const *secrets, struct ah_error *err)
{
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
	const cJSON *calls, *v;
	cJSON *e;

	if (!cJSON_IsString(role))
		return 0;
	if (!strcmp(role->valuestring, "assistant")) {
		calls = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
		e = event_new("assistant", session);
		if (e && (add_content(e, msg, 0) < 0 ||
			  !cJSON_AddNumberToObject(e, "tool_calls",
						   cJSON_GetArraySize(calls)))) {
			cJSON_Delete(e);
			e = NULL;
		}
		if (event_put(out, e, secrets, err) < 0)
			return -1;
		/* the snapshot taken before its calls ran (agent-snap) */
		v = cJSON_GetObjectItemCaseSensitive(msg, "checkpoint");
		if (cJSON_IsString(v)) {
			e = event_new("checkpoint", session);
			if (e && copy_field(e, msg, "checkpoint") < 0) {
				cJSON_Delete(e);
				e = NULL;
			}
			if (event_put(out, e, secrets, err) < 0)
				return -1;
		}
		v = cJSON_GetObjectItemCaseSensitive(msg, "usage");
		if (cJSON_IsObject(v)) {
			const cJSON *c = cJSON_GetObjectItemCaseSensitive(
				msg, "cost_usd");

			e = event_new("usage", session);
			/* and what agent-step priced it at; null: a model
			 * not in its table */
			if (e && (copy_field(e, msg, "usage") < 0 ||
				  !cJSON_AddItemToObject(e, "cost_usd",
					cJSON_IsNumber(c)
					? cJSON_CreateNumber(c->valuedouble)
					: cJSON_CreateNull()))) {
				cJSON_Delete(e);
				e = NULL;
			}
			if (event_put(out, e, secrets, err) < 0)
				return -1;
		}
		return call_events(out, msg, session, secrets, err);
	}
	if (!strcmp(role->valuestring, "tool")) {
		e = event_new("tool_result", session);
		if (e && (copy_field(e, msg, "tool_call_id") < 0 ||
			  add_content(e, msg, EVENT_RESULT_MAX) < 0)) {
			cJSON_Delete(e);
			e = NULL;
		}
		if (event_put(out, e, secrets, err) < 0)
			return -1;
		return skill_event(out, msg, session, secrets, err);
	}
	if (!strcmp(role->valuestring, "system"))
		return skill_event(out, msg, session, secrets, err);
	if (!strcmp(role->valuestring, "user")) {
		v = cJSON_GetObjectItemCaseSensitive(msg, "compaction");
		if (cJSON_IsObject(v)) {
			/* the entry's own fields: keep, summarised, bytes... */
			const cJSON *f;

			e = event_new("compaction", session);
			cJSON_ArrayForEach(f, v)
				if (e && copy_field(e, v, f->string) < 0) {
					cJSON_Delete(e);
					e = NULL;
				}
		} else {
			e = event_new("user", session);
			if (e && add_content(e, msg, 0) < 0) {
				cJSON_Delete(e);
				e = NULL;
			}
		}
		return event_put(out, e, secrets, err);
	}
	return 0;
}

int
events_of_todo(struct buf *out, const char *path, struct event_todo *seen,
	       const char *session, struct ah_error *err)
{
	struct ah_error rerr = { 0 };
	struct stat st;
	char *data = NULL;
	size_t len;
	cJSON *v, *e;
	int rc;

	if (stat(path, &st) < 0) {
		/* gone, or never there: nothing to tell */
		seen->known = seen->quiet = 0;
		return 0;
	}
	if (seen->known && seen->dev == st.st_dev && seen->ino == st.st_ino &&
	    seen->size == st.st_size &&
	    seen->mtime.tv_sec == st.st_mtim.tv_sec &&
	    seen->mtime.tv_nsec == st.st_mtim.tv_nsec)
		return 0;
	seen->known = 1;
	seen->dev = st.st_dev;
	seen->ino = st.st_ino;
	seen->size = st.st_size;
	seen->mtime = st.st_mtim;
	if (seen->quiet) {
		/* the list as it was when we started is not news */
		seen->quiet = 0;
		return 0;
	}
	e = event_new("todo", session);
	if (!e)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	/* what the file holds now; one that cannot be read or parsed is
	 * told as such, never taken for a list */
	rc = file_read(path, TODO_MAX_ARGS, &data, &len, &rerr);
	v = rc > 0 ? json_parse(data, len, NULL) : NULL;
	free(data);
	if (cJSON_IsObject(v) &&
	    cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(v, "todos"))) {
		if (copy_field(e, v, "todos") < 0) {
			cJSON_Delete(v);
			cJSON_Delete(e);
			return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		}
	} else if (!cJSON_AddStringToObject(e, "error", rc < 0 ? rerr.msg :
					    "not a todo list ({\"todos\": [...]})")) {
		cJSON_Delete(v);
		cJSON_Delete(e);
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	}
	cJSON_Delete(v);
	return event_put(out, e, NULL, err);
}
