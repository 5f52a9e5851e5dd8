/*
 * cluster_funcs.c
 *	  kd_cluster_dbscan and kd_cluster_within: window functions that label
 *	  each row of a window partition with its cluster, as PostGIS's
 *	  ST_ClusterDBSCAN and ST_ClusterWithinWin do.
 *
 * On its first call in a partition a function reads the points of every
 * row of the partition (NULL and empty values are no point), clusters them
 * (local/cluster.c, exact, deterministic in the partition's row order) and
 * keeps the labels in the partition's memory; every call then returns the
 * label of its own row, NULL for a row with no point or a noise row.  The
 * distance and minpoints are read from the partition's first row: like
 * PostGIS's, they must not vary within a partition.
 *
 * The table forms take the table's rows as every kd_* function does, from
 * its kdgpu index and the visibility map where it has one (no window
 * partition to fill), in ctid order, and return one row per point: its
 * ctid or key, and its label (NULL for noise).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "windowapi.h"

#include "funcs/funcs.h"

PG_FUNCTION_INFO_V1(kdgpu_cluster_dbscan);
PG_FUNCTION_INFO_V1(kdgpu_cluster_within);
PG_FUNCTION_INFO_V1(kdgpu_dbscan);
PG_FUNCTION_INFO_V1(kdgpu_components);

/* A partition's labels, by row position (-1: NULL). */
typedef struct KdgClusterLabels
{
	bool		done;
	int64		nrows;
	int32	   *label;
} KdgClusterLabels;

/* A window argument of the partition's first row; error when it is NULL. */
static Datum
first_row_arg(WindowObject winobj, int argno, const char *fname,
			  const char *argname)
{
	bool		isnull;
	bool		isout;
	Datum		value = WinGetFuncArgInPartition(winobj, argno, 0,
												 WINDOW_SEEK_HEAD, false,
												 &isnull, &isout);

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" of %s must not be NULL", argname, fname)));
	return value;
}

/*
 * The points of the partition's rows in row order into src (an empty
 * source of type), and each row's ordinal among them (-1: no point) into
 * ord.
 */
static void
read_partition(WindowObject winobj, KdSource *src, int64 nrows, int64 *ord,
			   const char *fname)
{
	for (int64 pos = 0; pos < nrows; pos++)
	{
		double		coords[KD_MAX_DIM];
		KdWhere		where = {"col", pos + 1};
		KdPointInfo info;
		bool		isnull;
		bool		isout;
		Datum		value = WinGetFuncArgInPartition(winobj, 0, pos,
													 WINDOW_SEEK_HEAD, false,
													 &isnull, &isout);
		int			dim = isnull ? 0 :
			kdg_datum_read(src->type, value, coords, &where, &info);

		ord[pos] = -1;
		if (dim == 0)
			continue;
		ord[pos] = src->n;
		kdg_source_append(src, coords, dim, &info, &where, (uint64) pos);
		if ((pos & 65535) == 0)
			CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Cluster the partition of the window function called with fcinfo (minpoints
 * 1 for components) into labels, its partition-local memory.
 */
static void
partition_labels(FunctionCallInfo fcinfo, KdgClusterLabels *labels,
				 const char *fname, double eps, int minpoints)
{
	WindowObject winobj = PG_WINDOW_OBJECT();
	MemoryContext partcxt = GetMemoryChunkContext(labels);
	MemoryContext workcxt;
	MemoryContext oldcxt;
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, 0);
	KdSource	src;
	int64	   *ord;
	int32	   *found;

	memset(&src, 0, sizeof(src));
	src.type = kdg_point_type(argtype);
	if (src.type == KD_TYPE_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s takes points of type point, float8[], geometry or geography, not %s",
						fname, format_type_be(argtype))));
	src.extra = kdg_type_extra(src.type);
	src.keyattnum = InvalidAttrNumber;
	src.fname = fname;
	labels->nrows = WinGetPartitionRowCount(winobj);
	labels->label = MemoryContextAllocHuge(partcxt, sizeof(int32) * Max(labels->nrows, 1));

	workcxt = AllocSetContextCreate(CurrentMemoryContext, "kdgpu clustering",
									ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(workcxt);
	src.mcxt = workcxt;
	ord = palloc_extended(sizeof(int64) * Max(labels->nrows, 1), MCXT_ALLOC_HUGE);
	read_partition(winobj, &src, labels->nrows, ord, fname);
	found = kdg_cluster_dbscan(&src, eps, minpoints, fname);
	for (int64 pos = 0; pos < labels->nrows; pos++)
		labels->label[pos] = ord[pos] < 0 ? -1 : found[ord[pos]];
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(workcxt);
	labels->done = true;
}

