/*
 * service.h
 *	  The GPU service: one background worker that owns the GPU for the whole
 *	  server, and the shared memory through which backends hand it work.
 *
 * With kdgpu in shared_preload_libraries (and kdgpu.service on), the
 * postmaster starts the service (service_main.c).  It opens the GPU object
 * once, keeps device copies of trees for all sessions, and runs every GPU
 * call that backends would otherwise make themselves.  A backend reaches it
 * through the engine's GPU provider hook (service_client.c), each call
 * through a slot of the shared state (service_calls.c).  Without the
 * preload, the engine opens the GPU in the backend.
 *
 * The service runs the queries on a copy that lives whole on one device in
 * a thread of that device (service_workers.c), so that the GPUs of a host
 * work at once; everything else runs on its main thread.
 *
 * The shared state (KdgService) is protected by its spinlock; no section
 * under it allocates, waits or calls out.  Slots are the queue: one per
 * backend with a call in flight.  Resident entries describe the device
 * copies the service holds; their device pointers live only in the
 * service's own memory.
 *
 * A named tree's copy (KdTree.key: an index's database, OID, relfilenode,
 * tree id and dead rows) is shared by every session and stays until
 * replaced, dropped, unloaded or evicted, least recently used first, under
 * kdgpu.gpu_memory_limit per device (service_copies.c).  Copies spread
 * over the host's devices, with kdgpu.gpu_replicas copies of a named tree;
 * a tree larger than one device's share is split over every device
 * (kd_split.c).  For a ranked tree the service also keeps its rows and
 * references, so that a call whose rows differ by a few searches the copy
 * beside the rows added (kdg_rows_diff, local/tree_delta.c).  An unnamed
 * copy belongs to the backend that uploaded it until it releases it or
 * exits.
 */
#ifndef KDG_SERVICE_H
#define KDG_SERVICE_H

#include "postgres.h"

#include "storage/dsm.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "core/core.h"

struct KdgDiff;

/* device copies the service can hold at once */
#define KDG_RESIDENT_MAX 64

/* devices the service uses, at most */
#define KDG_MAX_DEVICES 16

/* queries of a kNN call served before the service turns to other calls */
#define KDG_SLICE_QUERIES (1 << 20)

typedef enum KdgServiceState
{
	KDG_SERVICE_STOPPED = 0,	/* not running (yet, or restarting) */
	KDG_SERVICE_STARTING,		/* running, opening the GPU */
	KDG_SERVICE_READY,			/* serving calls */
	KDG_SERVICE_IDLE			/* running, but no GPU is usable: why says */
} KdgServiceState;

typedef enum KdgSlotState
{
	KDG_SLOT_FREE = 0,
	KDG_SLOT_QUEUED,			/* a call waits for the service */
	KDG_SLOT_RUNNING,			/* the service has begun it */
	KDG_SLOT_DONE,				/* the reply is in the segment */
	KDG_SLOT_ABANDONED			/* the caller stopped waiting: the service
								 * frees the slot when it lets go */
} KdgSlotState;

/* A backend's call in flight. */
typedef struct KdgSlot
{
	KdgSlotState state;
	int			pid;			/* the caller */
	int			procno;			/* its PGPROC, whose latch is set on reply */
	dsm_handle	handle;			/* the call's segment (KdgCall) */
	uint64		turn;			/* served in increasing turn order */
	uint64		epoch;			/* the service run it was queued for */
	dsm_handle	range;			/* DONE: the call's pinned result segment */
} KdgSlot;

/* A device copy the service holds. */
typedef struct KdgResident
{
	bool		used;
	bool		shared;			/* named: for every session */
	bool		drop;			/* asked to go: the service frees it */
	uint64		key[4];			/* the tree's name (shared) */
	uint64		version;		/* changes whenever the entry is reused */
	int			owner_pid;		/* unnamed: the backend that owns it */
	int			device;			/* -1: split over every device */
	int64		n;
	int			dim;
	int64		bytes;
	int64		device_bytes[KDG_MAX_DEVICES];	/* of bytes, on each device */
	int64		hits;			/* calls that used it */
	TimestampTz loaded_at;
	TimestampTz last_use;
} KdgResident;

