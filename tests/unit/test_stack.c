// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-event stacks through the public API: a session with stack_depth gets
 * EVENT records with a stack block whose frames are the return addresses into
 * the known call chain stack_a -> stack_b -> stack_c; a shallower depth
 * truncates; a second session without stacks gets the plain record; a writer
 * whose caller's frame pointer holds garbage (as code built without frame
 * pointers leaves it) gets a short stack, never a fault; events written from a signal
 * handler carry stacks too. Built with frame pointers.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <evring/evring.h>

#define SK_EVENTS(EVENT)                                                                 \
	EVENT(sk_hit, "Hit", 1, EVR_LEVEL_INFO, 0x1, (u64, seq))                           \
	EVENT(sk_text, "Text", 2, EVR_LEVEL_INFO, 0x1, (str, s))                           \
	EVENT(sk_mid, "Mid", 3, EVR_LEVEL_INFO, 0x1, (str, s), (u32, n))

EVR_PROVIDER_DECLARE(sk, SK_EVENTS)
EVR_PROVIDER_DEFINE(sk, "StackTest", SK_EVENTS)

static volatile unsigned sink;
static void (*volatile indirect)(void);
/* Each chain function's own return address: the frames a stack must hold. */
static volatile uint64_t ra_c, ra_b, ra_a;

static void nothing(void)
{
}

/* A string event two frames of this file deep: a depth of 2 is then too small. */
__attribute__((noinline)) static void text_c(const char *str)
{
	sk_text(str);
	sink++;
}

__attribute__((noinline)) static void text_b(const char *str)
{
	text_c(str);
	sink++;
}

__attribute__((noinline)) static void stack_c(uint64_t i)
{
	ra_c = (uint64_t)(uintptr_t)__builtin_return_address(0);
	sk_hit(i);
	sink++;
}

__attribute__((noinline)) static void stack_b(uint64_t i)
{
	ra_b = (uint64_t)(uintptr_t)__builtin_return_address(0);
	stack_c(i);
	sink++;
}

__attribute__((noinline)) static void stack_a(uint64_t i)
{
	ra_a = (uint64_t)(uintptr_t)__builtin_return_address(0);
	stack_b(i);
	sink++;
}

/* A return address a little after the start of @f (sanitizers make functions longer). */
static int in_func(uint64_t ret, void (*f)(uint64_t))
{
	uint64_t start = (uint64_t)(uintptr_t)f;

	return ret > start && ret < start + 4096;
}

struct rec {
	uint32_t flags;
	uint16_t nframes;
	uint8_t sflags;
	uint64_t frames[128];
	uint32_t len;		/* payload, stack block excluded */
	uint8_t payload[64];
};

static int read_all(struct evr_session *s, struct rec *out, int max)
{
	struct evr_reader *r;
	struct evr_record rec;
	int n = 0;

	assert_int_equal(evr_session_reader_new(s, EVR_READER_GATING, &r), 0);
	while (evr_reader_next(r, &rec) > 0) {
		struct evr_stack_hdr sh = { 0 };
		const uint8_t *p = rec.payload;
		uint32_t len = rec.len;

		if (rec.type != EVR_REC_EVENT || n == max)
			continue;
		out[n].flags = rec.flags;
		if (rec.flags & EVR_REC_F_STACK) {
			assert_true(len >= sizeof(sh));
			memcpy(&sh, p, sizeof(sh));
			assert_true(sh.nframes <= 127);
			assert_true(len - sizeof(sh) >= 8u * sh.nframes);
			memcpy(out[n].frames, p + sizeof(sh), 8u * sh.nframes);
			p += sizeof(sh) + 8u * sh.nframes;
			len -= (uint32_t)sizeof(sh) + 8u * sh.nframes;
		}
		out[n].nframes = sh.nframes;
		out[n].sflags = sh.flags;
		out[n].len = len;
		memcpy(out[n].payload, p, len < 64 ? len : 64);
		n++;
	}
	evr_reader_free(r);
	return n;
}

static struct evr_session *start(uint32_t depth, const char *providers)
{
	struct evr_session_opts o = {
		.providers = providers, .ring_size = 64u * 1024u, .stack_depth = depth,
	};
	struct evr_session *s;
	char err[256];

