#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# sample_cpu.sh with its comparison against `perf record`: a test of its own, so that where
# perf cannot run it is reported skipped (with the reason) instead of passing without it.
export EVR_SAMPLE_CPU_VS_PERF=1
source "$(dirname "$0")/sample_cpu.sh"