/* The service's shared state. */
typedef struct KdgService
{
	slock_t		mutex;
	bool		registered;		/* the postmaster started the service */
	KdgServiceState state;
	int			pid;
	int			procno;			/* the service's PGPROC, to wake it */
	uint64		epoch;			/* bumped at every start of the service */
	char		why[256];		/* IDLE: why no GPU is usable */
	KdGpuInfo	info;			/* READY: device 0, and how many there are */
	int			ndevices;		/* READY: the devices in use */
	KdGpuInfo	devices[KDG_MAX_DEVICES];
	int64		device_used[KDG_MAX_DEVICES];	/* bytes of copies on each */
	uint64		next_turn;
	int64		calls;			/* calls served since the service started */
	int			replicas;		/* copies of each named tree (kdgpu.gpu_replicas) */
	int64		memory_limit;	/* bytes the copies may take on each device;
								 * 0: free memory */
	int64		memory_used;	/* on all devices */
	KdgResident resident[KDG_RESIDENT_MAX];
	int			nslots;
	KdgSlot		slots[FLEXIBLE_ARRAY_MEMBER];
} KdgService;

/* What a call asks for. */
typedef enum KdgOp
{
	KDG_OP_ACQUIRE,				/* find the shared copy named key (and,
								 * given rows, holding them or a few more
								 * or fewer: kdg_rows_diff) */
	KDG_OP_ROWS,				/* keep the rows and references of a shared
								 * copy's tree */
	KDG_OP_UPLOAD,				/* copy the shipped tree to the device */
	KDG_OP_BUILD,				/* build a tree from shipped points */
	KDG_OP_FLAT,				/* kNN of shipped vectors, no tree
								 * (kde_flat_knn) */
	KDG_OP_FLAT_RADIUS,			/* and their radius search */
	KDG_OP_KNN,					/* the ops from here on search a copy */
	KDG_OP_ALL_KNN,
	KDG_OP_RADIUS,
	KDG_OP_BOX,
	KDG_OP_DBSCAN				/* labels of the tree's points, by ref */
} KdgOp;

/*
 * A call, at the start of its segment; the arrays follow at the offsets
 * given (0: absent).  The caller fills the arguments, the service the reply.
 */
typedef struct KdgCall
{
	KdgOp		op;
	bool		kept;			/* the segment is its backend's kept one */
	/* arguments */
	int			resident;		/* the tree's entry, for the queries */
	uint64		version;		/* and its version then */
	uint64		key[4];			/* ACQUIRE, UPLOAD: the tree's name */
	bool		keep;			/* BUILD: keep the device copy (owned) */
	int64		n;				/* the tree: points, dimension, bounds */
	int			dim;
	int64		nbounds;
	bool		ref_order;
	int			k;
	bool		include_self;
	KdMetric	metric;			/* FLAT: what it ranks by */
	KdDbscan	dbscan;			/* DBSCAN: its reach, margins and minpoints */
	int64		nq;
	int64		nradii;
	Size		coords;			/* UPLOAD: input; BUILD: output */
	Size		refs;
	Size		split;
	Size		bounds;
	Size		points;			/* BUILD: the points and their references;
								 * ROWS, ACQUIRE: the rows' points (dim
								 * each), for a tree built from rows read */
	Size		point_refs;
	Size		in1;			/* queries, centres or lows; ACQUIRE, ROWS:
								 * rows (TIDs in rank order), n of them */
	bool		any_version;	/* ACQUIRE: the copy of key whatever its
								 * key[2] (a tree built from rows read) */
	int64		ntree;			/* ACQUIRE given rows: the copy's points
								 * (-1: any), and the reply */
	int64		max_gone;		/* and the most rows the call may lack ... */
	int64		max_added;		/* ... or the copy may lack */
	Size		diff;			/* and room for them: max_gone ranks, then
								 * max_added ordinals */
	Size		in2;			/* radii or highs; ROWS: the tree's
								 * references (ranks in node order) */
	Size		out;			/* KNN, ALL_KNN: the neighbours; ACQUIRE
								 * given rows: room for the references;
								 * DBSCAN: the labels */
	Size		count;			/* and their counts */
	Size		skip;			/* FLAT: the ref each query skips, or 0 */
	Size		size;			/* of the whole segment */
	int			threads;		/* host threads the caller's copies may use */
	/* progress, kept by the service between slices */
	int64		done;
	/* reply */
	KdStatus	status;
	KdError		err;
	bool		missing;		/* the entry is gone: upload again */
	bool		has_rows;		/* ACQUIRE: the entry keeps its rows */
	int64		ngone;			/* ACQUIRE given rows: the difference */
	int64		nadded;
	int			resident_out;	/* ACQUIRE, UPLOAD, BUILD with keep */
	uint64		version_out;
	bool		ref_order_out;	/* BUILD */
	int64		undecided;		/* DBSCAN */
	KdGpuTimes	times;			/* what the GPU work took, how it ran */
	dsm_handle	range;			/* RADIUS, BOX: a pinned segment holding
								 * offsets[nq + 1] then the hits, which the
								 * caller unpins */
} KdgCall;

