// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evr__event_write_v() by hand, for x86-64 with rseq: the fast path of the
 * generated fire functions of events whose last field is a string or bytes
 * (a message, a name, a key and its value), for up to 256 bytes where the
 * CPU has AVX2. Everything else goes to the C version,
 * evr__event_write_v_c() in write.c, which writes the same records.
 *
 * Why by hand. The 20-byte event runs at the pace of its rdtsc (about 25
 * cycles in this guest, with room left beside it: 32 independent additions or
 * eight 32-byte moves added to a loop of rdtsc and stores cost nothing). A
 * string or bytes event is not bound by the timestamp but by the loads and
 * stores it issues: eight more loads from a hot line added 0.86 ns to a
 * 200-byte event, its eight 32-byte stores 2.1 ns. The compiler's version
 * keeps the six arguments for the slow path beside the section's own values:
 * GCC saved six callee-saved registers and spilled four values to the stack
 * (21 loads and stores an event), and read the thread id, the rseq area's
 * address, the CPU and the ring's mask and base twice. This one saves two
 * registers, keeps ev and q1 in vector registers (a move between register
 * files is neither a load nor a store) and reads each value once. Measured
 * with no reader, interleaved with the C version, fastest of 12 rounds (a loop
 * of fire functions in one session): 200 bytes 14.5 -> 12.7 ns, 40 bytes
 * 11.7 -> 10.8, a 40-byte string 13.1 -> 11.9; the 20-byte event 10.0 in
 * both. Parking all four register arguments there instead, to save no
 * register at all, was 0.2 ns faster for 200 bytes and 0.3-0.4 ns slower for
 * 40; storing two words at once from a vector register, and 64-byte moves,
 * were slower.
 *
 * The critical section follows the protocol of <evring/ring-rseq.h>
 * (EVR_RSEQ_APPEND_ASM, EVR_RSEQ_VAR_COPY, EVR_RSEQ_VAR_BYTES) with one
 * difference: the CPU is read inside the section (a thread that migrates
 * after reading it is aborted before its commit) instead of before it.
 *
 * Exits, always with the arguments as they came and the stack as at entry:
 * before the section (another clock, a thread id not yet known, no per-CPU
 * session, more than 256 bytes, no AVX2, a malformed @pn) to
 * evr__event_write_v_c(), which checks everything again; from the section
 * (an abort, a slow path, rings gone) to evr__event_write_v_slow(), as the C
 * version's fast path does. A full ring's drop is counted in the section and
 * returns, as in the C version (EVR_RSEQ_DROP_FULL). Both are jumps, so that
 * the slow path's frame lies on the caller's (stack captures,
 * tests/unit/test_stack.c).
 *
 * What the two versions share is written once in <evring/ring-rseq.h>: the
 * section's descriptor and abort signature, the lines asked for ahead
 * (EVR_RSEQ_PF_BEFORE), the 32- to 256-byte moves (EVR_RSEQ_COPY_32_256) and
 * the count of a drop (EVR_RSEQ_DROP_COUNT), each
 * given this file's registers. The rest (the checks, the record's header, the
 * commit, fewer than 32 bytes with one scratch register) follows
 * EVR_RSEQ_APPEND_ASM, EVR_RSEQ_VAR_COPY and EVR_RSEQ_VAR_BYTES and must be
 * changed with them.
 */
#include <stddef.h>

#include "write-internal.h"

#if EVR_WRITE_V_ASM

#define WV_S(x) EVR_RSEQ_S(x)

/*
 * Whether the path below may run, and glibc's __rseq_offset: one load on the
 * path instead of three (the AVX2 flag, the clock's, a copy of the offset:
 * 0.2-0.3 ns of a 40- or 200-byte event, measured with the per-CPU session
 * check also left out). __rseq_offset when the CPU has AVX2 and the clock
 * is the TSC, 0 otherwise (the rseq area lies inside the thread's control
 * block, never at the thread pointer itself: its offset is not 0). Stays 0
 * until the clock is settled (evr__write_v_gate_set(), from clock.c), before
 * which no session exists to write to.
 */
