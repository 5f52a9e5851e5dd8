/*
 * status_funcs.c
 *	  kd_status, kd_devices, kd_load and kd_unload: what kdgpu would run on,
 *	  and the residency of trees.
 *
 * The kd_* functions read the rows visible to their query, and search the
 * tree of a kdgpu index on the column when it holds exactly those rows
 * (index_tree.c); otherwise they build a tree for the query.  Index trees
 * are cached per backend (kdam_cache.c).  kd_load on an indexed table loads
 * the index's tree and keeps its device copy on the GPU, for this and later
 * versions of the index, until kd_unload; on a table with no matching index
 * tree it builds a tree, reports what that costs and where it ran, and
 * keeps nothing.  Probing the GPU here opens the GPU object, which is the
 * first use of it in this backend if nothing else has used it.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "am/kdam.h"
#include "funcs/funcs.h"
#include "service/service.h"

PG_FUNCTION_INFO_V1(kdgpu_status);
PG_FUNCTION_INFO_V1(kdgpu_devices);
PG_FUNCTION_INFO_V1(kdgpu_load);
PG_FUNCTION_INFO_V1(kdgpu_unload);

static const char *const device_names[] = {"auto", "cpu", "gpu"};

/* Build a composite result from values of the function's row type. */
static Datum
kdg_row(FunctionCallInfo fcinfo, Datum *values, bool *nulls)
{
	TupleDesc	desc;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
}

/*
 * kd_status(): the device setting, whether a GPU is usable (and why not),
 * the settings in force, the trees held in memory, the GPU service, and
 * where this backend's last batched work ran and why.
 */
Datum
kdgpu_status(PG_FUNCTION_ARGS)
{
	KdGpuInfo	info;
	char		why[256] = "";
	bool		usable = kde_gpu_available(&info, why, sizeof(why));
	KdExec		exec;
	Datum		values[10];
	bool		nulls[10] = {false};
	const char *runs_on;
	int			trees;
	int			copies;
	int64		copied_rows;
	int64		kept_rows;
	int			on_gpu;
	Size		gpu_bytes;

	kdg_exec_prepare(&exec);
	kdam_cache_usage(&trees, &on_gpu, &gpu_bytes);
	if (kdgpu_device == KD_DEVICE_CPU)
		runs_on = "cpu";
	else if (usable)
		runs_on = kdgpu_device == KD_DEVICE_GPU ? "gpu" : "gpu for large work, cpu otherwise";
	else
		runs_on = kdgpu_device == KD_DEVICE_GPU ? "nothing: no GPU is usable" : "cpu";

	values[0] = CStringGetTextDatum(device_names[kdgpu_device]);
	values[1] = CStringGetTextDatum(runs_on);
	values[2] = BoolGetDatum(usable);
	if (usable)
		values[3] = CStringGetTextDatum(psprintf("%s (%d device%s)", info.name,
												 info.device_count,
												 info.device_count == 1 ? "" : "s"));
	else
		values[3] = CStringGetTextDatum(why[0] ? why : "no GPU");
	values[4] = CStringGetTextDatum(kdgpu_gpu_library);
	values[5] = Int32GetDatum(exec.threads);
	values[6] = Int32GetDatum(trees);
	kdg_index_rows_usage(&copies, &copied_rows, &kept_rows);
	values[7] = CStringGetTextDatum(psprintf("%d cop%s of indexes' rows (" INT64_FORMAT " rows, and " INT64_FORMAT
											 " rows with the pages written since VACUUM) and %d index tree%s "
											 "cached in this backend, %d on the GPU (%zu MB); the kd_* functions "
											 "take a table's rows from its kdgpu index and search one tree over "
											 "them, made once per version of the index, and keep the rows of "
											 "pages written since VACUUM until those change (last_run says how "
											 "many table pages a call read, or why it read the table)",
											 copies, copies == 1 ? "y" : "ies", copied_rows, kept_rows,
											 trees, trees == 1 ? "" : "s", on_gpu,
											 (gpu_bytes + (1 << 20) - 1) >> 20));
	values[8] = CStringGetTextDatum(kdg_service_describe());
	if (kdg_last_run[0])
		values[9] = CStringGetTextDatum(kdg_last_run);
	else
		nulls[9] = true;
	PG_RETURN_DATUM(kdg_row(fcinfo, values, nulls));
}