	assert_int_equal(evr_session_start(&o, &s, err, sizeof(err)), 0);
	return s;
}

static void test_stack_chain_frames(void **state)
{
	struct evr_session *s = start(16, "StackTest");
	struct rec r[4];

	(void)state;
	stack_a(7);
	evr_session_stop(s);
	assert_int_equal(read_all(s, r, 4), 1);
	assert_true(r[0].flags & EVR_REC_F_STACK);
	assert_true(r[0].nframes >= 4);
	assert_true(in_func(r[0].frames[0], stack_c));
	assert_int_equal(r[0].frames[1], ra_c);
	assert_int_equal(r[0].frames[2], ra_b);
	assert_int_equal(r[0].frames[3], ra_a);
	assert_int_equal(r[0].len, 8);
	assert_int_equal(r[0].payload[0], 7);
	evr_session_free(s);
}

static void test_stack_depth_truncates(void **state)
{
	struct evr_session *s = start(2, "StackTest");
	struct rec r[4];

	(void)state;
	stack_a(1);
	text_b("a string payload, not in words");
	evr_session_stop(s);
	assert_int_equal(read_all(s, r, 4), 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(r[i].nframes, 2);
		assert_true(r[i].sflags & EVR_STACK_F_TRUNCATED);
	}
	assert_true(in_func(r[0].frames[0], stack_c));
	/* Under a sanitizer the string goes through sk_text__emit(), one frame more. */
	assert_true(in_func(r[1].frames[EVR__SANITIZED], (void (*)(uint64_t))(uintptr_t)text_c));
	assert_int_equal(r[1].len, 4 + strlen("a string payload, not in words"));
	evr_session_free(s);
}

static void test_stack_provider_arg_and_plain_session(void **state)
{
	/* Stacks for this provider only, by its argument; a second session has none. */
	struct evr_session *s1 = start(0, "StackTest:0x1:4:stacks=3");
	struct evr_session *s2 = start(0, "StackTest");
	struct rec r1[4], r2[4];

	(void)state;
	stack_a(42);
	evr_session_stop(s1);
	evr_session_stop(s2);
	assert_int_equal(read_all(s1, r1, 4), 1);
	assert_int_equal(read_all(s2, r2, 4), 1);
	assert_int_equal(r1[0].nframes, 3);
	assert_true(r1[0].flags & EVR_REC_F_STACK);
	assert_false(r2[0].flags & EVR_REC_F_STACK);
	assert_int_equal(r2[0].len, 8);
	assert_memory_equal(r1[0].payload, r2[0].payload, 8);
	evr_session_free(s1);
	evr_session_free(s2);
}

static void test_stack_bad_args_refused(void **state)
{
	struct evr_session_opts o = { .providers = "StackTest:0x1:4:stacks=yes" };
	struct evr_session *s;
	char err[256];

	(void)state;
	assert_int_equal(evr_session_start(&o, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "stacks=yes: expected 0, 1 or a depth up to 127"));
	o.providers = "StackTest";
	o.stack_depth = 128;
	assert_int_equal(evr_session_start(&o, &s, err, sizeof(err)), -EINVAL);
}

/* Fires the event; called from the asm below with a bogus rbp. */
__attribute__((used, noinline)) void stack_c_plain(uint64_t i);
__attribute__((used, noinline)) void stack_c_plain(uint64_t i)
{
	sk_hit(i);
	sink++;
}

/*
 * Fire with @bogus in rbp, as code built without frame pointers may leave it: the
 * walk must stop at the first frame that is not one. The call to `indirect` makes
 * this function a non-leaf, so that the compiler keeps nothing in the red zone the
 * asm pushes into; the stack stays 16-byte aligned at the call.
 */
__attribute__((noinline)) static void fire_with_rbp(uint64_t bogus)
{
	indirect();
	__asm__ __volatile__("sub $8, %%rsp\n\t"
			     "push %%rbp\n\t"
			     "mov %0, %%rbp\n\t"
			     "mov $99, %%edi\n\t"
			     "call stack_c_plain\n\t"
			     "pop %%rbp\n\t"
			     "add $8, %%rsp\n\t"
			     :
			     : "r"(bogus)
			     : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory",
			       "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
			       "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
			       "xmm15");
}


