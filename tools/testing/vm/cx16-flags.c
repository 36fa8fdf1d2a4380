// SPDX-License-Identifier: GPL-2.0-only
/*
 * Does the CPU's CMPXCHG16B leave every flag but ZF as it found it?
 *
 * QEMU 7.2's TCG (Debian 12's) computes the flags CMPXCHG16B keeps from
 * the lazily tracked flags state it last wrote back, not from the
 * instruction before it: after a POPF or an interrupt's IRET, and an ADD
 * in the same translation block, the flags come out as the ADD's source
 * operand (its low 32 bits), reserved bits, TF, NT and VM included.  The
 * kernel's SLUB runs CMPXCHG16B on every allocation's fast path; the
 * guest dies of a double fault when an interrupt lands in the wrong place.
 * rnbd-vm hides CX16 from its TCG guests; this program shows the fault
 * where a guest's CPU still has it.
 *
 * Exit status: 0 the flags are right, 1 they are not, 4 no CX16.
 */
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>

#define RFLAGS_CF		0x001ul
#define RFLAGS_OF		0x800ul
#define ROUNDS			1000

/* 16-byte aligned, as CMPXCHG16B requires, by the ABI of __int128. */
static unsigned __int128 word;

/*
 * The ADD of 0x801 to 0 leaves CF and OF clear, and CMPXCHG16B must not
 * change them; the ADD's source has exactly those two bits set.
 */
static unsigned long flags_after_cmpxchg16b(void)
{
	uint64_t lo = 0, hi = 0, src = RFLAGS_OF | RFLAGS_CF;
	unsigned long flags;

	asm volatile("pushq $0x202\n\t"
		     "popfq\n\t"
		     "addq %[src], %%rax\n\t"
		     "cmpxchg16b %[word]\n\t"
		     "pushfq\n\t"
		     "popq %[flags]\n\t"
		     : [flags] "=r" (flags), "+a" (lo), "+d" (hi),
		       [word] "+m" (word)
		     : [src] "r" (src), "b" (1ul), "c" (1ul)
		     : "cc", "memory");
	return flags;
}

int main(void)
{
	unsigned int eax, ebx, ecx, edx;
	unsigned long flags;
	int i, bad = 0;

	if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) ||
	    !(ecx & bit_CMPXCHG16B)) {
		printf("the CPU has no CMPXCHG16B\n");
		return 4;
	}
	for (i = 0; i < ROUNDS; i++) {
		flags = flags_after_cmpxchg16b();
		if (flags & (RFLAGS_OF | RFLAGS_CF))
			bad++;
	}
	printf("CMPXCHG16B changed CF or OF in %d of %d rounds (last RFLAGS %#lx)\n",
	       bad, ROUNDS, flags);
	return bad ? 1 : 0;
}