/*
 * kd_devices(): the GPUs in use, a row each: every device the GPU service
 * uses, or the one a backend opens itself; no rows without a usable GPU.
 */
Datum
kdgpu_devices(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KdGpuInfo	devices[KDG_MAX_DEVICES];
	char		why[256];
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	n = kdg_service_devices(devices);
	if (n == 0 && kde_gpu_available(&devices[0], why, sizeof(why)))
		n = 1;
	for (int d = 0; d < n; d++)
	{
		KdGpuInfo  *info = &devices[d];
		Datum		values[8];
		bool		nulls[8] = {false};

		values[0] = Int32GetDatum(info->device);
		values[1] = CStringGetTextDatum(info->name);
		values[2] = CStringGetTextDatum(psprintf("%d.%d", info->cc_major, info->cc_minor));
		values[3] = Int64GetDatum(info->total_memory / (1024 * 1024));
		values[4] = Int64GetDatum(info->free_memory / (1024 * 1024));
		values[5] = Int32GetDatum(info->multiprocessors);
		values[6] = CStringGetTextDatum(psprintf("%d.%d", info->driver_version / 1000,
												 (info->driver_version % 1000) / 10));
		values[7] = CStringGetTextDatum(psprintf("%d.%d", info->runtime_version / 1000,
												 (info->runtime_version % 1000) / 10));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * kd_load(rel [, col]): read the table and load the tree of the kdgpu index
 * that holds exactly its rows, keeping it on the GPU, or else build a tree
 * (not kept); report the points, dimensions, device, time taken, whether
 * the tree is kept and the index.
 */
Datum
kdgpu_load(PG_FUNCTION_ARGS)
{
	KdArgs		args;
	KdTable		t;
	KdSource	src;
	KdgTree    *found;
	KdTree	   *tree;
	Oid			indexoid;
	bool		used_gpu = false;
	instr_time	start;
	instr_time	duration;
	Datum		values[6];
	bool		nulls[6] = {false};

	if (get_rel_relkind(PG_GETARG_OID(0)) == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a partitioned table", get_rel_name(PG_GETARG_OID(0))),
				 errdetail("kd_load loads the index tree of one table."),
				 errhint("Load each partition: SELECT kd_load(relid) FROM pg_partition_tree('%s') WHERE isleaf.",
						 get_rel_name(PG_GETARG_OID(0)))));
	kdg_args(fcinfo, &args, &t);
	src = t.head;
	kdg_source_read(&src);
	INSTR_TIME_SET_CURRENT(start);
	found = kdg_index_tree_load(&src, &indexoid);
	if (found)
		used_gpu = found->tree->gpu != NULL;
	else if ((tree = kdg_build_tree(&src, &used_gpu)) != NULL)
		kde_tree_free(tree);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);

	values[0] = Int64GetDatum(src.n);
	values[1] = Int32GetDatum(src.dim);
	values[2] = CStringGetTextDatum(used_gpu ? "gpu" : "cpu");
	values[3] = Float8GetDatum(INSTR_TIME_GET_MILLISEC(duration));
	values[4] = BoolGetDatum(OidIsValid(indexoid));
	values[5] = ObjectIdGetDatum(indexoid);
	nulls[1] = src.n == 0;
	nulls[5] = !OidIsValid(indexoid);
	PG_RETURN_DATUM(kdg_row(fcinfo, values, nulls));
}

/*
 * kd_unload(rel): stop keeping the trees of rel's kdgpu indexes on the GPU
 * and free their device copies; whether kd_load had kept one.
 */
Datum
kdgpu_unload(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Relation	heap;
	List	   *indexes;
	ListCell   *lc;
	bool		found = false;

	/* the caller's right to read the table, checked before locking it */
	if (get_rel_name(relid) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, get_relkind_objtype(get_rel_relkind(relid)),
					   get_rel_name(relid));
	heap = table_open(relid, AccessShareLock);
	indexes = RelationGetIndexList(heap);

	foreach(lc, indexes)
	{
		found |= kdam_cache_gpu_forget(lfirst_oid(lc));
		kdg_service_forget(MyDatabaseId, lfirst_oid(lc));
	}
	list_free(indexes);
	table_close(heap, AccessShareLock);
	PG_RETURN_BOOL(found);
}
