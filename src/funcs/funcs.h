/*
 * funcs.h
 *	  The SQL functions and the rows they return.
 *
 * The *_funcs.c files hold the functions SQL calls; output.c makes their
 * rows.  Calls shard/ and below.
 */
#ifndef KDGPU_FUNCS_H
#define KDGPU_FUNCS_H

#include "shard/shard.h"

/* output.c */
extern KdRows *kdg_rows_pairs(const KdTable *t, const KdAnswer *ans,
							  KdQueryKey key, const KdTable *query_t);
extern KdRows *kdg_rows_arrays(const KdTable *t, const KdAnswer *ans);
extern KdRows *kdg_rows_make(const KdTable *t, const KdAnswer *ans,
							 KdQueryKey key, const KdTable *query_t,
							 uint64 *qrefs, bool arrays);
extern KdRows *kdg_rows_sliced(const KdTable *t, KdQueryKey key,
							   const KdTable *query_t, uint64 *qrefs,
							   bool arrays, int64 nq, KdRowsSliceFn fn,
							   void *arg);
extern void kdg_rows_rewind(KdRows *rows);
extern void kdg_rows_seek(KdRows *rows, int64 from, int64 to);
extern bool kdg_rows_next(KdRows *rows, TupleDesc desc, const bool *needed,
						  Datum *values, bool *nulls);
extern bool kdg_rows_read_hits(const KdRows *rows, TupleDesc desc,
							   const bool *needed);
extern void kdg_rows_materialize(FunctionCallInfo fcinfo, KdRows *rows);

/*
 * The functions returning rows of neighbours: each reads its arguments from
 * fcinfo and answers them (knn_funcs.c, range_funcs.c, allknn_funcs.c,
 * pairs_funcs.c).
 */
typedef KdRows *(*KdRowsFn) (FunctionCallInfo fcinfo);
extern KdRows *kdg_knn_rows(FunctionCallInfo fcinfo);
extern KdAnswer *kdg_knn_join_answer(KdTable *t, Datum queries, Oid qtype, int k);
extern KdRows *kdg_knn_join_rows(FunctionCallInfo fcinfo);
extern KdRows *kdg_knn_join_table_rows(FunctionCallInfo fcinfo);
extern KdTable *kdg_query_table(FunctionCallInfo fcinfo, const KdArgs *args,
								const KdTable *t);
extern KdRows *kdg_all_knn_rows(FunctionCallInfo fcinfo);
extern KdRows *kdg_all_knn_arrays_rows(FunctionCallInfo fcinfo);
extern KdRows *kdg_range_rows(FunctionCallInfo fcinfo);
extern KdRows *kdg_range_join_rows(FunctionCallInfo fcinfo);
extern KdRows *kdg_range_join_table_rows(FunctionCallInfo fcinfo);
extern KdRows *kdg_box_rows(FunctionCallInfo fcinfo);
extern KdRows *kdg_pairs_within_rows(FunctionCallInfo fcinfo);

/* postgis_funcs.c: PostGIS's functions and radii, for index conditions */
extern Oid	kdg_function_oid_args(Oid nsp, const char *name, int nargs,
								  const Oid *argtypes);
extern Oid	kdg_function_oid(Oid nsp, const char *name, Oid arg0, Oid arg1);
struct Node;
extern struct Node *kdg_geography_reach(struct Node *radius, double rel);

/* rows_funcs.c */
extern KdRowsFn kdg_rows_function(Oid funcoid);
struct FuncExpr;
extern double kdg_rows_hits(struct FuncExpr *call, double rows);

#endif							/* KDGPU_FUNCS_H */
