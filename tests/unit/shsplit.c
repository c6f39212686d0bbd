/* Unit tests of lib/shsplit.c: each line a command and what it splits to. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tap.h"

static const struct {
	const char *cmd, *want; /* want: commands as compact JSON */
	int complex;            /* outside the grammar: what the lenient
				 * reader lists, for the deny rules */
} cases[] = {
	{ "ls -la", "[[\"ls\",\"-la\"]]", 0 },
	{ "git status && rm -rf x", "[[\"git\",\"status\"],[\"rm\",\"-rf\",\"x\"]]", 0 },
	{ "git status; rm x", "[[\"git\",\"status\"],[\"rm\",\"x\"]]", 0 },
	{ "git status || rm x", "[[\"git\",\"status\"],[\"rm\",\"x\"]]", 0 },
	{ "a | b |& c & d", "[[\"a\"],[\"b\"],[\"c\"],[\"d\"]]", 1 },
	{ "git status\nrm x", "[[\"git\",\"status\"],[\"rm\",\"x\"]]", 0 },
	{ "git status $(rm x)", "[[\"rm\",\"x\"],[\"git\",\"status\",\"$\"]]", 0 },
	{ "git status `rm x`", "[[\"rm\",\"x\"],[\"git\",\"status\",\"$\"]]", 1 },
	{ "diff <(rm x) y", "[[\"rm\",\"x\"],[\"diff\",\"y\"]]", 1 },
	{ "{ rm x; }", "[[\"rm\",\"x\"]]", 1 },
	{ "(cd a && rm x)", "[[\"cd\",\"a\"],[\"rm\",\"x\"]]", 1 },
	{ "echo \"a $(rm x) b\"", "[[\"rm\",\"x\"],[\"echo\",\"a $ b\"]]", 0 },
	{ "echo 'a; rm x' \"b && c\"", "[[\"echo\",\"a; rm x\",\"b && c\"]]", 0 },
	/* assignments stay visible; the command they apply to follows */
	{ "FOO=1 BAR=2 git status",
	  "[[\"FOO=1\",\"BAR=2\",\"git\",\"status\"],[\"git\",\"status\"]]", 1 },
	{ "PATH=/tmp/x; git status", "[[\"PATH=/tmp/x\"],[\"git\",\"status\"]]", 1 },
	/* wrappers: the command each runs is listed too */
	{ "command sudo ls", "[[\"command\",\"sudo\",\"ls\"],[\"sudo\",\"ls\"],[\"ls\"]]", 0 },
	{ "env -i A=1 -u B sudo -u root id",
	  "[[\"env\",\"-i\",\"A=1\",\"-u\",\"B\",\"sudo\",\"-u\",\"root\",\"id\"],"
	  "[\"sudo\",\"-u\",\"root\",\"id\"],[\"id\"]]", 1 },
	{ "timeout -s KILL 5 rm x", "[[\"timeout\",\"-s\",\"KILL\",\"5\",\"rm\",\"x\"],[\"rm\",\"x\"]]", 0 },
	{ "nice -n 5 nohup stdbuf -oL x", "[[\"nice\",\"-n\",\"5\",\"nohup\",\"stdbuf\",\"-oL\",\"x\"],"
	  "[\"nohup\",\"stdbuf\",\"-oL\",\"x\"],[\"stdbuf\",\"-oL\",\"x\"],[\"x\"]]", 0 },
	{ "xargs -0 -n1 rm", "[[\"xargs\",\"-0\",\"-n1\",\"rm\"],[\"rm\"]]", 0 },
	{ "busybox sh", "[[\"busybox\",\"sh\"],[\"sh\"]]", 0 },
	{ "command -v sudo", "[[\"command\",\"-v\",\"sudo\"]]", 0 },
	{ "bash -c 'rm x'", "[[\"bash\",\"-c\",\"rm x\"],[\"rm\",\"x\"]]", 0 },
	/* nested escaped backquotes are unescaped, as bash does */
	{ "ls `ls \\`rm x\\``", "[[\"rm\",\"x\"],[\"ls\",\"$\"],[\"ls\",\"$\"]]", 1 },
	{ "echo \"a\\b \\$x\"", "[[\"echo\",\"a\\\\b $x\"]]", 0 },
	{ "echo $HOME ${HOME} ${#x} $1 $@", "[[\"echo\",\"$HOME\",\"${HOME}\",\"${#x}\",\"$1\",\"$@\"]]", 0 },
	{ "make >out.log 2>&1", "[[\"make\"]]", 0 },
	{ "echo hi > /etc/passwd", "[[\"echo\",\"hi\"]]", 0 },
	{ "a\\ b c", "[[\"a b\",\"c\"]]", 0 },
	{ "ls # ; rm x", "[[\"ls\"]]", 0 },
	{ "grep x <<< \"$(rm x)\"", "[[\"rm\",\"x\"],[\"grep\",\"x\"]]", 1 },
	{ "! grep x f", "[[\"grep\",\"x\",\"f\"]]", 1 },
	/* backslash-newline is joined first, as bash does */
	{ "git status \"$\\\n(rm x)\"", "[[\"rm\",\"x\"],[\"git\",\"status\",\"$\"]]", 1 },
	{ "git log \\\n --oneline", "[[\"git\",\"log\",\"--oneline\"]]", 0 },
	/* wrapper long options by abbreviation; more wrappers */
	{ "timeout --sig KILL 5 rm x", "[[\"timeout\",\"--sig\",\"KILL\",\"5\",\"rm\",\"x\"],[\"rm\",\"x\"]]", 0 },
	{ "flock f rm x", "[[\"flock\",\"f\",\"rm\",\"x\"],[\"rm\",\"x\"]]", 0 },
	{ "find . -exec rm {} \\;", "[[\"find\",\".\",\"-exec\",\"rm\",\"{}\",\";\"],[\"rm\",\"{}\"]]", 0 },
	/* a backslash-newline stays in single quotes; a comment ends at
	 * the newline, backslash or not (bash does not continue it) */
	{ "echo 'a\\\nb'", "[[\"echo\",\"a\\\\\\nb\"]]", 0 },
	{ "ls # x \\\nrm x", "[[\"ls\"],[\"rm\",\"x\"]]", 0 },
	/* the grammar: lower-case assignments, the locale's, wrappers */
	{ "a=1 LC_ALL=C git status", "[[\"a=1\",\"LC_ALL=C\",\"git\",\"status\"],[\"git\",\"status\"]]", 0 },
	{ "xargs -0", "[[\"xargs\",\"-0\"],[\"echo\"]]", 0 },
	{ "rm -rf ~ ~/x HEAD~1; exit 3", "[[\"rm\",\"-rf\",\"~\",\"~/x\",\"HEAD~1\"],[\"exit\",\"3\"]]", 0 },
	{ "git log \\\n --oneline 2>&1 >/dev/null | head -n 3 # c",
	  "[[\"git\",\"log\",\"--oneline\"],[\"head\",\"-n\",\"3\"]]", 0 },
};