/*
 * flavours of an index's copies (kdg_service_key_of_index): its tree, its
 * ranked tree, a tree built from the rows a call read (named by the
 * index, key[2] telling builds apart; index_tree.c), or one built over its
 * trees' rows
 */
#define KDG_KEY_TREE	0
#define KDG_KEY_RANKED	1
#define KDG_KEY_BUILT	2
#define KDG_KEY_ROWS	3		/* a tree over the live rows of an index's
								 * trees, key[2] its generation
								 * (local/index_source.c) */

/* service_shmem.c */
extern KdgService *kdg_service;
extern void kdg_service_register(void);
extern void kdg_service_key_of_index(uint64 *key, Oid indexrelid,
									 Oid relnode, uint64 tree_id, int64 ndead,
									 int flavour);
extern void kdg_service_key_set_flavour(uint64 *key, int flavour);
extern bool kdg_service_key_index(const uint64 *key, Oid *dboid,
								  Oid *indexrelid);

/* service_calls.c */

/*
 * Calls of at least KDG_KEPT_SEGMENT_MIN bytes use the backend's kept
 * segment, and the service maps their pages at once.
 */

extern KdgServiceState kdg_service_state(uint64 *epoch);
extern dsm_segment *kdg_call_begin(Size size, KdgOp op, KdgCall **call,
								   KdError *err);
extern KdStatus kdg_call_run(dsm_segment *seg, KdgCall *call,
							 const KdExec *exec, KdError *err);
extern void kdg_call_end(dsm_segment *seg);
extern void kdg_ship_tree(KdgCall *call, const KdTree *t, Size at, bool copy);
extern Size kdg_tree_shipped_size(int64 n, int dim, int64 nbounds);

/* service_client.c */
extern void kdg_service_client_install(void);
extern KdStatus kdg_take_range(const KdgCall *call, int64 nq,
							   KdRangeResult *res, KdError *err);
extern bool kdg_service_in_use(void);
extern bool kdg_service_serving(void);
extern int	kdg_service_devices(KdGpuInfo *devices);
extern KdGpuTree *kdg_service_find(const uint64 *key, const uint64 *rows,
								   const double *points, int64 n,
								   int64 *ntree, int dim, uint64 *refs,
								   int64 max_gone, int64 max_added,
								   struct KdgDiff *diff, KdError *err);
extern void kdg_service_give_rows(KdGpuTree *g, const uint64 *rows,
								  const uint64 *refs, const double *points,
								  int64 n);
extern void kdg_service_forget(Oid dboid, Oid indexrelid);
extern bool kdg_service_holds(const uint64 *key);
extern bool kdg_service_holds_index(Oid dboid, Oid indexrelid);
extern char *kdg_service_describe(void);

