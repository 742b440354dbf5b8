#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# record_uring.sh with io_uring refused (EVR_RECORDER_NO_URING=1): the recorder writes from
# its own thread, says so once where --io uring was asked for, and records as exactly.
URING_FALLBACK=1 exec bash "$(dirname "$0")/record_uring.sh" "$@"