EVR_HIDDEN intptr_t evr_wv_gate;

void evr__write_v_gate_set(bool tsc)
{
	__atomic_store_n(&evr_wv_gate, tsc && evr_ring_copy_avx2 ? (intptr_t)__rseq_offset : 0,
			 __ATOMIC_RELAXED);
}

#define WV_EV_PERCPU 8
#define WV_EV_RID 16
/* Header word 0 of an EVENT record, but for its size: type EVENT (bits
 * 16-23), flags 0, and the header's 16 bytes of the size. */
#define WV_W0_BASE 0x10010
_Static_assert(offsetof(struct evr_event, percpu) == WV_EV_PERCPU, "evr_event.percpu");
_Static_assert(offsetof(struct evr_event, rid) == WV_EV_RID, "evr_event.rid");
_Static_assert(WV_W0_BASE == (EVR_REC_HDR_SIZE | (uint32_t)EVR_REC_EVENT << 16),
	       "EVENT record header word 0");
_Static_assert(sizeof(struct evr_ring_writer) == 256, "ring writers 256 bytes apart");
_Static_assert(24 + 256 <= EVR_MAX_PAYLOAD, "what the assembly takes is never too big");
_Static_assert(sizeof(evr_ring_percpu_min) == 4 && sizeof(evr_tls_tid) == 4 &&
		       sizeof(evr_wv_gate) == 8,
	       "operand sizes");

#define WV_PUSH1(reg)                                                                      \
	"pushq %" #reg "\n\t"                                                              \
	".cfi_adjust_cfa_offset 8\n\t"                                                     \
	".cfi_rel_offset %" #reg ", 0\n\t"
#define WV_POP1(reg)                                                                       \
	"popq %" #reg "\n\t"                                                               \
	".cfi_adjust_cfa_offset -8\n\t"                                                    \
	".cfi_restore %" #reg "\n\t"
#define WV_POP WV_POP1(r12) WV_POP1(rbp)

#define WV_MV32(o) EVR_RSEQ_MV32_R("%r8", "%r10", "%ymm15", o)
#define WV_MV32_END(o) EVR_RSEQ_MV32_END_R("%r8", "%r10", "%rdx", "%ymm14", o)

/*
 * Registers: the arguments come in rdi ev, rsi q0, rdx q1, rcx q2, r8 src, r9
 * pn (plen << 32 | n). Once the section is to be tried, ev waits in xmm6 and
 * q1 in xmm3 (stored into the record from there), rbp and r12 are saved;
 * then rbp holds __rseq_offset (the rseq area is %fs:(%rbp)), r12 the ring
 * writer, rdi tid_events, r10 head, then the destination, r11 the thread id,
 * then the record's end, rax the timestamp, then scratch, rdx scratch; ymm14,
 * ymm15 for the bytes, their upper halves cleared after, xmm0 and xmm1.
 */
