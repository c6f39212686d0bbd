/* compact.c: compaction, the summary that replaces the start of a chat.
 *
 * A compaction entry is a user message with a "compaction" member; the
 * transcript keeps it after everything it summarises, and chat_add builds
 * what is sent from it (see chat.c): nothing is ever removed from disk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "priv.h"

static const char default_prompt[] =
	"Stop here and write a summary of this conversation so far, for "
	"yourself: the messages above will be replaced by it, and you will "
	"go on from it alone, with the newest few messages that follow it. "
	"Call no tool. Keep every fact that matters to finish the work:\n"
	"1. The user's task, in the user's own words, and every later "
	"instruction or correction the user gave.\n"
	"2. Decisions made and the reason for each.\n"
	"3. Files read, created and changed, with what matters in each "
	"(names, functions, line numbers where useful).\n"
	"4. Commands run and their outcome: what passed, what failed and "
	"the error messages, and what was tried that did not work.\n"
	"5. What remains to be done, and the next step.\n"
	"Write plain text, as short as it can be without losing any of the "
	"above. Do not repeat the todo list: it is kept as it is.";

const char *
compact_default_prompt(void)
{
	return default_prompt;
}

int
compact_keep(const struct chat *c, size_t keep_bytes)
{
	size_t bytes = 0;
	int lead = 0, from = c->nview;

	while (lead < c->nview && c->m[c->view[lead]].role == 's')
		lead++;
	/* the newest messages, up to keep_bytes, at least the last one */
	while (from > lead &&
	       (from == c->nview ||
		bytes + c->m[c->view[from - 1]].len <= keep_bytes)) {
		from--;
		bytes += c->m[c->view[from]].len + 1;
	}
	/* a tool result goes with the call before it */
	while (from > lead && c->m[c->view[from]].role == 't')
		from--;
	/* something must be left to summarise, other than an earlier
	 * summary alone */
	if (from - lead < 1 ||
	    (from - lead == 1 && c->view[lead] == c->compacted))
		return -1;
	return c->nview - from;
}

char *
compact_request(const struct chat *c, int keep, const char *prompt,
		size_t *len)
{
	struct buf b = BUF_INIT(0);
	char *line;
	size_t n;
	int k;

	for (k = 0; k < c->nview - keep; k++) {
		const struct chat_msg *m = &c->m[c->view[k]];

		if (buf_append(&b, c->msgs.data + m->off, m->len) < 0 ||
		    buf_putc(&b, '\n') < 0)
			goto fail;
	}
	line = chat_text_message("user", prompt, strlen(prompt), &n, NULL);
	if (!line)
		goto fail;
	if (buf_append(&b, line, n) < 0 || buf_putc(&b, '\n') < 0) {
		free(line);
		goto fail;
	}
	free(line);
	return buf_detach(&b, len);
fail:
	buf_free(&b);
	return NULL;
}

char *
compact_entry(const struct chat *c, int keep, size_t before,
	      const char *summary, const char *todos)
{
	struct buf text = BUF_INIT(0);
	cJSON *o = cJSON_CreateObject(), *cm;

	char when[32], *line = NULL;
	time_t now = time(NULL);
	struct tm tm;
	size_t after = 0;
	int k, summarised = 0;

	for (k = 0; k < c->nview; k++) {
		const struct chat_msg *m = &c->m[c->view[k]];

		if (k < c->nview - keep && m->role != 's')
			summarised++;
		else
			after += m->len + 1;
	}
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ",
		 gmtime_r(&now, &tm));
	if (buf_printf(&text, "This conversation was compacted to save "
		       "context: the %d messages before the newest %d were "
		       "replaced by this summary of them (the session's "
		       "transcript on disk still has them all).\n\n%s",
		       summarised, keep, summary) < 0 ||
	    (todos && buf_printf(&text, "\n\nThe todo list as it is now, "
				 "from todo.json (data kept by the harness, "
				 "not an instruction):\n%s", todos) < 0))
		goto out;
	if (!o || !cJSON_AddStringToObject(o, "role", "user") ||
	    !cJSON_AddStringToObject(o, "content", text.data))
		goto out;
	cm = cJSON_CreateObject();
	if (!cm || !cJSON_AddItemToObject(o, "compaction", cm)) {
		cJSON_Delete(cm);
		goto out;
	}
	after += text.len + 200; /* the entry, as it is sent */
	if (!cJSON_AddNumberToObject(cm, "keep", keep) ||
	    !cJSON_AddNumberToObject(cm, "summarised", summarised) ||
	    !cJSON_AddNumberToObject(cm, "bytes_before", (double)before) ||
	    !cJSON_AddNumberToObject(cm, "bytes_after", (double)after) ||
	    !cJSON_AddStringToObject(cm, "time", when))
		goto out;
	line = cJSON_PrintUnformatted(o);
out:
	cJSON_Delete(o);
	buf_free(&text);
	return line;
}
