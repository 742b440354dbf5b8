// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Provider specifications in the form dotnet-trace users already type:
 *
 *	Name[:KEYWORDS[:LEVEL[:key=value;key2="quoted;value"]]],Name2,...
 *
 * A session is configured with a list of these. This header also holds the
 * EventPipe keyword and level rules used to decide whether a session wants
 * an event; the inline helpers are what the enable-mask computation calls.
 */
#ifndef EVR_SESSIONS_PROVIDER_SPEC_H
#define EVR_SESSIONS_PROVIDER_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* EventPipe/ETW levels; a session at level L receives events at levels <= L. */
enum evr_level {
	EVR_LEVEL_LOGALWAYS = 0,
	EVR_LEVEL_CRITICAL = 1,
	EVR_LEVEL_ERROR = 2,
	EVR_LEVEL_WARNING = 3,
	EVR_LEVEL_INFO = 4,
	EVR_LEVEL_VERBOSE = 5,
};

/* Session keywords used when a spec leaves the keywords field out or empty. */
#define EVR_KEYWORDS_ALL UINT64_MAX

/**
 * struct evr_provider_arg - one key=value filter argument of a provider
 * @key: non-empty, without whitespace, '"', '=', ';' or ','. Owned by the
 *	list that holds it.
 * @value: possibly empty, never contains '"'; surrounding quotes from the
 *	text are already removed. Owned by the list that holds it.
 */
struct evr_provider_arg {
	char *key;
	char *value;
};

/**
 * struct evr_provider_spec - one provider entry of a session configuration
 * @name: provider name, non-empty, no whitespace, ':', ',' or '"'. "*"
 *	matches every provider. Owned by the list that holds it.
 * @keywords: session keywords; EVR_KEYWORDS_ALL when the field was omitted
 *	or empty.
 * @level: session level, 0..5; EVR_LEVEL_VERBOSE when omitted or empty.
 * @nargs: number of entries in @args.
 * @args: filter arguments in the order given, keys unique; NULL when
 *	@nargs is 0. Owned by the list that holds it.
 */
struct evr_provider_spec {
	char *name;
	uint64_t keywords;
	uint8_t level;
	size_t nargs;
	struct evr_provider_arg *args;
};

/**
 * struct evr_provider_spec_list - the providers of one session
 * @n: number of entries in @v; at least 1 in a parsed list.
 * @v: the providers in the order given, names unique.
 *
 * Every string and array reachable from a list is a separate malloc()
 * allocation owned by the list, so code that builds a list by hand can
 * release it with evr_provider_spec_list_free() as well.
 */
struct evr_provider_spec_list {
	size_t n;
	struct evr_provider_spec *v;
};

/**
 * evr_provider_spec_parse - parse a comma-separated provider list
 * @text: e.g. "Foo:0x10:4,Bar::error:Interval=1;Filter=\"a;b\"". Borrowed
 *	for the duration of the call.
 * @ret: on success receives a new list; free with
 *	evr_provider_spec_list_free(). Untouched on failure.
 * @errbuf: on -EINVAL receives one line naming the 1-based provider
 *	index, its text and what is wrong with it, truncated to @errlen;
 *	set to "" on success. May be NULL.
 * @errlen: size of @errbuf in bytes.
 *
 * Each provider is Name[:KEYWORDS[:LEVEL[:ARGS]]]. Spaces around each
 * provider are ignored. KEYWORDS is hexadecimal with or without a 0x
 * prefix, at most 64 bits; empty means EVR_KEYWORDS_ALL. LEVEL is anything
 * evr_level_parse() accepts; empty means EVR_LEVEL_VERBOSE. ARGS is
 * "key=value" pairs separated by ';'; a value may be wholly enclosed in
 * double quotes to carry ';', ',', ':' or '=', and a comma inside quotes
 * does not end the provider. There is no escape for '"' itself.
 *
 * Rejected: an empty list or empty provider, an empty name or one with
 * whitespace or '"', malformed or over-wide keywords, an unknown level,
 * an empty argument, a missing '=', an empty key or one with whitespace
 * or '"', a quote that does not enclose a whole value, an unterminated
 * quote, a key given twice within a provider and a provider given twice.
 *
 * Return: 0 on success, -EINVAL on bad arguments or bad text, -ENOMEM.
 * Context: any thread; allocates.
 */
int evr_provider_spec_parse(const char *text, struct evr_provider_spec_list **ret, char *errbuf,
			    size_t errlen);

/**
 * evr_provider_spec_list_free - free a list and everything it owns
 * @l: list to free; NULL is accepted and ignored.
 *
 * Context: any thread.
 */
void evr_provider_spec_list_free(struct evr_provider_spec_list *l);

