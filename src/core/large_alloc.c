/*
 * large_alloc.c
 *	  Memory for large answers, mapped on huge pages where the kernel can.
 *
 * Filling memory just allocated is bound by mapping its pages: one fault
 * per 4 kB page, so that decoding gigabytes of answers runs at the speed
 * of the faults, not of the copies.  A kernel whose transparent huge pages
 * are given only on request ("madvise", as on Debian) maps 2 MB a fault in
 * a range that asks for them.  The memory is an ordinary palloc chunk of
 * the given context: pfree or the context's reset frees it.  Only chunks
 * of at least KDG_LARGE_ALLOC_MIN ask, since a smaller one may share its
 * pages with other allocations.
 */
#include "postgres.h"

#include <sys/mman.h>
#include <unistd.h>

#include "core/core.h"

/* The smallest chunk whose pages ask for huge pages. */
#define KDG_LARGE_ALLOC_MIN ((Size) 32 * 1024 * 1024)

/*
 * size bytes (at least one) in cxt, of any size, asking for huge pages
 * when large; zeroed with zero.  Raises an error when out of memory.
 */
void *
kdg_alloc_large(MemoryContext cxt, Size size, bool zero)
{
	char	   *p = MemoryContextAllocExtended(cxt, Max(size, 1), MCXT_ALLOC_HUGE);

#ifdef MADV_HUGEPAGE
	if (size >= KDG_LARGE_ALLOC_MIN)
	{
		uintptr_t	page = (uintptr_t) sysconf(_SC_PAGESIZE);
		uintptr_t	from = ((uintptr_t) p + page - 1) & ~(page - 1);
		uintptr_t	to = ((uintptr_t) p + size) & ~(page - 1);

		/* advice only: where the kernel refuses, the pages come one by one */
		if (to > from)
			(void) madvise((void *) from, to - from, MADV_HUGEPAGE);
	}
#endif
	if (zero)
		memset(p, 0, size);
	return p;
}
