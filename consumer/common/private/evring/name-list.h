/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ", "-separated lists of names in a fixed buffer, for one-line messages
 * ("providers A, B and C are not in the process"): what evring record and the
 * monitor say about a session's providers. Inline: a tool needs only this
 * folder on its include path.
 */
#ifndef EVR_NAME_LIST_H
#define EVR_NAME_LIST_H

#include <stdio.h>
#include <string.h>

/*
 * evr_name_list_add() - append @s to the ", "-separated @list unless it is
 * there already; what does not fit in @len is cut.
 * @list: NUL-terminated, in a buffer of @len bytes.
 */
static inline void evr_name_list_add(char *list, size_t len, const char *s)
{
	size_t used = strlen(list), n = strlen(s);

	for (const char *p = list; *p;) {
		const char *end = strstr(p, ", ");
		size_t k = end ? (size_t)(end - p) : strlen(p);

		if (k == n && !memcmp(p, s, n))
			return;
		p += k + (end ? 2 : 0);
	}
	if (used < len)
		snprintf(list + used, len - used, "%s%s", used ? ", " : "", s);
}

#endif /* EVR_NAME_LIST_H */