/**
 * evr_provider_spec_arg - look up a filter argument by key
 * @spec: provider to search; borrowed.
 * @key: exact (case-sensitive) key; borrowed.
 *
 * Return: the value, borrowed from @spec and valid while @spec is; NULL
 * when the key is absent or an argument is NULL.
 * Context: any thread; does not allocate.
 */
const char *evr_provider_spec_arg(const struct evr_provider_spec *spec, const char *key);

/**
 * evr_provider_spec_list_find - the entry that configures a provider
 * @l: list to search; borrowed.
 * @provider_name: exact provider name; borrowed.
 *
 * An entry naming the provider exactly (case-sensitive) wins over a "*"
 * entry, wherever each appears in the list.
 *
 * Return: the entry, borrowed from @l; NULL when none applies or an
 * argument is NULL.
 * Context: any thread; does not allocate.
 */
const struct evr_provider_spec *evr_provider_spec_list_find(const struct evr_provider_spec_list *l,
							    const char *provider_name);

/**
 * evr_provider_spec_list_format - render a list as canonical text
 * @l: list to render; borrowed.
 * @buf: destination; may be NULL when @len is 0.
 * @len: size of @buf. When non-zero the output is always NUL-terminated,
 *	truncated if it does not fit, as with snprintf().
 *
 * Each provider becomes Name:0xKEYWORDS:LEVEL, with LEVEL a digit and
 * KEYWORDS lower-case hex, followed by :k=v;k2=v2 when it has arguments.
 * A value is quoted when it contains whitespace, ';', ',', ':' or '='.
 * Only lists that evr_provider_spec_parse() would accept are rendered, so
 * parsing the output yields an equal list.
 *
 * Return: the length of the full text without the NUL (call again with a
 * larger buffer if it is >= @len); -EINVAL when an argument is bad or @l
 * could not be parsed back (empty list, bad name, key or value, a '"' in
 * a value, level above 5, duplicate name or key); -EOVERFLOW when the text
 * would be longer than INT_MAX; -ENOMEM.
 * Context: any thread; allocates temporarily to check for duplicates.
 */
int evr_provider_spec_list_format(const struct evr_provider_spec_list *l, char *buf, size_t len);

/**
 * evr_level_parse - parse a level number or name
 * @s: "0".."5" (leading zeros allowed), or case-insensitively one of
 *	logalways, critical, error, warning, informational, info, verbose.
 *	Borrowed.
 * @ret: receives the level; untouched on failure.
 *
 * Return: 0 on success, -EINVAL for anything else, including "".
 * Context: any thread; does not allocate.
 */
int evr_level_parse(const char *s, uint8_t *ret);

/**
 * evr_level_name - the lower-case name of a level
 * @level: 0..5.
 *
 * Return: a static string such as "informational", accepted by
 * evr_level_parse(); NULL when @level is above 5.
 * Context: any thread.
 */
const char *evr_level_name(uint8_t level);

/**
 * evr_keywords_match - does a session with these keywords want this event
 * @session_keywords: keywords the session asked for.
 * @event_keywords: keywords the event was declared with.
 *
 * EventPipe rule: an event without keywords is wanted by every session;
 * otherwise the two sets must share at least one bit.
 *
 * Return: true when the event passes the keyword test.
 * Context: any thread; no side effects.
 */
static inline bool evr_keywords_match(uint64_t session_keywords, uint64_t event_keywords)
{
	return event_keywords == 0 || (session_keywords & event_keywords) != 0;
}

/**
 * evr_level_match - does a session at this level want this event
 * @session_level: level the session asked for.
 * @event_level: level the event was declared with.
 *
 * EventPipe rule: LogAlways events pass every session; otherwise the event
 * must be no more verbose than the session.
 *
 * Return: true when the event passes the level test.
 * Context: any thread; no side effects.
 */
static inline bool evr_level_match(uint8_t session_level, uint8_t event_level)
{
	return event_level == EVR_LEVEL_LOGALWAYS || session_level >= event_level;
}

/**
 * evr_provider_spec_match - does this entry enable an event
 * @spec: entry to test; borrowed.
 * @provider_name: name of the event's provider; borrowed.
 * @event_keywords: keywords of the event.
 * @event_level: level of the event.
 *
 * The name must equal @spec->name exactly, or @spec->name must be "*";
 * keywords and level are then checked with evr_keywords_match() and
 * evr_level_match(). Choosing between an exact and a "*" entry is the job
 * of evr_provider_spec_list_find().
 *
 * Return: true when all three tests pass; false otherwise or when @spec,
 * its name or @provider_name is NULL.
 * Context: any thread; does not allocate.
 */
bool evr_provider_spec_match(const struct evr_provider_spec *spec, const char *provider_name,
			     uint64_t event_keywords, uint8_t event_level);

#ifdef __cplusplus
}
#endif

#endif /* EVR_SESSIONS_PROVIDER_SPEC_H */
