/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Typical calls from C: a char buf[64] formatted and passed to a str field (gcc 12 -O2 warned
 * -Wstringop-overread in evring.h when the header measured it with strnlen's 16 KiB bound),
 * string literals, a json document, bytes, an event guarded by its _enabled() check.
 */
#include <stdio.h>

#include "myapp-events.h"

void myapp_uses(unsigned n, const void *blob, unsigned len);

void myapp_uses(unsigned n, const void *blob, unsigned len)
{
	char buf[64];
	char key[16] = "k";
	unsigned i;

	for (i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "request %u of %u", i, n);
		myapp_log(buf);
		myapp_req_begin(i);
		myapp_kv(i % 4u, key, buf);
		myapp_req_end(i, 200);
	}
	myapp_log("a literal");
	myapp_log(NULL);
	myapp_doc("{\"phase\":\"warm-up\",\"n\":3}");
	myapp_blob(2, blob, (uint32_t)len);
	myapp_blob(3, buf, (uint32_t)sizeof(buf));
	myapp_tick();
	myapp_flag(n > 3);
	myapp_alloc((uint64_t)(uintptr_t)blob, (uint32_t)len);
	if (myapp_all_enabled())
		myapp_all(1, 2, 3, 4, -1, -2, -3, -4, 1.5f, 2.5, true, buf, buf, "{}", blob,
			  (uint32_t)len);
	if (evr_provider_enabled(&myapp, EVR_LEVEL_INFO, 0x2))
		(void)evr_json_write(&myapp, "Note", EVR_LEVEL_INFO, 0x2, "{\"a\":1}");
}