static const char *const complex_cases[] = {
	"echo 'unterminated", "echo \"open", "cat <<EOF\nrm x\nEOF",
	"echo $((1+2))", "if true; then rm x; fi", "for f in *; do rm $f; done",
	":(){ :|:& };:", "$CMD x", "`echo rm` x", "(rm x", "rm x)",
	"while true; do :; done", "case x in y) rm z;; esac", "f() { rm x; }",
	/* control characters: \r is no blank to bash */
	"ls \r#; rm x", "ls\033[2K", "echo \x7f",
	/* expansions that may run code */
	"echo ${x@P}", "echo ${!x}", "echo ${a[$(rm x)]}", "echo ${a['$(rm x)']}",
	"echo $[1+2]", "((x=1))", "echo ${x:$(rm x)}", "echo ${x:-y}",
	"printf -v 'a[$(rm x)]' x", "test -v 'a[$(rm x)]'", "[ -v 'a[$(rm x)]' ]",
	"read 'a[$(rm x)]'", "declare 'a[$(rm x)]=1'", "declare -n r=x",
	"typeset -i n", "RANDOM='a[$(rm x)]' ls", "a=([x]=1)", "let x=1",
	"eval ls", "trap 'rm x' EXIT", "echo $'\\x73udo'", "echo {/,x}",
	"f () { rm x; }", "env -S 'rm x'", "env $X ls", "bash -c \"$X\"",
	"printf -v RANDOM 1",
	/* the last argument, a file's text */
	"echo $_", "echo ${_}", "echo $(<f)", "echo $( < f)",
	/* unknown or ambiguous wrapper options; runners */
	"timeout --bogus 5 rm x", "env --i rm x", "watch rm x", "script -c 'rm x'",
	"ssh host rm x", "$'\\x73udo' id",
	/* issue 29: the tables, and what the grammar does not know */
	"git status <(git status)#; touch p", "git log <&---output=out",
	"sed <& --i s/a/b/ f", "find d <& --delete", "sort <& --oout f",
	"git <&--c core.fsmonitor='touch p' status",
	"git status >&'x$(touch p)'", "echo >&'x$(touch p)'",
	"declare -a 'a=($(touch p))'", "declare 'BASH_CMDS=(ls /usr/bin/touch)'; ls p",
	"BASH_ALIASES[ls]=touch; ls p", "time ! sudo id", "time { rm -rf /; }",
	"time A=1 rm -rf /", "{x}>/dev/null sudo id", "rm &>/dev/null -rf /",
	"cat <(ls)#; sudo id", "curl x | time ! sh", "env 'a-=' sudo id",
	"env -- - awk", "flock f -c 'rm -rf /'", "mapfile -C 'touch p' -c 1 <f",
	"readarray -C 'touch p' -c 1 <f", "PS4='$(touch p)'; set -x",
	"shopt -s extglob; echo @(x)#; touch p", "'{' x", "'a'=b x", "'2'>x ls",
	"ls a#b", "ls ~x", "ls ~+", "ls *", "ls !x", "coproc ls", "ls &",
	"& ls", "ls |& cat",
	"ls >|f", "ls <>f", "ls 10>f", "ls > -f", "ls >$f", "ls >&f", "ls <&0",
	"echo ${#}", "echo $(( 1 ))", "echo \"`ls`\"", "echo \"!x\"", "ls; ;",
	"; ls", "ls &&", "ls |", "$(ls)", "echo $( )", "echo $(ls # c\n)",
	"PATH=. ls", "IFS=/ ls", "a+=1 ls", "POSIXLY_CORRECT=1 ls", "'time' ls",
	"source f", ". f", "exec ls", "eval ls", "set -x", "read x", "export a=1",
	"command -p ls", "printf -v x y", "test -v x", "xargs sh -c",
	"xargs -I{} sh -c {}", "find . -exec sh -c 'rm {}' \\;",
	"env GIT_PAGER=x git log", "kill 1", "builtin echo", "echo é",
	"ls\\\nx", "echo a \"b\\\nc\"",
	/* found by the differential test: bash -c reads a line starting
	 * with - or + as options; start-up files; vanishing arguments */
	"+x|mv", "-x", "bash -la -c 'touch p'", "sh -i", "bash --login -c ls",
	"bash --rcfile f -c ls", "env a=1 nice -n $x 5 ls", "timeout $t ls",
	/* a shell's -c string outside the grammar */
	"sh -c 'ls *'", "bash -c 'declare x'", "env bash -c 'ls &'",
};