/* service_workers.c: the device threads */
typedef bool (*KdgServeFn) (KdgCall *call, int slot, KdRangeResult *range);
extern int	kdg_service_threads_start(int ndevices);
extern int	kdg_service_threads_count(void);
extern bool kdg_service_thread_idle(int device);
extern bool kdg_service_on_device_thread(void);
extern bool kdg_service_threads_idle(void);
extern int	kdg_service_thread_of_slot(int slot);
extern void kdg_service_thread_run(int device, int slot, KdgCall *call,
						   KdgServeFn serve);
extern int	kdg_service_thread_collect(int device, bool *finished,
									   KdRangeResult *range);
extern void kdg_service_threads_quiesce(int timeout_ms);

/* service_copies.c: what the service process alone keeps of each entry */
typedef struct KdgHeld
{
	KdGpuTree  *copies[KDG_RESIDENT_MAX];	/* the device copy */
	KdSplitCopy *splits[KDG_RESIDENT_MAX];	/* or the copy split over every
											 * device */
	uint64	   *rows[KDG_RESIDENT_MAX]; /* its rows (TIDs in rank order), or
										 * NULL */
	uint64	   *ranks[KDG_RESIDENT_MAX];	/* and its references (ranks in
											 * node order), with the rows */
	double	   *points[KDG_RESIDENT_MAX];	/* and, for a tree built from a
											 * call's rows, their coordinates
											 * in rank order */
	bool		busy[KDG_RESIDENT_MAX]; /* a device thread searches it */
} KdgHeld;
extern KdgHeld kdg_held;
extern void kdg_entry_free(int i);
extern bool kdg_entry_quiet(int i);
extern int	kdg_entry_named(const uint64 *key, bool any_version);
extern void kdg_entries_trim(int device, int64 bytes, int except);
extern int	kdg_device_for_copy(const bool *taken);
extern bool kdg_copy_splits(int64 bytes);
extern int	kdg_entry_make_room(const uint64 *key, int64 bytes, bool split,
								int *device);
extern void kdg_entry_record(int i, int device, KdGpuTree *copy,
							 KdSplitCopy *split, const KdTree *t, bool shared,
							 int owner_pid, KdgCall *call);
extern int	kdg_entry_use(KdgCall *call);
extern KdTree kdg_call_tree(KdgCall *call);
extern KdStatus kdg_upload_evicting(const KdTree *t, int device,
									KdGpuTree **copy, int keep_entry,
									const KdExec *exec, KdError *err);
extern KdStatus kdg_upload_split(const KdTree *t, KdSplitCopy **split,
								 int keep_entry, KdExec *exec, KdError *err);
extern void kdg_replicate(int e, const KdTree *t, int owner_pid,
						  const KdExec *exec);
extern int	kdg_replica_for(const KdgCall *call);
extern int	kdg_copies_of(int e, KdGpuTree **out);
extern bool kdg_call_spreads(const KdgCall *call);
extern bool kdg_call_rows_fit(int e, KdgCall *call);

/* service_ops.c */
extern bool kdg_serve(KdgCall *call, int i, KdRangeResult *range);
extern KdStatus kdg_reply_range(KdgCall *call, KdRangeResult *res,
								KdError *err);

/* service_main.c */
extern bool kdg_am_service;
extern bool kdg_service_fatal;
extern volatile bool kdg_service_stopping;
extern bool kdg_pid_gone(int pid);

/* service_maps.c */
extern dsm_segment *kdg_service_map(dsm_handle handle, int pid);
extern void kdg_service_unmap(dsm_segment *seg);
extern void kdg_service_maps_sweep(void);
extern PGDLLEXPORT void kdg_service_main(Datum arg);

/* service_flat.c */
extern KdStatus kdg_client_flat_knn(const KdVectors *set, KdMetric metric,
									const double *queries, int64_t nq, int k,
									const uint64_t *skip, KdNeighbor *out,
									int32_t *count, const KdExec *exec,
									KdError *err);
extern KdStatus kdg_client_flat_radius(const KdVectors *set, KdMetric metric,
									   const double *centers, int64_t nq,
									   const double *radii, int64_t nradii,
									   KdRangeResult *res, const KdExec *exec,
									   KdError *err);

#endif							/* KDG_SERVICE_H */
