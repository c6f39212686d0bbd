/* chat.c: the conversation agent-step sends, kept serialised. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "priv.h"

void
chat_init(struct chat *c)
{
	struct buf b = BUF_INIT(0);

	memset(c, 0, sizeof *c);
	c->msgs = b;
	c->compacted = -1;
	c->req = b;
	calls_init(&c->calls);
}

void
chat_free(struct chat *c)
{
	int i;

	for (i = 0; i < c->count; i++) {
		free(c->m[i].what);
		free(c->m[i].id);
	}
	free(c->m);
	free(c->view);
	buf_free(&c->msgs);
	buf_free(&c->req);
	calls_free(&c->calls);
}

static const char *
role_of(const cJSON *msg)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(msg, "role");

	return cJSON_IsString(r) ? r->valuestring : NULL;
}

/* A copy of a tool call with only the fields the API defines. */
static cJSON *
clean_call(const cJSON *call, int *bad)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
	const cJSON *m;
	cJSON *o = cJSON_CreateObject(), *f;
	const char *args;
	char *text = NULL;

	if (!o)
		return NULL;
	if (!cJSON_IsString(name)) {
		*bad = 1;
		return o;
	}
	f = cJSON_CreateObject();
	if (!f || !cJSON_AddStringToObject(o, "id", call_id(call)) ||
	    !cJSON_AddStringToObject(o, "type", "function") ||
	    !cJSON_AddItemToObject(o, "function", f) ||
	    !cJSON_AddStringToObject(f, "name", name->valuestring))
		goto fail;
	/* arguments go out as the string they came as */
	args = call_arguments_text(call, "{}", &text);
	if (!args || !cJSON_AddStringToObject(f, "arguments", args))
		goto fail;
	/* What a provider added to the call goes back with it (Gemini 3's
	 * extra_content); what the harness added ("permission") does not. */
	cJSON_ArrayForEach(m, call) {
		if (!m->string || !strcmp(m->string, "id") ||
		    !strcmp(m->string, "type") ||
		    !strcmp(m->string, "function") ||
		    !strcmp(m->string, "permission") ||
		    !strcmp(m->string, "index"))
			continue;
		if (!cJSON_AddItemToObject(o, m->string, cJSON_Duplicate(m, 1)))
			goto fail;
	}
	free(text);
	return o;
fail:
	free(text);
	cJSON_Delete(o);
	return NULL;
}

/* A copy of a message with only the fields the API defines: annotations
 * such as "permission", "usage" or "reasoning_content" stay behind. */