/* With --filter: each line of stdin a JSON string, a command line; each
 * line of stdout what the splitter makes of it (tests/shdiff.py, the
 * differential test against bash, reads it). */
static int
filter(void)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = 0;

	while ((len = getline(&line, &cap, stdin)) > 0) {
		cJSON *in = cJSON_ParseWithLength(line, (size_t)len), *o;
		char *out;

		if (!cJSON_IsString(in)) {
			fprintf(stderr, "shsplit: not a JSON string: %s", line);
			cJSON_Delete(in);
			rc = 1;
			break;
		}
		o = shell_split(in->valuestring);
		out = o ? cJSON_PrintUnformatted(o) : NULL;
		if (!out) {
			fprintf(stderr, "shsplit: out of memory\n");
			rc = 1;
		} else
			printf("%s\n", out);
		free(out);
		cJSON_Delete(o);
		cJSON_Delete(in);
		if (rc)
			break;
		fflush(stdout);
	}
	free(line);
	if (fflush(stdout) || ferror(stdout))
		rc = 1;
	return rc;
}

int
main(int argc, char **argv)
{
	size_t i;

	if (argc > 1 && !strcmp(argv[1], "--filter"))
		return filter();

	for (i = 0; i < sizeof cases / sizeof *cases; i++) {
		cJSON *o = shell_split(cases[i].cmd);
		char *got = cJSON_PrintUnformatted(
			cJSON_GetObjectItem(o, "commands"));

		char desc[128], *nl;

		snprintf(desc, sizeof desc, "%s", cases[i].cmd);
		while ((nl = strchr(desc, '\n')))
			*nl = ' ';
		ok(got && !strcmp(got, cases[i].want) &&
		   cJSON_IsBool(cJSON_GetObjectItem(o, "complex")) &&
		   cJSON_IsTrue(cJSON_GetObjectItem(o, "complex")) ==
		   cases[i].complex,
		   "split%s: %s", cases[i].complex ? " (complex)" : "", desc);
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
		char *w = cJSON_PrintUnformatted(cJSON_GetObjectItem(o, "outputs"));

		ok(r && !strcmp(r, "[\"/etc/passwd\",\"in\",\"err\"]"),
		   "redirect targets: %s", r);
		ok(w && !strcmp(w, "[\"/etc/passwd\",\"err\"]"),
		   "output targets: %s", w);
		free(r);
		free(w);
		cJSON_Delete(o);
		o = shell_split("x >/dev/null 2>&1 >&- <>rw >|f >>g 3<&0");
		w = cJSON_PrintUnformatted(cJSON_GetObjectItem(o, "outputs"));
		ok(w && !strcmp(w, "[\"/dev/null\",\"&1\",\"&-\",\"rw\",\"f\",\"g\"]"),
		   "outputs: descriptors as &N: %s", w);
		free(w);
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
	{
		/* the lenient reader's bound: 32 levels of $( are followed
		 * (the deny rules see the sudo inside), the 33rd is not */
		static const struct {
			int levels;
			const char *first;
		} bound[] = { { 32, "sudo" }, { 33, "echo" } };
		char line[256];
		size_t k, b, n;

		for (b = 0; b < sizeof bound / sizeof *bound; b++) {
			n = (size_t)snprintf(line, sizeof line, "echo ");
			for (k = 0; k < (size_t)bound[b].levels; k++)
				n += (size_t)snprintf(line + n, sizeof line - n, "$(");
			n += (size_t)snprintf(line + n, sizeof line - n, "sudo id");
			for (k = 0; k < (size_t)bound[b].levels; k++)
				n += (size_t)snprintf(line + n, sizeof line - n, ")");
			cJSON *o = shell_split(line);
			cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(o,
				"commands"), 0);
			const char *f = cJSON_GetStringValue(cJSON_GetArrayItem(c, 0));

			ok(o && cJSON_IsTrue(cJSON_GetObjectItem(o, "complex")) &&
			   f && !strcmp(f, bound[b].first),
			   "%d nested $( of sudo id: the first command listed is %s",
			   bound[b].levels, bound[b].first);
			cJSON_Delete(o);
		}
	}
	{
		/* a complex line's words as the lenient reader reads them:
		 * a glob or a leading ~ is an expansion, as $x is */
		static const struct {
			const char *cmd;
			int literal;
		} lit[] = { { "ls x &", 1 }, { "ls ?x &", 0 }, { "ls *x &", 0 },
			    { "ls [a]x &", 0 }, { "ls ~ &", 0 }, { "ls ~/x &", 0 },
			    { "ls $x &", 0 }, { "ls a~ &", 1 } };
		size_t k;

		for (k = 0; k < sizeof lit / sizeof *lit; k++) {
			cJSON *o = shell_split(lit[k].cmd);

			ok(o && cJSON_IsTrue(cJSON_GetObjectItem(o, "complex")) &&
			   cJSON_IsTrue(cJSON_GetObjectItem(o, "literal")) ==
			   lit[k].literal, "complex, literal %s: %s",
			   lit[k].literal ? "true" : "false", lit[k].cmd);
			cJSON_Delete(o);
		}
	}
	return tap_done();
}
