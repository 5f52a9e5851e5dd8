/*
 * kept_segment.c
 *	  A large dynamic shared memory segment a backend keeps mapped from one
 *	  use to the next.
 *
 * PostgreSQL zero-fills a new segment, and every process that writes it
 * faults each of its pages in; for answers of a gigabyte or more that
 * costs more than making them.  A backend therefore keeps the segment of
 * its last large use (mapping pinned, size rounded up to
 * KDG_KEPT_SEGMENT_UNIT) and takes it again for the next one that fits,
 * replacing it when it is too small.  A kept segment is busy from its
 * taking until the user gives it back (kdg_kept_segment_done); what busy
 * means when the next use comes is the user's rule: the GPU service lets
 * go of a segment a call gave up on (the service may still write it), a
 * parallel scan leaves one that another scan of the same query still
 * reads and makes a plain segment instead.
 */
#include "postgres.h"

#include "core/core.h"

/* a kept segment's size is a multiple of this */
#define KDG_KEPT_SEGMENT_UNIT	((Size) 64 << 20)

/*
 * The kept segment of at least size bytes (replacing a smaller one), marked
 * busy; NULL when none can be made.  It must not be busy.
 */
dsm_segment *
kdg_kept_segment_take(KdgKeptSegment *kept, Size size)
{
	Assert(!kept->busy);
	if (kept->seg && kept->size < size)
		kdg_kept_segment_drop(kept);
	if (kept->seg == NULL)
	{
		Size		want = add_size(size, KDG_KEPT_SEGMENT_UNIT - 1) /
			KDG_KEPT_SEGMENT_UNIT * KDG_KEPT_SEGMENT_UNIT;

		kept->seg = dsm_create(want, DSM_CREATE_NULL_IF_MAXSEGMENTS);
		if (kept->seg == NULL)
			return NULL;
		dsm_pin_mapping(kept->seg);
		kept->size = want;
	}
	kept->busy = true;
	return kept->seg;
}

/*
 * The end of a use of seg: true, and the kept segment free for the next
 * use, when seg is the kept one; false for any other segment, which the
 * caller detaches.
 */
bool
kdg_kept_segment_done(KdgKeptSegment *kept, dsm_segment *seg)
{
	if (seg == NULL || seg != kept->seg)
		return false;
	kept->busy = false;
	return true;
}

/* Let the kept segment go (this backend's mapping of it). */
void
kdg_kept_segment_drop(KdgKeptSegment *kept)
{
	if (kept->seg)
		dsm_detach(kept->seg);
	kept->seg = NULL;
	kept->size = 0;
	kept->busy = false;
}
