// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The tools' option tables made into getopt_long()'s tables and into the
 * option list of --help (<evring/cli-options.h>).
 */
#include <assert.h>
#include <stdbool.h>
#include <string.h>

#include <evring/cli-options.h>

/* Names wider than this put their help on the next line, so the column stays near. */
#define NAMES_MAX 27

static bool has_short(const struct evr_cli_option *o)
{
	return o->val > 0 && o->val < EVR_CLI_LONG_ONLY;
}

/* Another name of the row above: same value, no help of its own. */
static bool is_alias(const struct evr_cli_option *opts, size_t i)
{
	return i > 0 && !opts[i].help && opts[i].val == opts[i - 1].val;
}

void evr_cli_getopt_init(struct evr_cli_getopt *g, const char *mode,
			 const struct evr_cli_option *opts)
{
	size_t n = 0, len = strlen(mode);

	assert(len < 8);
	memcpy(g->shortopts, mode, len);
	for (; opts[n].name && n < EVR_CLI_MAX_OPTIONS; n++) {
		const struct evr_cli_option *o = &opts[n];

		g->longopts[n] = (struct option){ o->name, o->has_arg, NULL, o->val };
		/* An alias's letter is there already. */
		if (!has_short(o) || memchr(g->shortopts, o->val, len))
			continue;
		g->shortopts[len++] = (char)o->val;
		if (o->has_arg != no_argument)
			g->shortopts[len++] = ':';
		if (o->has_arg == optional_argument)
			g->shortopts[len++] = ':';
	}
	assert(!opts[n].name);
	g->longopts[n] = (struct option){ 0 };
	g->shortopts[len] = '\0';
	g->longindex = -1;
	g->opt[0] = '\0';
	opterr = 0;
}

int evr_cli_getopt(struct evr_cli_getopt *g, int argc, char **argv)
{
	int c;

	g->longindex = -1;
	c = getopt_long(argc, argv, g->shortopts, g->longopts, &g->longindex);
	if (g->longindex >= 0)
		snprintf(g->opt, sizeof(g->opt), "--%s", g->longopts[g->longindex].name);
	else if (c > 0 && c < EVR_CLI_LONG_ONLY)
		snprintf(g->opt, sizeof(g->opt), "-%c", c);
	else
		g->opt[0] = '\0';
	return c;
}

/* Row @i's names with its aliases' ("-p, --pid, --process-id PID") into @buf. */
static size_t format_names(const struct evr_cli_option *opts, size_t i, bool indent_short,
			   char *buf, size_t len)
{
	const struct evr_cli_option *o = &opts[i];
	size_t n;

	if (has_short(o))
		n = (size_t)snprintf(buf, len, "  -%c, --%s", o->val, o->name);
	else
		n = (size_t)snprintf(buf, len, "  %s--%s", indent_short ? "    " : "", o->name);
	for (size_t k = i + 1; opts[k].name && is_alias(opts, k) && n < len; k++)
		n += (size_t)snprintf(buf + n, len - n, ", --%s", opts[k].name);
	if (o->metavar && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
				      o->has_arg == optional_argument ? "" : " ", o->metavar);
	return n < len ? n : len - 1;
}

void evr_cli_options_print(FILE *f, const struct evr_cli_option *opts)
{
	bool indent_short = false;
	size_t col = 0;
	char names[160];

	for (size_t i = 0; opts[i].name; i++)
		indent_short |= has_short(&opts[i]);
	/* One column for every help text: after the widest names that fit in NAMES_MAX. */
	for (size_t i = 0; opts[i].name; i++) {
		size_t n;

		if (!opts[i].help)
			continue;
		n = format_names(opts, i, indent_short, names, sizeof(names));
		if (n <= NAMES_MAX && n > col)
			col = n;
	}
	col += 2;
	for (size_t i = 0; opts[i].name; i++) {
		const char *line = opts[i].help;
		size_t n;

		if (!line)
			continue;
		n = format_names(opts, i, indent_short, names, sizeof(names));
		fputs(names, f);
		if (n + 2 > col)
			fprintf(f, "\n%*s", (int)col, "");
		else
			fprintf(f, "%*s", (int)(col - n), "");
		for (;;) {
			size_t k = strcspn(line, "\n");

			fprintf(f, "%.*s\n", (int)k, line);
			if (!line[k] || !line[k + 1])
				break;
			line += k + 1;
			fprintf(f, "%*s", (int)col, "");
		}
	}
}

void evr_cli_usage(FILE *f, const char *head, const struct evr_cli_option *opts,
		   const char *tail)
{
	fputs(head, f);
	evr_cli_options_print(f, opts);
	fputs(tail, f);
}