static cJSON *
clean_message(const cJSON *msg, const char *role, int api, int *bad)
{
	static const char *const keep[] = { "content", "name", "tool_call_id",
					    "refusal", "thinking_blocks",
					    "reasoning_items" };
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	const cJSON *v, *call;
	cJSON *o = cJSON_CreateObject(), *arr, *c;
	size_t i;

	if (!o || !cJSON_AddStringToObject(o, "role", role))
		goto fail;
	for (i = 0; i < sizeof keep / sizeof *keep; i++) {
		/* Anthropic's thinking blocks go back to it, and only to it */
		if (!strcmp(keep[i], "thinking_blocks") && api != API_ANTHROPIC)
			continue;
		/* and the Responses API's reasoning items to it alone */
		if (!strcmp(keep[i], "reasoning_items") && api != API_RESPONSES)
			continue;
		v = cJSON_GetObjectItemCaseSensitive(msg, keep[i]);
		if (v && !cJSON_AddItemToObject(o, keep[i],
						cJSON_Duplicate(v, 1)))
			goto fail;
	}
	if (!strcmp(role, "assistant") && cJSON_IsArray(tc) && tc->child) {
		arr = cJSON_AddArrayToObject(o, "tool_calls");
		if (!arr)
			goto fail;
		cJSON_ArrayForEach(call, tc) {
			c = clean_call(call, bad);
			if (!c)
				goto fail;
			if (!cJSON_AddItemToArray(arr, c)) {
				cJSON_Delete(c);
				goto fail;
			}
		}
		if (!cJSON_GetObjectItemCaseSensitive(o, "content") &&
		    !cJSON_AddNullToObject(o, "content"))
			goto fail;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

/* --- the context budget */

long
chat_model_window(const char *model)
{
	/* Prefixes, the more specific first; figures from the providers'
	 * model pages (input tokens). */
	static const struct { const char *prefix; long window; } known[] = {
		{ "gpt-4.1", 1047576 }, { "gpt-5", 400000 },
		{ "gpt-4o", 128000 }, { "gpt-4-turbo", 128000 },
		{ "gpt-4", 8192 }, { "gpt-3.5-turbo", 16385 },
		{ "o1", 200000 }, { "o3", 200000 }, { "o4", 200000 },
		{ "claude", 200000 }, { "gemini", 1048576 },
		{ "deepseek", 128000 }, { "mistral-large", 128000 },
		{ "codestral", 256000 }, { "grok", 131072 },
		{ "qwen", 32768 }, { "llama", 8192 },
	};
	const char *slash = model ? strrchr(model, '/') : NULL;
	size_t i;

	if (!model)
		return 0;
	if (slash) /* openai/gpt-4o, as routers name them */
		model = slash + 1;
	for (i = 0; i < sizeof known / sizeof *known; i++)
		if (!strncmp(model, known[i].prefix, strlen(known[i].prefix)))
			return known[i].window;
	return 0;
}

void
chat_budget_default(struct chat_budget *b, long window, const char *outputs)
{
	b->window = window;
	b->stub_at = 0.75;
	b->stub_cap = 100000;
	b->stub_min = 1024;
	b->keep = 3;
	b->keep_share = 0.1;
	b->outputs = outputs && *outputs ? outputs : NULL;
}

long
chat_estimate(const struct chat *c)
{
	long since;
	int i;

	for (i = c->count - 1; i > c->compacted; i--)
		if (c->m[i].prompt >= 0) {
			since = (long)c->msgs.len - (long)c->m[i].point;
			return c->m[i].prompt + since / CHAT_BYTES_PER_TOKEN;
		}
	return (long)(c->msgs.len / CHAT_BYTES_PER_TOKEN);
}

/* The file name a left-out text gets: its message's number and its call
 * id, made safe for a file name. */
static void
output_name(const struct chat *c, int i, char *name, size_t size)
{
	const char *id = c->m[i].id;
	size_t n = (size_t)snprintf(name, size, "%d-", i + 1), k;

	for (k = 0; id[k] && n + 5 < size && k < 64; k++)
		name[n++] = (id[k] >= 'a' && id[k] <= 'z') ||
			    (id[k] >= 'A' && id[k] <= 'Z') ||
			    (id[k] >= '0' && id[k] <= '9') || id[k] == '-' ||
			    id[k] == '_' ? id[k] : '_';
	snprintf(name + n, size - n, ".txt");
}

/* Keeps text in the outputs directory under name: 0 when it is there
 * (written now, or by an earlier run reading the same transcript). */
static int
keep_output(const char *dir, const char *name, const char *text)
{
	char path[4096], *old = NULL;
	size_t len = strlen(text), oldlen;
	int fd, rc = -1;

	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >=
	    sizeof path)
		return -1;
	/* under .agent, made and opened without following a link at any
	 * depth (agent_open): a repository could ship .agent/outputs as a
	 * link to ~/.bashrc.d */
	if (!agent_path_inside(dir) && mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -1;
	fd = agent_open(path, NULL, O_WRONLY | O_CREAT | O_EXCL, 0600, NULL);
	if (fd < 0) {
		struct ah_error err;

		if (errno != EEXIST ||
		    file_read(path, len + 1, &old, &oldlen, &err) != 1)
			return -1;
		rc = oldlen == len && !memcmp(old, text, len) ? 0 : -1;
		free(old);
		return rc;
	}
	if (write_all(fd, text, len) == 0)
		rc = 0;
	if (close(fd) < 0)
		rc = -1;
	if (rc < 0)
		unlink(path);
	return rc;
}

/* The stub sent in place of tool result i, as a message. */
static char *
stub_message(const struct chat *c, int i, const char *text)
{
	char name[128], *line = NULL, *body = NULL;
	const char *dir = c->budget.outputs;
	cJSON *o;
	int n;

	output_name(c, i, name, sizeof name);
	if (dir && keep_output(dir, name, text) == 0)
		n = asprintf(&body, "[Output left out of the request to save "
			     "context: %s gave %zu bytes. The whole text is in "
			     "%s/%s; read it with read_file if you need it.]",
			     c->m[i].what, c->m[i].bytes, dir, name);
	else
		n = asprintf(&body, "[Output left out of the request to save "
			     "context: %s gave %zu bytes. The whole text is "
			     "kept in the session's transcript; run the call "
			     "again if you need it.]", c->m[i].what,
			     c->m[i].bytes);
	if (n < 0)
		return NULL;
	o = cJSON_CreateObject();
	if (o && cJSON_AddStringToObject(o, "role", "tool") &&
	    cJSON_AddStringToObject(o, "tool_call_id", c->m[i].id) &&
	    cJSON_AddStringToObject(o, "content", body))
		line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	free(body);
	return line;
}

/* The text of tool result i, from what is sent. */
static char *
result_text(const struct chat *c, int i)
{
	cJSON *o = cJSON_ParseWithLength(c->msgs.data + c->m[i].off,
					 c->m[i].len);
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(o, "content");
	char *text = cJSON_IsString(content) ? strdup(content->valuestring)
					     : NULL;

	cJSON_Delete(o);
	return text;
}

/* Sends the messages of view[0..n) from now on, each as it was sent
 * before or, where text[i] is set, as text[i].  -1 when out of memory
 * (nothing changed). */
static int
rebuild(struct chat *c, const int *view, int n, char *const *text)
{
	struct buf out = BUF_INIT(0);
	size_t *off = malloc(((size_t)n + 1) * sizeof *off);
	int i, k;

	if (!off)
		return -1;
	for (k = 0; k < n; k++) {
		i = view[k];
		off[k] = out.len + (k > 0);
		if ((k && buf_putc(&out, ',') < 0) ||
		    buf_append(&out, text[i] ? text[i] :
			       c->msgs.data + c->m[i].off,
			       text[i] ? strlen(text[i]) : c->m[i].len) < 0) {
			buf_free(&out);
			free(off);
			return -1;
		}
	}
	for (i = 0; i < c->count; i++)
		c->m[i].off = (size_t)-1;
	for (k = 0; k < n; k++) {
		i = view[k];
		if (text[i]) {
			c->m[i].len = strlen(text[i]);
			/* another text: its Messages form too */
			c->m[i].wire[0] = c->m[i].wire[1] = 0;
		}
		c->m[i].off = off[k];
	}
	if (view != c->view)
		memcpy(c->view, view, (size_t)n * sizeof *view);
	c->nview = n;
	free(off);
	buf_free(&c->msgs);
	c->msgs = out;
	c->dirty = 1;
	return 0;
}

/* A request is about to be made (or was, before the answer now added):
 * when the estimate passes the budget, old tool results are left out.
 * -1 when out of memory. */
static int
budget_point(struct chat *c)
{
	const struct chat_budget *b = &c->budget;
	double at = b->window * b->stub_at;
	size_t most = (size_t)(b->keep_share * (double)b->window *
			       CHAT_BYTES_PER_TOKEN), keptb = 0;
	char **stub;
	int i, k, kept = 0, any = 0, rc = -1;

	if (b->stub_cap > 0 && at > (double)b->stub_cap)
		at = (double)b->stub_cap;
	if (!b->window || chat_estimate(c) <= (long)at)
		return 0;
	stub = calloc((size_t)c->count + 1, sizeof *stub);
	if (!stub)
		return -1;
	for (k = c->nview - 1; k >= 0; k--) {
		const struct chat_msg *m = &c->m[c->view[k]];
		size_t whole = m->stubbed ? 0 : m->bytes;
		char *text;

		i = c->view[k];
		if (!m->id) /* not a tool result */
			continue;
		/* the newest results go whole: the newest always, the
		 * ones before it while all of them fit in keep_share of
		 * the window; none older than the first one left out */
		if (kept < b->keep &&
		    (!kept || !most || keptb + whole <= most)) {
			kept++;
			keptb += whole;
			continue;
		}
		kept = b->keep;
		if (m->stubbed || m->bytes < b->stub_min)
			continue;
		text = result_text(c, i);
		if (!text)
			continue; /* content other than text: sent whole */
		stub[i] = stub_message(c, i, text);
		free(text);
		if (!stub[i])
			goto out;
		any = 1;
	}
	if (any && rebuild(c, c->view, c->nview, stub) < 0)
		goto out;
	for (i = 0; i < c->count; i++)
		if (stub[i]) {
			c->m[i].stubbed = 1;
			c->stubs++;
		}
	rc = 0;
out:
	for (i = 0; i < c->count; i++)
		free(stub[i]);
	free(stub);
	return rc;
}

/* Message i, just added, is a compaction entry keeping keep messages:
 * from now on the request is the system messages it began with, the
 * user's own messages among those it stands for (within user_max bytes,
 * see compact_users; none when user_max < 0: an entry older than that),
 * the entry (the summary), the last keep messages sent before it (more
 * when they would begin with a tool result, whose call must go with it),
 * and what comes after. */
static int
compact_point(struct chat *c, int i, long keep, long user_max, char *line)
{
	char **text = calloc((size_t)c->count, sizeof *text);
	int *view = malloc(((size_t)c->nview + 1) * sizeof *view);
	char *said = malloc((size_t)c->nview + 1);
	int lead = 0, from, n = 0, k, left, rc = -1;
	size_t left_bytes;

	if (!text || !view || !said)
		goto out;
	while (lead < c->nview && c->m[c->view[lead]].role == 's')
		lead++;
	from = keep < c->nview - lead ? c->nview - (int)keep : lead;
	while (from > lead && c->m[c->view[from]].role == 't')
		from--;
	if (user_max >= 0)
		compact_users(c, (int)(c->nview - from), (size_t)user_max,
			      said, &left, &left_bytes);
	else
		memset(said, 0, (size_t)c->nview);
	for (k = 0; k < lead; k++)
		view[n++] = c->view[k];
	for (k = lead; k < from; k++)
		if (said[k])
			view[n++] = c->view[k];
	view[n++] = i;
	for (k = from; k < c->nview; k++)
		view[n++] = c->view[k];
	text[i] = line;
	rc = rebuild(c, view, n, text);
	if (rc == 0) {
		c->compactions++;
		c->compacted = i;
	}
out:
	free(said);
	free(text);
	free(view);
	return rc;
}

/* What a call was, for a stub: its name and its arguments, cut. */
static char *
call_what(const cJSON *call)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
	char *text;
	const char *a = call_arguments_text(call, "", &text);
	size_t n;
	char *what = NULL;

	if (!a)
		return NULL;
	n = utf8_floor(a, strlen(a), 200);
	if (asprintf(&what, "the call %s %.*s%s", cJSON_IsString(name) ?
		     name->valuestring : "(unnamed)", (int)n, a,
		     n < strlen(a) ? "..." : "") < 0)
		what = NULL;
	free(text);
	return what;
}

/* Records message count-1 (just appended at off, n bytes long). */
static int
note_message(struct chat *c, const cJSON *msg, const char *role,
	     const cJSON *call, size_t off, size_t n)
{
	struct chat_msg *m;
	const cJSON *u, *pt, *content;

	if ((size_t)c->count >= c->capm) {
		size_t cap = c->capm ? 2 * c->capm : 64;
		void *p = realloc(c->m, cap * sizeof *c->m);
		void *v;

		if (!p)
			return -1;
		c->m = p;
		v = realloc(c->view, cap * sizeof *c->view);
		if (!v)
			return -1;
		c->view = v;
		c->capm = cap;
	}
	m = &c->m[c->count];
	memset(m, 0, sizeof *m);
	m->off = off;
	m->len = n;
	m->prompt = -1;
	m->role = !strcmp(role, "system") || !strcmp(role, "developer") ? 's'
		  : role[0];
	/* the user's own words: the first user message (the task), and
	 * those the harness marked as the user's (the follow-ups); never a
	 * compaction entry */
	if (m->role == 'u' &&
	    !cJSON_GetObjectItemCaseSensitive(msg, "compaction")) {
		const cJSON *from = cJSON_GetObjectItemCaseSensitive(msg, "from");
		int k = 0;

		while (k < c->count && c->m[k].role == 's')
			k++;
		m->said = k == c->count ||
			  (cJSON_IsString(from) && !strcmp(from->valuestring,
							   "user"));
	}
	if (!strcmp(role, "assistant")) {
		u = cJSON_GetObjectItemCaseSensitive(msg, "usage");
		c->tokens += usage_tokens(u);
		pt = cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens");
		if (cJSON_IsNumber(pt) && pt->valuedouble >= 0 &&
		    pt->valuedouble < 1e12) {
			m->prompt = (long)pt->valuedouble;
			m->point = off ? off - 1 : 0;
		}
	} else if (!strcmp(role, "tool") && call) {
		content = cJSON_GetObjectItemCaseSensitive(msg, "content");
		m->bytes = cJSON_IsString(content) ?
			   strlen(content->valuestring) : 0;
		m->id = strdup(call_id(call));
		m->what = call_what(call);
		if (!m->id || !m->what) {
			free(m->id);
			free(m->what);
			return -1;
		}
	}
	return 0;
}

/* The "keep" of a user message's "compaction" member, or -1 when it is
 * not a compaction entry; *user_max its "user_bytes", or -1 without. */
static long
compaction_keep(const cJSON *msg, const char *role, long *user_max)
{
	const cJSON *cm = cJSON_GetObjectItemCaseSensitive(msg, "compaction");
	const cJSON *keep = cJSON_GetObjectItemCaseSensitive(cm, "keep");
	const cJSON *ub = cJSON_GetObjectItemCaseSensitive(cm, "user_bytes");

	*user_max = cJSON_IsNumber(ub) && ub->valuedouble >= 0 &&
		    ub->valuedouble <= 1e12 ? (long)ub->valuedouble : -1;
	if (strcmp(role, "user") || !cJSON_IsNumber(keep) ||
	    keep->valuedouble < 0 || keep->valuedouble > 1e9)
		return -1;
	return (long)keep->valuedouble;
}

int
chat_add(struct chat *c, const cJSON *msg, unsigned long line,
	 struct ah_error *err)
{
	const char *role = role_of(msg);
	const cJSON *id, *call = NULL;
	char *s;
	cJSON *o;
	size_t off;
	long keep, user_max;
	int bad = 0, i = 0, rc;

	if (!role || (strcmp(role, "system") && strcmp(role, "developer") &&
		      strcmp(role, "user") && strcmp(role, "assistant") &&
		      strcmp(role, "tool")))
		return ah_fail(err, AH_EFORMAT, "line %lu: a message needs a "
			       "role of system, user, assistant or tool", line);
	if (!strcmp(role, "tool")) {
		id = cJSON_GetObjectItemCaseSensitive(msg, "tool_call_id");
		for (i = 0; i < c->calls.n && cJSON_IsString(id); i++)
			if (!c->calls.done[i] &&
			    !strcmp(call_id(cJSON_GetArrayItem(c->calls.list, i)),
				    id->valuestring))
				break;
		if (!cJSON_IsString(id) || i == c->calls.n)
			return ah_fail(err, AH_EFORMAT, "line %lu: a tool result "
				       "for '%.100s', which no tool call of the "
				       "last assistant message waits for",
				       line, cJSON_IsString(id) ?
				       id->valuestring : "");
	} else if (calls_pending(&c->calls)) {
		for (i = 0; c->calls.done[i]; i++)
			;
		return ah_fail(err, AH_EFORMAT, "line %lu: the tool call "
			       "'%.100s' of line %lu has no result before this "
			       "message", line,
			       call_id(cJSON_GetArrayItem(c->calls.list, i)),
			       c->calls_line);
	}
	if (!strcmp(role, "tool"))
		call = cJSON_GetArrayItem(c->calls.list, i);
	else if (!strcmp(role, "assistant") && budget_point(c) < 0)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	if (calls_feed(&c->calls, msg) < 0)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	if (!strcmp(role, "assistant"))
		c->calls_line = line;
	o = clean_message(msg, role, c->api, &bad);
	if (!o)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	if (bad) {
		cJSON_Delete(o);
		return ah_fail(err, AH_EFORMAT, "line %lu: a tool call without "
			       "a function name", line);
	}
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	keep = compaction_keep(msg, role, &user_max);
	if (keep >= 0) {
		rc = note_message(c, msg, role, call, (size_t)-1, strlen(s)) < 0;
		if (!rc) {
			c->count++;
			if (compact_point(c, c->count - 1, keep, user_max, s) < 0)
				rc = 1;
		}
	} else {
		rc = (c->nview && buf_putc(&c->msgs, ',') < 0);
		off = c->msgs.len;
		rc = rc || buf_append(&c->msgs, s, strlen(s)) < 0 ||
		     note_message(c, msg, role, call, off, strlen(s)) < 0;
		if (!rc) {
			c->view[c->nview++] = c->count;
			c->count++;
		}
	}
	free(s);
	if (rc)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	c->last_assistant = !strcmp(role, "assistant");
	c->dirty = 1;
	return 0;
}

int
chat_ready(const struct chat *c)
{
	return c->count && !c->last_assistant && !calls_pending(&c->calls);
}

int
chat_prepare(struct chat *c)
{
	return budget_point(c);
}

int
chat_text_role(const char *role)
{
	static const char *const roles[] = { "system", "developer", "user",
					     "assistant" };
	size_t i;

	for (i = 0; i < sizeof roles / sizeof roles[0]; i++)
		if (!strcmp(role, roles[i]))
			return 1;
	return 0;
}

char *
chat_text_message(const char *role, const char *text, size_t n,
		  size_t *outlen, struct ah_error *err)
{
	cJSON *o;
	char *clean, *line = NULL;

	if (!chat_text_role(role)) {
		ah_fail(err, AH_EFORMAT,
			"cannot make a '%s' message of text: the role must be "
			"system, developer, user or assistant", role);
		return NULL;
	}
	clean = utf8_sanitize(text, n, UTF8_REPLACE_NUL, NULL);
	o = cJSON_CreateObject();
	if (clean && o && cJSON_AddStringToObject(o, "role", role) &&
	    cJSON_AddStringToObject(o, "content", clean))
		line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	free(clean);
	if (!line) {
		ah_fail(err, AH_ENOMEM, "cannot make a message: out of memory");
		return NULL;
	}
	if (outlen)
		*outlen = strlen(line);
	return line;
}

int
chat_answer_text(const cJSON *msg, struct buf *out)
{
	const char *role = role_of(msg);
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
	const cJSON *refusal = cJSON_GetObjectItemCaseSensitive(msg, "refusal");
	const cJSON *part, *type, *text;

	if (!role || strcmp(role, "assistant") ||
	    (cJSON_IsArray(tc) && tc->child))
		return 0;
	/* a refusal with no text is what the model said */
	if ((!cJSON_IsString(content) || !content->valuestring[0]) &&
	    cJSON_IsString(refusal) && refusal->valuestring[0])
		content = refusal;
	if (cJSON_IsString(content))
		return buf_append(out, content->valuestring,
				  strlen(content->valuestring)) < 0 ? -1 : 1;
	if (!cJSON_IsArray(content))
		return 1;
	cJSON_ArrayForEach(part, content) {
		type = cJSON_GetObjectItemCaseSensitive(part, "type");
		text = cJSON_GetObjectItemCaseSensitive(part, "text");
		if (cJSON_IsString(type) && !strcmp(type->valuestring, "text") &&
		    cJSON_IsString(text) &&
		    buf_append(out, text->valuestring,
			       strlen(text->valuestring)) < 0)
			return -1;
	}
	return 1;
}
