/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The "MiniRT" provider: runtime events named, numbered and keyworded as
 * .NET's Microsoft-Windows-DotNETRuntime provider does, with the fields a
 * tool needs (.NET's ClrInstanceID is left out: there is one runtime).
 *
 * Start/stop pairs (EVR_START/EVR_STOP, opcodes 1/2): GCStart/GCEnd,
 * GCSuspendEEBegin/End, GCRestartEEBegin/End, ThreadPoolWorkerThreadStart/Stop,
 * ContentionStart/Stop, MethodJittingStarted/MethodLoadVerbose,
 * ExceptionCatchStart/Stop. Each pair is fired by one thread.
 */
#ifndef MINIRT_EVENTS_H
#define MINIRT_EVENTS_H

#include <evring/evring.h>

#define RT_KW_GC 0x1ull
#define RT_KW_LOADER 0x8ull
#define RT_KW_JIT 0x10ull
#define RT_KW_CONTENTION 0x4000ull
#define RT_KW_EXCEPTION 0x8000ull
#define RT_KW_THREADPOOL 0x10000ull

#define MINIRT_EVENTS(EVENT)                                                                  \
	EVENT(ev_gc_start, "GCStart", 1, EVR_START(EVR_LEVEL_INFO), RT_KW_GC, (u32, count), (u32, depth), \
	      (u32, reason), (u32, type))                                                    \
	EVENT(ev_gc_end, "GCEnd", 2, EVR_STOP(EVR_LEVEL_INFO), RT_KW_GC, (u32, count), (u32, depth))     \
	EVENT(ev_gc_restart_ee_end, "GCRestartEEEnd", 3, EVR_STOP(EVR_LEVEL_INFO), RT_KW_GC, )           \
	EVENT(ev_gc_heap_stats, "GCHeapStats", 4, EVR_LEVEL_INFO, RT_KW_GC, (u64, gen0_size), \
	      (u64, gen0_promoted), (u64, gen1_size), (u64, gen1_promoted), (u64, gen2_size), \
	      (u64, gen2_promoted), (u64, loh_size), (u64, loh_promoted))                     \
	EVENT(ev_gc_restart_ee_begin, "GCRestartEEBegin", 7, EVR_START(EVR_LEVEL_INFO), RT_KW_GC, )       \
	EVENT(ev_gc_suspend_ee_end, "GCSuspendEEEnd", 8, EVR_STOP(EVR_LEVEL_INFO), RT_KW_GC, )           \
	EVENT(ev_gc_suspend_ee_begin, "GCSuspendEEBegin", 9, EVR_START(EVR_LEVEL_INFO), RT_KW_GC,        \
	      (u32, reason), (u32, count))                                                   \
	EVENT(ev_gc_allocation_tick, "GCAllocationTick", 10, EVR_LEVEL_VERBOSE, RT_KW_GC,     \
	      (u32, amount), (u32, kind), (u64, amount64), (ptr, type_id), (str, type_name))   \
	EVENT(ev_tp_worker_start, "ThreadPoolWorkerThreadStart", 50, EVR_START(EVR_LEVEL_INFO),           \
	      RT_KW_THREADPOOL, (u32, active_count), (u32, retired_count))                     \
	EVENT(ev_tp_worker_stop, "ThreadPoolWorkerThreadStop", 51, EVR_STOP(EVR_LEVEL_INFO),             \
	      RT_KW_THREADPOOL, (u32, active_count), (u32, retired_count))                     \
	EVENT(ev_tp_adjustment_sample, "ThreadPoolWorkerThreadAdjustmentSample", 54,           \
	      EVR_LEVEL_INFO, RT_KW_THREADPOOL, (f64, throughput))                             \
	EVENT(ev_tp_adjustment, "ThreadPoolWorkerThreadAdjustment", 55, EVR_LEVEL_INFO,        \
	      RT_KW_THREADPOOL, (f64, average_throughput), (u32, new_worker_thread_count),     \
	      (u32, reason))                                                                 \
	EVENT(ev_tp_enqueue, "ThreadPoolEnqueue", 61, EVR_LEVEL_VERBOSE, RT_KW_THREADPOOL,     \
	      (ptr, work_id))                                                                \
	EVENT(ev_tp_dequeue, "ThreadPoolDequeue", 62, EVR_LEVEL_VERBOSE, RT_KW_THREADPOOL,     \
	      (ptr, work_id))                                                                \
	EVENT(ev_exception_thrown, "ExceptionThrown", 80, EVR_LEVEL_ERROR, RT_KW_EXCEPTION,    \
	      (str, exception_type), (str, exception_message), (ptr, exception_eip),          \
	      (u32, exception_hresult), (u16, exception_flags))                               \
	EVENT(ev_contention_start, "ContentionStart", 81, EVR_START(EVR_LEVEL_INFO), RT_KW_CONTENTION,    \
	      (u8, contention_flags), (ptr, lock_id), (ptr, associated_object_id),            \
	      (u64, lock_owner_thread_id))                                                   \
	EVENT(ev_contention_stop, "ContentionStop", 91, EVR_STOP(EVR_LEVEL_INFO), RT_KW_CONTENTION,      \
	      (u8, contention_flags), (f64, duration_ns))                                     \
	EVENT(ev_method_load_verbose, "MethodLoadVerbose", 143, EVR_STOP(EVR_LEVEL_VERBOSE), RT_KW_JIT,  \
	      (u64, method_id), (u64, module_id), (ptr, method_start_address),                 \
	      (u32, method_size), (u32, method_token), (u32, method_flags),                   \
	      (str, method_namespace), (str, method_name), (str, method_signature))           \
	EVENT(ev_method_jitting_started, "MethodJittingStarted", 145, EVR_START(EVR_LEVEL_VERBOSE),       \
	      RT_KW_JIT, (u64, method_id), (u64, module_id), (u32, method_token),              \
	      (u32, method_il_size), (str, method_namespace), (str, method_name),             \
	      (str, method_signature))                                                        \
	EVENT(ev_module_load, "ModuleLoad", 152, EVR_LEVEL_INFO, RT_KW_LOADER, (u64, module_id), \
	      (u64, assembly_id), (u32, module_flags), (str, module_il_path),                 \
	      (str, module_native_path))                                                      \
	EVENT(ev_exception_catch_start, "ExceptionCatchStart", 250, EVR_START(EVR_LEVEL_INFO),            \
	      RT_KW_EXCEPTION, (ptr, entry_eip), (u64, method_id), (str, method_name))         \
	EVENT(ev_exception_catch_stop, "ExceptionCatchStop", 251, EVR_STOP(EVR_LEVEL_INFO),              \
	      RT_KW_EXCEPTION, )                                                             \
	EVENT(ev_phase_change, "PhaseChange", 1000, EVR_LEVEL_INFO, 0, (u32, index),            \
	      (str, name))

EVR_PROVIDER_DECLARE(minirt_provider, MINIRT_EVENTS)

#endif /* MINIRT_EVENTS_H */