__asm__(
	EVR_RSEQ_CS_DESC(".Lwv_cs", ".Lwv_start", ".Lwv_post", ".Lwv_abort")
	".pushsection __rseq_failure, \"ax\"\n\t"
	EVR_RSEQ_ABORT_SIG
	".Lwv_abort:\n\t"
	"jmp .Lwv_slow\n\t"
	".popsection\n\t"

	".text\n\t"
	".p2align 5\n\t"
	".globl evr__event_write_v\n\t"
	".type evr__event_write_v, @function\n"
	"evr__event_write_v:\n\t"
	".cfi_startproc\n\t"
	"movq %r9, %rax\n\t"
	"shrq $32, %rax\n\t"
	"subl $4, %eax\n\t"
	"cmpl $20, %eax\n\t"				/* plen 4 to 24 */
	"ja .Lwv_c\n\t"
	"cmpl $256, %r9d\n\t"				/* n */
	"ja .Lwv_c\n\t"
	"movq evr_wv_gate(%rip), %r10\n\t"		/* AVX2, the TSC: __rseq_offset */
	"testq %r10, %r10\n\t"
	"je .Lwv_c\n\t"
	"movq evr_tls_tid@gottpoff(%rip), %r11\n\t"
	"movl %fs:(%r11), %r11d\n\t"
	"testl %r11d, %r11d\n\t"
	"je .Lwv_c\n\t"
	"cmpq $0, " WV_S(WV_EV_PERCPU) "(%rdi)\n\t"	/* one per-CPU session wants it */
	"je .Lwv_c\n\t"
	WV_PUSH1(rbp) WV_PUSH1(r12)
	"vmovq %rdi, %xmm6\n\t"
	"vmovq %rdx, %xmm3\n\t"
	"movq %r10, %rbp\n\t"
	"rdtsc\n\t"
	"shlq $32, %rdx\n\t"
	"orq %rdx, %rax\n\t"
	"leaq .Lwv_cs(%rip), %rdx\n\t"
	"movq %rdx, %fs:" WV_S(EVR_OFF_RS_CS) "(%rbp)\n"	/* arm */
	".Lwv_start:\n\t"
	"movl %fs:" WV_S(EVR_OFF_RS_CPU) "(%rbp), %edx\n\t"
	"cmpl evr_ring_percpu_min(%rip), %edx\n\t"	/* and a thread without rseq */
	"jae .Lwv_slow\n\t"
	"movq " WV_S(WV_EV_PERCPU) "(%rdi), %r12\n\t"	/* the rings, inside the section */
	"testq %r12, %r12\n\t"
	"jz .Lwv_slow\n\t"
	"shlq $8, %rdx\n\t"
	"addq %rdx, %r12\n\t"
	"cmpl $0, " WV_S(EVR_OFF_W_LOCK) "(%r12)\n\t"
	"jne .Lwv_slow\n\t"
	"movq " WV_S(EVR_OFF_W_TID_EVENTS) "(%r12), %rdi\n\t"
	"movq " WV_S(EVR_OFF_W_HEAD) "(%r12), %r10\n\t"
	"movq " WV_S(EVR_OFF_W_CTL) "(%r12), %rdx\n\t"
	"cmpq " WV_S(EVR_OFF_CTL_HEAD) "(%rdx), %r10\n\t"	/* an interrupted append */
	"jne .Lwv_slow\n\t"
	"movq %rdi, %rdx\n\t"
	"shrq $32, %rdx\n\t"
	"cmpl %r11d, %edx\n\t"
	"je .Lwv_same_thread\n\t"
	/* New thread in the packet: its THREAD record first, at head; bit 31 of
	 * tid_events (above any count) says it is due. */
	"shlq $32, %r11\n\t"
	"movl %edi, %edi\n\t"
	"orq %r11, %rdi\n\t"
	"btsq $31, %rdi\n\t"
	"addq $" WV_S(EVR_RSEQ_THREAD_ASIZE) ", %r10\n"
	".Lwv_same_thread:\n\t"
	"movq %r9, %r11\n\t"
	"shrq $32, %r11\n\t"
	"movl %r9d, %edx\n\t"
	"leaq 7(%r11,%rdx), %r11\n\t"
	"andq $-8, %r11\n\t"
	"leaq 16(%r10,%r11), %r11\n\t"			/* end = head + 16 + padded payload */
	"cmpq " WV_S(EVR_OFF_W_FAST_END) "(%r12), %r11\n\t"
	"ja .Lwv_full\n\t"
	"cmpq $0, " WV_S(EVR_OFF_W_LOST_ASYNC) "(%r12)\n\t"
	"jne .Lwv_slow\n\t"
	"cmpq " WV_S(EVR_OFF_W_BELL_DUE) "(%r12), %rax\n\t"	/* a wake-up is due */
	"jae .Lwv_slow\n\t"
	"movq " WV_S(EVR_OFF_W_LAST_TS) "(%r12), %rdx\n\t"
	"cmpq %rdx, %rax\n\t"
	"cmovbq %rdx, %rax\n\t"
	"movq %rax, " WV_S(EVR_OFF_W_LAST_TS) "(%r12)\n\t"
	"movq %r11, %rdx\n\t"
	"subq %r10, %rdx\n\t"				/* the record's size */
	"andq " WV_S(EVR_OFF_W_RING_MASK) "(%r12), %r10\n\t"
	"addq " WV_S(EVR_OFF_W_DATA) "(%r12), %r10\n\t"	/* destination */
	/* Own the four lines ahead that end one ring-prefetch past the record's
	 * end (EVR_RSEQ_PF_BEFORE()); past the ring's end, a prefetch asks for
	 * nothing useful and cannot fault. */
	"prefetchw " WV_S(EVR_RING_PREFETCH) "(%r10,%rdx)\n\t"
	EVR_RSEQ_PF_BEFORE(WV_S(EVR_RING_PREFETCH), "(%r10,%rdx)")
	"btrq $31, %rdi\n\t"
	"jnc .Lwv_no_thread\n\t"
	"movq $" WV_S(EVR_RSEQ_THREAD_W0) ", -" WV_S(EVR_RSEQ_THREAD_ASIZE) "(%r10)\n\t"
	"movq %rax, 8-" WV_S(EVR_RSEQ_THREAD_ASIZE) "(%r10)\n\t"
	"movq %rdi, %rdx\n\t"
	"shrq $32, %rdx\n\t"				/* tid, then 4 bytes of padding */
	"movq %rdx, 16-" WV_S(EVR_RSEQ_THREAD_ASIZE) "(%r10)\n"
	".Lwv_no_thread:\n\t"
	"movq %rax, 8(%r10)\n\t"			/* timestamp */
	"movl %r9d, %eax\n\t"
	"movq %r9, %rdx\n\t"
	"shrq $32, %rdx\n\t"
	"addq %rdx, %rax\n\t"				/* plen + n */
	"addq $" WV_S(WV_W0_BASE) ", %rax\n\t"
	"vmovq %xmm6, %rdx\n\t"
	"movl " WV_S(WV_EV_RID) "(%rdx), %edx\n\t"
	"shlq $32, %rdx\n\t"
	"orq %rdx, %rax\n\t"
	"movq %rax, (%r10)\n\t"				/* header word 0 */
	"movq %r9, %rdx\n\t"
	"shrq $32, %rdx\n\t"				/* plen */
	"movl %r9d, %eax\n\t"
	"leaq 7(%rax,%rdx), %rax\n\t"
	"andq $-8, %rax\n\t"
	/* The last word first, padding included, then the fixed words (zero
	 * past plen) and the bytes over both: the padding stays zero. */
	"movq $0, 8(%r10,%rax)\n\t"
	"movq %rsi, 16(%r10)\n\t"
	"cmpq $8, %rdx\n\t"
	"jbe .Lwv_fixed_done\n\t"
	"vmovq %xmm3, 24(%r10)\n\t"
	"cmpq $16, %rdx\n\t"
	"jbe .Lwv_fixed_done\n\t"
	"movq %rcx, 32(%r10)\n"
	".Lwv_fixed_done:\n\t"
	"leaq 16(%r10,%rdx), %r10\n\t"			/* where the bytes go */
	"movl %r9d, %edx\n\t"				/* n, at most 256 */
	/* Moves from the start and moves ending at the last byte, which
	 * overlap: loads never past src + n, stores never past the record, and
	 * a given size always takes the same branches. */
	"cmpq $32, %rdx\n\t"
	"jb .Lwv_lt32\n\t"
	EVR_RSEQ_COPY_32_256(WV_MV32, WV_MV32_END, "%rdx", ".Lwv_vzeroupper")
	".Lwv_vzeroupper:\n\t"
	"vzeroupper\n\t"
	"jmp .Lwv_commit\n"
	/* No room below fast_end: a full ring's drop, counted by the section
	 * (EVR_RSEQ_DROP_FULL), or the slow path. */
	".Lwv_full:\n\t"
	EVR_RSEQ_DROP_COUNT("%r12", "%rdx", "%r11", ".Lwv_slow")
	"jmp .Lwv_commit_store\n"
	".Lwv_lt32:\n\t"
	"cmpq $16, %rdx\n\t"
	"jb .Lwv_lt16\n\t"
	"vmovdqu (%r8), %xmm0\n\t"
	"vmovdqu -16(%r8,%rdx), %xmm1\n\t"
	"vmovdqu %xmm0, (%r10)\n\t"
	"vmovdqu %xmm1, -16(%r10,%rdx)\n\t"
	"jmp .Lwv_commit\n"
	".Lwv_lt16:\n\t"
	"cmpq $8, %rdx\n\t"
	"jb .Lwv_lt8\n\t"
	"movq (%r8), %rax\n\t"
	"movq %rax, (%r10)\n\t"
	"movq -8(%r8,%rdx), %rax\n\t"
	"movq %rax, -8(%r10,%rdx)\n\t"
	"jmp .Lwv_commit\n"
	".Lwv_lt8:\n\t"
	"cmpq $4, %rdx\n\t"
	"jb .Lwv_lt4\n\t"
	"movl (%r8), %eax\n\t"
	"movl %eax, (%r10)\n\t"
	"movl -4(%r8,%rdx), %eax\n\t"
	"movl %eax, -4(%r10,%rdx)\n\t"
	"jmp .Lwv_commit\n"
	".Lwv_lt4:\n\t"					/* 0 to 3: first, last, middle */
	"testq %rdx, %rdx\n\t"
	"jz .Lwv_commit\n\t"
	"movzbl (%r8), %eax\n\t"
	"movb %al, (%r10)\n\t"
	"movzbl -1(%r8,%rdx), %eax\n\t"
	"movb %al, -1(%r10,%rdx)\n\t"
	"shrq $1, %rdx\n\t"
	"movzbl (%r8,%rdx), %eax\n\t"
	"movb %al, (%r10,%rdx)\n"
	".Lwv_commit:\n\t"
	"incq %rdi\n\t"					/* one more event in the packet */
	"vmovq %r11, %xmm0\n\t"				/* {head, tid_events}: one store */
	"vmovq %rdi, %xmm1\n\t"
	"vpunpcklqdq %xmm1, %xmm0, %xmm0\n\t"
	"vmovdqa %xmm0, " WV_S(EVR_OFF_W_HEAD) "(%r12)\n\t"
	"movq " WV_S(EVR_OFF_W_CTL) "(%r12), %rdx\n"
	".Lwv_commit_store:\n\t"
	"movq %r11, (%rdx)\n"				/* commit: publish (or count a drop) */
	".Lwv_post:\n\t"
	"movq $0, %fs:" WV_S(EVR_OFF_RS_CS) "(%rbp)\n\t"
	".cfi_remember_state\n\t"
	WV_POP
	"xorl %eax, %eax\n\t"
	"ret\n\t"
	".cfi_restore_state\n"
	".Lwv_slow:\n\t"
	"movq $0, %fs:" WV_S(EVR_OFF_RS_CS) "(%rbp)\n\t"
	"vmovq %xmm6, %rdi\n\t"
	"vmovq %xmm3, %rdx\n\t"
	WV_POP
	"jmp evr__event_write_v_slow\n"
	".Lwv_c:\n\t"
	"jmp evr__event_write_v_c\n\t"
	".cfi_endproc\n\t"
	".size evr__event_write_v, .-evr__event_write_v\n\t");

#endif /* EVR_WRITE_V_ASM */
