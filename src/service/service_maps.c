/*
 * service_maps.c
 *	  The service's mappings of call segments: kept from call to call for a
 *	  backend's kept segment, made and let go per call for any other.
 *
 * A backend sends its large calls in the one segment it keeps
 * (kept_segment.c, KdgCall.kept).  Mapping a segment of a gigabyte or two
 * and faulting its pages in costs the service more than an All-kNN
 * search on the GPU, so the service keeps its mapping of each backend's
 * kept segment (at most one per backend, KDG_KEPT_MAPS in all) and finds
 * it again by handle.  A backend's new kept segment replaces its old
 * mapping, and the mappings of backends that have exited are let go by
 * kdg_service_maps_sweep; until then the service's mapping keeps the
 * segment alive, as the backend's own did.  Other segments are mapped for
 * one call; a large one has its pages mapped in one go.
 */
#include "postgres.h"

#include <sys/mman.h>

#include "core/core.h"
#include "service.h"

/* kept segments the service maps at once, at most */
#define KDG_KEPT_MAPS	64

/* A backend's kept segment, mapped. */
typedef struct KdgKeptMap
{
	dsm_segment *seg;			/* NULL: an unused entry */
	dsm_handle	handle;
	int			pid;			/* the backend that keeps it */
} KdgKeptMap;

static KdgKeptMap kept_maps[KDG_KEPT_MAPS];

/* Map every page of seg's mapping at once, not by one fault each. */
static void
map_pages(dsm_segment *seg)
{
#ifdef MADV_POPULATE_WRITE
	(void) madvise(dsm_segment_address(seg), dsm_segment_map_length(seg),
				   MADV_POPULATE_WRITE);
#endif
}

/* Let go of kept map entry m. */
static void
kept_map_drop(KdgKeptMap *m)
{
	dsm_detach(m->seg);
	m->seg = NULL;
}

/*
 * Keep the mapping seg of pid's kept segment, in place of pid's older one;
 * false when every entry is in use (seg is then mapped for this call only).
 */
static bool
kept_map_add(dsm_segment *seg, dsm_handle handle, int pid)
{
	KdgKeptMap *free_entry = NULL;

	for (int i = 0; i < KDG_KEPT_MAPS; i++)
	{
		KdgKeptMap *m = &kept_maps[i];

		if (m->seg && m->pid == pid)
			kept_map_drop(m);
		if (m->seg == NULL && free_entry == NULL)
			free_entry = m;
	}
	if (free_entry == NULL)
		return false;
	dsm_pin_mapping(seg);
	free_entry->seg = seg;
	free_entry->handle = handle;
	free_entry->pid = pid;
	return true;
}

/*
 * The mapping of the call segment handle that backend pid sent; NULL when
 * the segment is gone (its caller gave up and let it go).
 */
dsm_segment *
kdg_service_map(dsm_handle handle, int pid)
{
	dsm_segment *seg;

	for (int i = 0; i < KDG_KEPT_MAPS; i++)
		if (kept_maps[i].seg && kept_maps[i].handle == handle)
			return kept_maps[i].seg;
	if ((seg = dsm_attach(handle)) == NULL)
		return NULL;
	if (((KdgCall *) dsm_segment_address(seg))->kept)
		(void) kept_map_add(seg, handle, pid);
	if (dsm_segment_map_length(seg) >= KDG_KEPT_SEGMENT_MIN)
		map_pages(seg);
	return seg;
}

/* The end of a call's use of its mapping seg: let go of all but a kept one. */
void
kdg_service_unmap(dsm_segment *seg)
{
	for (int i = 0; i < KDG_KEPT_MAPS; i++)
		if (kept_maps[i].seg == seg)
			return;
	dsm_detach(seg);
}

/* Let go of the kept segments of backends that have exited. */
void
kdg_service_maps_sweep(void)
{
	for (int i = 0; i < KDG_KEPT_MAPS; i++)
		if (kept_maps[i].seg && kdg_pid_gone(kept_maps[i].pid))
			kept_map_drop(&kept_maps[i]);
}
