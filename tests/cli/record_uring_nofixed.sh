#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# record_uring.sh with the fixed buffer refused (EVR_RECORDER_NO_FIXED=1, as a kernel before
# 6.15 or a locked-memory limit too small refuses it): io_uring's plain vectored writes, whose
# pages the kernel pins per write, record as exactly; no buffer registered.
URING_NO_FIXED=1 exec bash "$(dirname "$0")/record_uring.sh" "$@"
