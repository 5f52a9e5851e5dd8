/*
 * status_funcs.c
 *	  kd_status, kd_devices, kd_load and kd_unload: what kdgpu would run on,
 *	  and the residency of trees.
 *
 * The kd_* functions read tables, not kdgpu indexes, so there is nothing to
 * keep: a tree is built for one query from a scan under that query's
 * snapshot, which is what makes it exact, and a tree kept across queries
 * could miss rows committed since.  So kd_load builds a table's tree and reports what that
 * costs and where it ran, without keeping it, and kd_unload has nothing to
 * drop.  Probing the GPU here opens the GPU object, which is the first use
 * of it in this backend if nothing else has used it.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"

#include "kdgpu.h"

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
 * the settings in force and the trees held in memory.
 */
Datum
kdgpu_status(PG_FUNCTION_ARGS)
{
	KdGpuInfo	info;
	char		why[256] = "";
	bool		usable = kd_gpu_available(&info, why, sizeof(why));
	KdExec		exec;
	Datum		values[8];
	bool		nulls[8] = {false};
	const char *runs_on;

	kdg_exec_prepare(&exec);
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
	values[6] = Int32GetDatum(0);
	values[7] = CStringGetTextDatum("the kd_* functions build a tree for each query "
									"from a scan under its snapshot; none is cached");
	PG_RETURN_DATUM(kdg_row(fcinfo, values, nulls));
}

/* kd_devices(): the GPU in use, one row; no rows without a usable GPU. */
Datum
kdgpu_devices(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KdGpuInfo	info;
	char		why[256];
	Datum		values[8];
	bool		nulls[8] = {false};

	InitMaterializedSRF(fcinfo, 0);
	if (!kd_gpu_available(&info, why, sizeof(why)))
		return (Datum) 0;
	values[0] = Int32GetDatum(info.device);
	values[1] = CStringGetTextDatum(info.name);
	values[2] = CStringGetTextDatum(psprintf("%d.%d", info.cc_major, info.cc_minor));
	values[3] = Int64GetDatum(info.total_memory / (1024 * 1024));
	values[4] = Int64GetDatum(info.free_memory / (1024 * 1024));
	values[5] = Int32GetDatum(info.multiprocessors);
	values[6] = CStringGetTextDatum(psprintf("%d.%d", info.driver_version / 1000,
											 (info.driver_version % 1000) / 10));
	values[7] = CStringGetTextDatum(psprintf("%d.%d", info.runtime_version / 1000,
											 (info.runtime_version % 1000) / 10));
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/*
 * kd_load(rel [, col]): read the table, build its tree and report the
 * points, dimensions, device and build time.  The tree is not kept.
 */
Datum
kdgpu_load(PG_FUNCTION_ARGS)
{
	KdArgs		args;
	KdSource	src;
	KdTree	   *tree;
	bool		used_gpu = false;
	instr_time	start;
	instr_time	duration;
	Datum		values[5];
	bool		nulls[5] = {false};

	kdg_args(fcinfo, &args, &src);
	kdg_source_read(&src);
	INSTR_TIME_SET_CURRENT(start);
	tree = kdg_source_tree(&src, &used_gpu);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	if (tree)
		kd_tree_free(tree);

	values[0] = Int64GetDatum(src.n);
	values[1] = Int32GetDatum(src.dim);
	values[2] = CStringGetTextDatum(used_gpu ? "gpu" : "cpu");
	values[3] = Float8GetDatum(INSTR_TIME_GET_MILLISEC(duration));
	values[4] = BoolGetDatum(false);
	nulls[1] = src.n == 0;
	PG_RETURN_DATUM(kdg_row(fcinfo, values, nulls));
}

/* kd_unload(rel): drop rel's cached tree; false, as none is ever kept. */
Datum
kdgpu_unload(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(false);
}
