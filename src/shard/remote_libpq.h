/*
 * remote_libpq.h
 *	  The libpq functions that the foreign partitions' code calls, found
 *	  through postgres_fdw's library, which links libpq (remote.c,
 *	  kdg_remote_load).
 *
 * kdgpu.so does not link libpq itself: that loaded libpq and the twenty
 * libraries it needs (TLS, Kerberos, LDAP) into every backend at its first
 * use of kdgpu, more than half of a session's first LIMIT 10, for the few
 * sessions that meet a foreign partition, which load postgres_fdw anyway.
 */
#ifndef REMOTE_LIBPQ_H
#define REMOTE_LIBPQ_H

#include "libpq-fe.h"

typedef struct KdLibpq
{
	void		(*clear) (PGresult *res);
	int			(*consumeInput) (PGconn *conn);
	char	   *(*errorMessage) (const PGconn *conn);
	int			(*getisnull) (const PGresult *res, int tup_num, int field_num);
	int			(*getlength) (const PGresult *res, int tup_num, int field_num);
	PGresult   *(*getResult) (PGconn *conn);
	char	   *(*getvalue) (const PGresult *res, int tup_num, int field_num);
	int			(*isBusy) (PGconn *conn);
	int			(*nfields) (const PGresult *res);
	int			(*ntuples) (const PGresult *res);
	ExecStatusType (*resultStatus) (const PGresult *res);
	int			(*sendQueryParams) (PGconn *conn, const char *command,
									int nParams, const Oid *paramTypes,
									const char *const *paramValues,
									const int *paramLengths,
									const int *paramFormats, int resultFormat);
	int			(*setSingleRowMode) (PGconn *conn);
	int			(*socket) (const PGconn *conn);
} KdLibpq;

/* set by kdg_remote_load, before any connection is taken */
extern KdLibpq kdg_pq;

#endif							/* REMOTE_LIBPQ_H */
