/* SPDX-License-Identifier: ISC */
/*
 * store_bdb.h: the functions of store_bdb.c that take libdb's own types,
 * for the store's files that include <db.h> (include it first); the rest
 * of store_bdb.c's are in store_int.h.
 */
#ifndef ANKUSA_STORE_BDB_H
#define ANKUSA_STORE_BDB_H

int	 bdb_app_dispatch(DB_ENV *, DBT *, DB_LSN *, db_recops);
void	 bdb_dbt_user(DBT *, void *, size_t, int);

#endif /* ANKUSA_STORE_BDB_H */