/* Error unless minpoints is >= 0. */
static void
check_minpoints(int32 minpoints, const char *fname)
{
	if (minpoints < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"minpoints\" of %s must be >= 0, not %d",
						fname, minpoints)));
}

/*
 * The label of the window function's current row, or NULL.  On the first
 * call of a partition, the partition is clustered: within the distance of
 * argument 1 (called argname), and for DBSCAN with argument 2's minpoints,
 * else as components.
 */
static Datum
window_label(FunctionCallInfo fcinfo, const char *fname, const char *argname,
			 bool dbscan)
{
	WindowObject winobj = PG_WINDOW_OBJECT();
	KdgClusterLabels *labels = WinGetPartitionLocalMemory(winobj,
														  sizeof(KdgClusterLabels));
	int64		pos;

	if (!labels->done)
	{
		double		eps = DatumGetFloat8(first_row_arg(winobj, 1, fname, argname));
		int32		minpoints = dbscan ?
			DatumGetInt32(first_row_arg(winobj, 2, fname, "minpoints")) : 1;

		kdg_check_radius(eps, argname, 0);
		check_minpoints(minpoints, fname);
		partition_labels(fcinfo, labels, fname, eps, Max(minpoints, 1));
	}
	pos = WinGetCurrentPosition(winobj);
	if (labels->label[pos] < 0)
		PG_RETURN_NULL();
	PG_RETURN_INT32(labels->label[pos]);
}

/*
 * kd_cluster_dbscan(col, eps, minpoints) OVER (...): the row's DBSCAN
 * cluster, or NULL for noise and rows with no point.
 */
Datum
kdgpu_cluster_dbscan(PG_FUNCTION_ARGS)
{
	return window_label(fcinfo, "kd_cluster_dbscan", "eps", true);
}

/*
 * kd_cluster_within(col, distance) OVER (...): the row's component of the
 * rows within distance of each other, or NULL for a row with no point.
 */
Datum
kdgpu_cluster_within(PG_FUNCTION_ARGS)
{
	return window_label(fcinfo, "kd_cluster_within", "distance", false);
}

/*
 * Return the labels of a table's points (the table form of both
 * functions): a row per point, its identity and its label.
 */
static Datum
table_labels(FunctionCallInfo fcinfo, const char *fname, bool dbscan)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KdArgs		args;
	KdTable    *t = palloc0(sizeof(KdTable));
	KdSource   *src = &t->head;
	double		eps;
	int32		minpoints = 1;
	int32	   *label;

	kdg_args(fcinfo, &args, t);
	eps = PG_GETARG_FLOAT8(args.next);
	kdg_check_radius(eps, dbscan ? "eps" : "distance", 0);
	if (dbscan)
	{
		minpoints = PG_GETARG_INT32(args.next + 1);
		check_minpoints(minpoints, fname);
	}
	kdg_table_read(t);
	label = kdg_cluster_dbscan(src, eps, Max(minpoints, 1), fname);
	InitMaterializedSRF(fcinfo, 0);
	for (int64 i = 0; i < src->n; i++)
	{
		uint64		ref = kdg_row_ref(src, i);
		ItemPointerData tid;
		Datum		values[2];
		bool		nulls[2] = {false, label[i] < 0};

		if (t->ident == KD_IDENT_KEY)
			values[0] = Int64GetDatum(kdg_ref_to_key(ref));
		else
		{
			kdg_ref_to_tid(ref, &tid);
			values[0] = PointerGetDatum(&tid);
		}
		values[1] = Int32GetDatum(label[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		if ((i & 65535) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	return (Datum) 0;
}

/*
 * kd_dbscan(rel [, col], eps, minpoints [, key_col]): every point's DBSCAN
 * cluster, as (nn_ctid or nn_key, cluster).
 */
Datum
kdgpu_dbscan(PG_FUNCTION_ARGS)
{
	return table_labels(fcinfo, "kd_dbscan", true);
}

/*
 * kd_components(rel [, col], distance [, key_col]): every point's
 * component of the points within distance of each other.
 */
Datum
kdgpu_components(PG_FUNCTION_ARGS)
{
	return table_labels(fcinfo, "kd_components", false);
}