static void test_stack_bad_frame_pointer(void **state)
{
	uint64_t garbage[64];
	uint64_t bogus[] = {
		0x10,					/* unmapped, low */
		0xdeadbeefdeadbee8ull,			/* non-canonical */
		(uint64_t)(uintptr_t)&garbage[1],	/* on the stack, below the walker: refused */
		(uint64_t)(uintptr_t)malloc(64),	/* the heap */
	};
	struct evr_session *s = start(64, "StackTest");
	struct rec r[8];

	(void)state;
	indirect = nothing;
	for (size_t i = 0; i < 64; i++)
		garbage[i] = 0x4141414141414141ull;
	for (size_t i = 0; i < sizeof(bogus) / sizeof(bogus[0]); i++)
		fire_with_rbp(bogus[i]);
	evr_session_stop(s);
	assert_int_equal(read_all(s, r, 8), 4);
	for (int i = 0; i < 4; i++) {
		assert_true(r[i].flags & EVR_REC_F_STACK);
		/*
		 * stack_c_plain, the return into fire_with_rbp's asm, and at most one
		 * more: the bogus frame's return address when the bogus frame pointer
		 * points into this thread's stack (garbage[]), whose next "frame" is
		 * then out of bounds. Nothing read outside the stack, no fault.
		 */
		assert_true(r[i].nframes >= 2 && r[i].nframes <= 3);
		assert_true(in_func(r[i].frames[0], stack_c_plain));
		assert_true(in_func(r[i].frames[1], fire_with_rbp));
		if (i != 2)
			assert_int_equal(r[i].nframes, 2);
	}
	free((void *)(uintptr_t)bogus[3]);
	evr_session_free(s);
}

static void on_signal(int sig)
{
	(void)sig;
	stack_a(5);
}

static void test_stack_in_signal_handler(void **state)
{
	struct evr_session *s = start(32, "StackTest");
	struct sigaction sa = { .sa_handler = on_signal }, old;
	struct rec r[4];

	(void)state;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	raise(SIGUSR1);
	sigaction(SIGUSR1, &old, NULL);
	evr_session_stop(s);
	assert_int_equal(read_all(s, r, 4), 1);
	assert_true(in_func(r[0].frames[0], stack_c));
	assert_int_equal(r[0].frames[1], ra_c);
	assert_int_equal(r[0].frames[2], ra_b);
	evr_session_free(s);
}

/*
 * Every public way of writing an event, each from a function of its own: the
 * stack starts with the return into that function, then its own return
 * address, whichever of libevring's entry points wrote it (the write path keeps
 * no frame pointers of its own: its out-of-line part must lie on the caller's
 * frame, or have a frame of the public function below it).
 */
static volatile uint64_t ra_via;

#define VIA(name, call)                                                            \
	__attribute__((noinline)) static void via_##name(void)                     \
	{                                                                          \
		ra_via = (uint64_t)(uintptr_t)__builtin_return_address(0);         \
		call;                                                              \
		sink++;                                                            \
	}

static const uint64_t words[4] = { 1, 2, 3, 4 };
static const uint8_t bytes[24] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };

VIA(q0, evr__event_write_q0(&sk_hit__event, 0))
VIA(q1, evr__event_write_q1(&sk_hit__event, 8, 1))
VIA(q2, evr__event_write_q2(&sk_hit__event, 16, 1, 2))
VIA(q3, evr__event_write_q3(&sk_hit__event, 24, 1, 2, 3))
VIA(q4, evr__event_write_q4(&sk_hit__event, 32, 1, 2, 3, 4))
VIA(write_words, evr_event_write(&sk_hit__event, words, 16))
VIA(write_bytes, evr_event_write(&sk_hit__event, bytes, 12))
VIA(write_padded, evr_event_write_padded(&sk_hit__event, words, 12))
VIA(writev, evr_event_writev(&sk_hit__event, &(union evr_value){ .u = 9 }, 1))
VIA(dynamic, evr_dynamic_write(&sk, "Dyn", EVR_LEVEL_INFO, 0x1, bytes, 5))
VIA(json, evr_json_write(&sk, "Js", EVR_LEVEL_INFO, 0x1, "{\"a\":1}"))
VIA(text, sk_text("straight from the caller's string"))
VIA(mid, sk_mid("by sk_mid__emit", 7))

