/* Unit tests of lib/shsplit.c: each line a command and what it splits to. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tap.h"

static const struct {
	const char *cmd, *want; /* want: commands as compact JSON, then !complex */
} cases[] = {
	{ "ls -la", "[[\"ls\",\"-la\"]]" },
	{ "git status && rm -rf x", "[[\"git\",\"status\"],[\"rm\",\"-rf\",\"x\"]]" },
	{ "git status; rm x", "[[\"git\",\"status\"],[\"rm\",\"x\"]]" },
	{ "git status || rm x", "[[\"git\",\"status\"],[\"rm\",\"x\"]]" },
	{ "a | b |& c & d", "[[\"a\"],[\"b\"],[\"c\"],[\"d\"]]" },
	{ "git status\nrm x", "[[\"git\",\"status\"],[\"rm\",\"x\"]]" },
	{ "git status $(rm x)", "[[\"rm\",\"x\"],[\"git\",\"status\",\"$\"]]" },
	{ "git status `rm x`", "[[\"rm\",\"x\"],[\"git\",\"status\",\"$\"]]" },
	{ "diff <(rm x) y", "[[\"rm\",\"x\"],[\"diff\",\"y\"]]" },
	{ "{ rm x; }", "[[\"rm\",\"x\"]]" },
	{ "(cd a && rm x)", "[[\"cd\",\"a\"],[\"rm\",\"x\"]]" },
	{ "echo \"a $(rm x) b\"", "[[\"rm\",\"x\"],[\"echo\",\"a $ b\"]]" },
	{ "echo 'a; rm x' \"b && c\"", "[[\"echo\",\"a; rm x\",\"b && c\"]]" },
	{ "FOO=1 BAR=2 git status", "[[\"git\",\"status\"]]" },
	{ "make >out.log 2>&1", "[[\"make\"]]" },
	{ "echo hi > /etc/passwd", "[[\"echo\",\"hi\"]]" },
	{ "a\\ b c", "[[\"a b\",\"c\"]]" },
	{ "ls # ; rm x", "[[\"ls\"]]" },
	{ "! grep x f", "[[\"grep\",\"x\",\"f\"]]" },
};

static const char *const complex_cases[] = {
	"echo 'unterminated", "echo \"open", "cat <<EOF\nrm x\nEOF",
	"echo $((1+2))", "if true; then rm x; fi", "for f in *; do rm $f; done",
	":(){ :|:& };:", "$CMD x", "`echo rm` x", "(rm x", "rm x)",
	"while true; do :; done", "case x in y) rm z;; esac", "f() { rm x; }",
};

int
main(void)
{
	size_t i;

	for (i = 0; i < sizeof cases / sizeof *cases; i++) {
		cJSON *o = shell_split(cases[i].cmd);
		char *got = cJSON_PrintUnformatted(
			cJSON_GetObjectItem(o, "commands"));

		char desc[128], *nl;

		snprintf(desc, sizeof desc, "%s", cases[i].cmd);
		while ((nl = strchr(desc, '\n')))
			*nl = ' ';
		ok(got && !strcmp(got, cases[i].want) &&
		   cJSON_IsFalse(cJSON_GetObjectItem(o, "complex")),
		   "split: %s", desc);
		if (got && strcmp(got, cases[i].want))
			printf("#   got %s\n#  want %s\n", got, cases[i].want);
		free(got);
		cJSON_Delete(o);
	}
	for (i = 0; i < sizeof complex_cases / sizeof *complex_cases; i++) {
		cJSON *o = shell_split(complex_cases[i]);

		char desc[128], *nl;

		snprintf(desc, sizeof desc, "%s", complex_cases[i]);
		while ((nl = strchr(desc, '\n')))
			*nl = ' ';
		ok(o && cJSON_IsTrue(cJSON_GetObjectItem(o, "complex")),
		   "complex: %s", desc);
		cJSON_Delete(o);
	}
	{
		cJSON *o = shell_split("echo hi > /etc/passwd; cat < in 2> err");
		char *r = cJSON_PrintUnformatted(cJSON_GetObjectItem(o, "redirects"));

		ok(r && !strcmp(r, "[\"/etc/passwd\",\"in\",\"err\"]"),
		   "redirect targets: %s", r);
		free(r);
		cJSON_Delete(o);
	}
	{
		/* deep nesting stops, marked complex, without crashing */
		char deep[4096];
		size_t k;

		for (k = 0; k < 1000; k++)
			memcpy(deep + 2 * k, "$(", 2);
		deep[2000] = '\0';
		cJSON *o = shell_split(deep);

		ok(o && cJSON_IsTrue(cJSON_GetObjectItem(o, "complex")),
		   "1000 nested $( is complex, not a crash");
		cJSON_Delete(o);
	}
	return tap_done();
}
