// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The export formats as every --help of the evring command lists them: from
 * libevring-export's one table, so that help and parser cannot disagree.
 */
#include <stdio.h>

#include <evring/export.h>

#include "cli.h"

void evr_cli_print_formats(FILE *f, const char *indent)
{
	for (size_t i = 0; i < evr_export_nformats; i++) {
		const struct evr_export_format *ef = &evr_export_formats[i];
		char name[64];
		int k = snprintf(name, sizeof(name), "%s", ef->name);

		for (size_t a = 0; a < EVR_EXPORT_MAX_ALIASES && ef->aliases[a] &&
				   (size_t)k < sizeof(name); a++)
			k += snprintf(name + k, sizeof(name) - (size_t)k, " (%s)", ef->aliases[a]);
		fprintf(f, "%s%-18s %s\n", indent, name, ef->what);
	}
}