static void test_stack_every_entry_point(void **state)
{
	static const struct {
		const char *name;
		void (*fn)(void);
		const void *emit;	/* frame 0 is in this generated __emit(), or NULL */
	} via[] = {
		{ "q0", via_q0, NULL }, { "q1", via_q1, NULL }, { "q2", via_q2, NULL }, { "q3", via_q3, NULL },
		{ "q4", via_q4, NULL }, { "write_words", via_write_words, NULL },
		{ "write_bytes", via_write_bytes, NULL }, { "write_padded", via_write_padded, NULL },
		{ "writev", via_writev, NULL }, { "dynamic", via_dynamic, NULL }, { "json", via_json, NULL },
		/* Under a sanitizer a string last goes through its __emit() too. */
		{ "text", via_text, EVR__SANITIZED ? (const void *)sk_text__emit : NULL },
		{ "mid", via_mid, (const void *)sk_mid__emit },
	};

	(void)state;
	for (size_t v = 0; v < sizeof(via) / sizeof(via[0]); v++) {
		struct evr_session *s = start(8, "StackTest");
		uint64_t ra;
		struct rec r[2];
		int f;

		via[v].fn();
		ra = ra_via;
		evr_session_stop(s);
		if (read_all(s, r, 2) != 1 || r[0].nframes < 3) {
			fprintf(stderr, "%s: no event with a stack\n", via[v].name);
			fail();
		}
		f = 0;
		if (via[v].emit) {
			if (!in_func(r[0].frames[0], (void (*)(uint64_t))(uintptr_t)via[v].emit)) {
				fprintf(stderr, "%s: frame 0 is %#" PRIx64 ", not in its __emit\n",
					via[v].name, r[0].frames[0]);
				fail();
			}
			f = 1;
		}
		if (!in_func(r[0].frames[f], (void (*)(uint64_t))(uintptr_t)via[v].fn) ||
		    r[0].frames[f + 1] != ra) {
			fprintf(stderr, "%s: frames %#" PRIx64 " %#" PRIx64 ", expected one in "
				"via_%s (%p) then %#" PRIx64 "\n", via[v].name, r[0].frames[f],
				r[0].frames[f + 1], via[v].name, (void *)(uintptr_t)via[v].fn, ra);
			fail();
		}
		evr_session_free(s);
	}
}

/* Two sessions of different depths on one event: each its own number of frames. */
static void test_stack_two_depths(void **state)
{
	struct evr_session *deep = start(16, "StackTest");
	struct evr_session *shallow = start(2, "StackTest");
	struct rec r1[4], r2[4];

	(void)state;
	stack_a(3);
	evr_session_stop(deep);
	evr_session_stop(shallow);
	assert_int_equal(read_all(deep, r1, 4), 1);
	assert_int_equal(read_all(shallow, r2, 4), 1);
	assert_true(r1[0].nframes >= 4);
	assert_int_equal(r2[0].nframes, 2);
	assert_true(r2[0].sflags & EVR_STACK_F_TRUNCATED);
	assert_memory_equal(r1[0].frames, r2[0].frames, 2 * 8);
	assert_int_equal(r1[0].frames[1], ra_c);
	assert_int_equal(r2[0].len, 8);
	assert_memory_equal(r1[0].payload, r2[0].payload, 8);
	evr_session_free(deep);
	evr_session_free(shallow);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stack_chain_frames),
		cmocka_unit_test(test_stack_depth_truncates),
		cmocka_unit_test(test_stack_provider_arg_and_plain_session),
		cmocka_unit_test(test_stack_bad_args_refused),
		cmocka_unit_test(test_stack_bad_frame_pointer),
		cmocka_unit_test(test_stack_in_signal_handler),
		cmocka_unit_test(test_stack_every_entry_point),
		cmocka_unit_test(test_stack_two_depths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
