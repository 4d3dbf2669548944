//! Indexed chunks: rows, their FTS5 index and their embedding vectors.

use std::path::Path;

use oxydra_types::SessionId;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::now_ms;
use crate::error::MemoryError;
use crate::retrieval::{NewChunk, VectorIndex, choose_terms, decode_vector, encode_vector};

/// Insert `chunks` in one transaction (the FTS index follows by trigger); their ids.
pub fn insert_chunks(
    conn: &mut Connection,
    path: &Path,
    session: Option<&SessionId>,
    model: &str,
    chunks: &[NewChunk],
) -> Result<Vec<i64>, MemoryError> {
    let err = |source| super::error::db(path, "store chunks", source);
    let now = now_ms();
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err)?;
    let mut ids = Vec::with_capacity(chunks.len());
    {
        let mut stmt = tx
            .prepare_cached(
                "INSERT INTO chunks (session_id, text, model, dims, embedding, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .map_err(err)?;
        for chunk in chunks {
            stmt.execute(params![
                session.map(SessionId::as_str),
                chunk.text,
                model,
                chunk.vector.len() as i64,
                encode_vector(&chunk.vector),
                now
            ])
            .map_err(err)?;
            ids.push(tx.last_insert_rowid());
        }
    }
    tx.commit().map_err(err)?;
    Ok(ids)
}

/// Load every vector stored under `model` with `dims` dimensions.
pub fn load_index(
    conn: &Connection,
    path: &Path,
    model: &str,
    dims: usize,
) -> Result<VectorIndex, MemoryError> {
    let err = |source| super::error::db(path, "load vectors", source);
    let version = data_version(conn, path)?;
    let mut index = VectorIndex::new(dims, version);
    let mut stmt = conn
        .prepare(
            "SELECT id, session_id, embedding FROM chunks
             WHERE model = ?1 AND dims = ?2 ORDER BY id",
        )
        .map_err(err)?;
    let mut rows = stmt.query(params![model, dims as i64]).map_err(err)?;
    let mut vector = Vec::with_capacity(dims);
    while let Some(row) = rows.next().map_err(err)? {
        let id: i64 = row.get(0).map_err(err)?;
        let session: Option<String> = row.get(1).map_err(err)?;
        let blob = match row.get_ref(2).map_err(err)? {
            ValueRef::Blob(blob) => blob,
            other => {
                return Err(MemoryError::Corrupt {
                    location: super::error::location(path),
                    what: format!("chunk {id} embedding"),
                    message: format!("stored as {:?}, not a blob", other.data_type()),
                });
            }
        };
        decode_vector(blob, &mut vector);
        if !index.push(id, session.as_deref(), &vector) {
            return Err(MemoryError::Corrupt {
                location: super::error::location(path),
                what: format!("chunk {id} embedding"),
                message: format!("{} bytes for {dims} dimensions", blob.len()),
            });
        }
    }
    tracing::debug!(path = %path.display(), vectors = index.len(), "loaded vector cache");
    Ok(index)
}

/// SQLite's `data_version`: changes when another connection commits.
pub fn data_version(conn: &Connection, path: &Path) -> Result<i64, MemoryError> {
    conn.query_row("PRAGMA data_version", [], |row| row.get(0))
        .map_err(|source| super::error::db(path, "read data_version", source))
}

/// Up to `limit` chunks matching the FTS5 expression `expression`, best BM25 first,
/// with score `-bm25` (higher is better).
pub fn fts_search(
    conn: &Connection,
    path: &Path,
    expression: &str,
    session: Option<&SessionId>,
    limit: usize,
) -> Result<Vec<(i64, f32)>, MemoryError> {
    let err = |source| super::error::db(path, "full-text search", source);
    let limit = limit as i64;
    let map =
        |row: &rusqlite::Row<'_>| Ok((row.get::<_, i64>(0)?, -(row.get::<_, f64>(1)? as f32)));
    let hits = match session {
        None => conn
            .prepare_cached(
                "SELECT rowid, bm25(chunks_fts) FROM chunks_fts
                 WHERE chunks_fts MATCH ?1 ORDER BY bm25(chunks_fts) LIMIT ?2",
            )
            .and_then(|mut stmt| {
                stmt.query_map(params![expression, limit], map)?
                    .collect::<Result<Vec<_>, _>>()
            }),
        Some(session) => conn
            .prepare_cached(
                // CROSS JOIN keeps the FTS match as the outer loop (SQLite would
                // otherwise walk the whole session and probe the index per chunk).
                "SELECT chunks_fts.rowid, bm25(chunks_fts) FROM chunks_fts
                 CROSS JOIN chunks ON chunks.id = chunks_fts.rowid
                 WHERE chunks_fts MATCH ?1 AND chunks.session_id = ?2
                 ORDER BY bm25(chunks_fts) LIMIT ?3",
            )
            .and_then(|mut stmt| {
                stmt.query_map(params![expression, session.as_str(), limit], map)?
                    .collect::<Result<Vec<_>, _>>()
            }),
    };
    hits.map_err(err)
}

/// The terms of `terms` worth a full-text search, by their document counts in the
/// FTS5 vocabulary (see [`choose_terms`]).
pub fn selective_terms(
    conn: &Connection,
    path: &Path,
    terms: &[String],
    max_docs: usize,
) -> Result<Vec<String>, MemoryError> {
    let err = |source| super::error::db(path, "read term frequencies", source);
    let mut stmt = conn
        .prepare_cached("SELECT doc FROM chunks_vocab WHERE term = ?1")
        .map_err(err)?;
    let mut counted = Vec::with_capacity(terms.len());
    for term in terms {
        let docs: i64 = stmt
            .query_row([term], |row| row.get(0))
            .optional()
            .map_err(err)?
            .unwrap_or(0);
        counted.push((term.clone(), usize::try_from(docs).unwrap_or(0)));
    }
    Ok(choose_terms(counted, max_docs))
}

/// The session and text of chunk `id`, if it still exists.
pub fn fetch_chunk(
    conn: &Connection,
    path: &Path,
    id: i64,
) -> Result<Option<(Option<String>, String)>, MemoryError> {
    conn.prepare_cached("SELECT session_id, text FROM chunks WHERE id = ?1")
        .and_then(|mut stmt| {
            stmt.query_row([id], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()
        })
        .map_err(|source| super::error::db(path, &format!("read chunk {id}"), source))
}
