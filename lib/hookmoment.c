/* hookmoment.c: the moments of an agent-run session whose hooks hook-cc
 * runs (hook-cc --add): the input of each event, and what agent-run
 * makes of the answer, the message for the model and the words it says.
 * See hook-cc(1), "Other events". */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

int
hook_moment_input(cJSON *in, int event, const char *arg, const char **subject)
{
	const char *key = NULL, *value = arg;

	*subject = "";
	switch (event) {
	case HOOK_SESSION_START:
		key = "source";
		*subject = arg;
		break;
	case HOOK_USER_PROMPT_SUBMIT:
		key = "prompt";
		break;
	case HOOK_STOP:
	case HOOK_SUBAGENT_STOP:
		return cJSON_AddBoolToObject(in, "stop_hook_active",
					     arg && *arg) ? 0 : -1;
	case HOOK_PRE_COMPACT:
		*subject = "auto";
		return cJSON_AddStringToObject(in, "trigger", "auto") &&
		       cJSON_AddStringToObject(in, "custom_instructions", "")
		       ? 0 : -1;
	case HOOK_SESSION_END:
		/* the run's exit status */
		key = "reason";
		value = !strcmp(arg, "0") ? "exit" : "other";
		break;
	default:
		return -1;
	}
	return cJSON_AddStringToObject(in, key, value) ? 0 : -1;
}

/* What the shell's $(...) leaves of text: no newline at its end. */
static size_t
chomped(const struct buf *b)
{
	size_t n = b->data ? b->len : 0;

	while (n && b->data[n - 1] == '\n')
		n--;
	return n;
}

int
hook_moment_answer(int event, const struct hook_answer *a, struct buf *add,
		   struct buf *say)
{
	const char *name = hooks_event_name(event);
	int deny = a->decision == DECIDE_DENY, blocked = 0, rc = 0;
	/* SessionStart cannot block: a block's reason is taken as context */
	const struct buf *said = deny ? &a->reason : &a->context;
	int n = (int)chomped(said);
	const char *text = n ? said->data : "";

	switch (event) {
	case HOOK_SESSION_START:
	case HOOK_USER_PROMPT_SUBMIT:
		if (deny && event == HOOK_USER_PROMPT_SUBMIT) {
			/* said on the terminal by agent-run: the hook's words
			 * may quote the task (and the stdin attached to it,
			 * a file's), so they are made safe for it as any
			 * diagnostic is (one line, no control acts) */
			char *safe = utf8_for_terminal(text, (size_t)n, 0,
						       NULL);

			blocked = 1;
			rc = safe ? buf_printf(say, "a %s hook blocked the "
					       "task: %s", name, safe) : -1;
			free(safe);
		} else if (n) {
			rc = buf_printf(add, "Context from a %s hook of the "
					"user's settings:\n%.*s", name, n, text);
		}
		break;
	case HOOK_STOP:
	case HOOK_SUBAGENT_STOP:
		if (deny) {
			blocked = 1;
			rc = buf_printf(add, "A %s hook of the user's settings "
					"did not let you stop yet. It says:\n"
					"%.*s", name, n, text);
			if (rc == 0)
				rc = buf_printf(say, "a %s hook did not let the "
						"model stop; asking it to go on",
						name);
		}
		break;
	default:
		/* PreCompact, SessionEnd: what they say is not read */
		break;
	}
	return rc < 0 ? -1 : blocked;
}
