//! Indexed chunks: rows with their vectors, full-text candidates from the `tsvector`
//! index, and the in-process vector cache kept in step with the table (the vectors of
//! a schema on pgvector are in `pgvector_chunks`).

use oxydra_memory::{
    MemoryError, NewChunk, VectorIndex, choose_terms, decode_vector, encode_vector,
};
use oxydra_types::SessionId;
use pgvector::Vector;
use tokio_postgres::IsolationLevel;
use tokio_postgres::types::ToSql;

use crate::database::PostgresDatabase;
use crate::now_ms;
use crate::pgvector::VectorSetup;

/// What the cache was loaded from: how many vectors of its model the table held and
/// the highest chunk id. Ids only grow, so any insert raises the second and any delete
/// without an insert lowers the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Generation {
    count: i64,
    max_id: i64,
}

/// The vector cache with the generation it reflects.
pub(super) struct CachedIndex {
    pub(super) generation: Generation,
    pub(super) index: VectorIndex,
}

/// Inserts `chunks` in one transaction; their ids, in order. The vectors go in as
/// the database's vector setup keeps them: little-endian f32 bytes, or pgvector's
/// `vector` type (of the extension's schema).
pub(super) async fn insert(
    db: &PostgresDatabase,
    session: Option<&SessionId>,
    model: &str,
    chunks: &[NewChunk],
) -> Result<Vec<i64>, MemoryError> {
    let action = "store chunks";
    let vectors = db.vectors();
    let now = now_ms();
    let mut client = db.client().await?;
    let tx = client
        .transaction()
        .await
        .map_err(|e| db.error(action, &e))?;
    let embedding = match vectors {
        VectorSetup::PgVector { schema } => format!("$5::{schema}.vector"),
        VectorSetup::InProcess { .. } => "$5".to_owned(),
    };
    let statement = tx
        .prepare_cached(&format!(
            "INSERT INTO chunks (session_id, text, model, dims, embedding, created_at)
             VALUES ($1, $2, $3, $4, {embedding}, $6) RETURNING id"
        ))
        .await
        .map_err(|e| db.error(action, &e))?;
    let mut ids = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        let dims = i32::try_from(chunk.vector.len()).unwrap_or(i32::MAX);
        let embedding: Box<dyn ToSql + Sync + Send> = match vectors {
            VectorSetup::PgVector { .. } => Box::new(Vector::from(chunk.vector.clone())),
            VectorSetup::InProcess { .. } => Box::new(encode_vector(&chunk.vector)),
        };
        let id: i64 = tx
            .query_one(
                &statement,
                &[
                    &session.map(SessionId::as_str),
                    &chunk.text,
                    &model,
                    &dims,
                    &*embedding,
                    &now,
                ],
            )
            .await
            .and_then(|row| row.try_get(0))
            .map_err(|e| db.error(action, &e))?;
        ids.push(id);
    }
    tx.commit().await.map_err(|e| db.error(action, &e))?;
    Ok(ids)
}

/// Brings `cache` up to date with the table for vectors of `model` with `dims`
/// dimensions: nothing when nothing changed, only the new rows when rows were only
/// added, a full reload otherwise. Reads one snapshot, so the generation and the
/// vectors agree.
pub(super) async fn refresh_index(
    db: &PostgresDatabase,
    cache: &mut Option<CachedIndex>,
    model: &str,
    dims: usize,
) -> Result<(), MemoryError> {
    let action = "load vectors";
    let dims_sql = i32::try_from(dims).unwrap_or(i32::MAX);
    let mut client = db.client().await?;
    let tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(|e| db.error(action, &e))?;
    let current = tx
        .query_one(
            "SELECT count(*), coalesce(max(id), 0) FROM chunks WHERE model = $1 AND dims = $2",
            &[&model, &dims_sql],
        )
        .await
        .and_then(|row| {
            Ok(Generation {
                count: row.try_get(0)?,
                max_id: row.try_get(1)?,
            })
        })
        .map_err(|e| db.error(action, &e))?;
    let cached = cache.as_ref().map(|c| c.generation);
    if cached == Some(current) {
        return Ok(());
    }
    // Only appended since: load the rows above the cached maximum; if as many rows as
    // the count grew by come back, no older row was deleted.
    let (mut index, after) = match (cache.take(), cached) {
        (Some(old), Some(generation)) if current.count > generation.count => {
            (old.index, generation.max_id)
        }
        _ => (VectorIndex::new(dims, 0), 0),
    };
    let base = if after == 0 { 0 } else { index.len() as i64 };
    let rows = tx
        .query(
            "SELECT id, session_id, embedding FROM chunks
             WHERE model = $1 AND dims = $2 AND id > $3 ORDER BY id",
            &[&model, &dims_sql, &after],
        )
        .await
        .map_err(|e| db.error(action, &e))?;
    if after != 0 && base + rows.len() as i64 != current.count {
        drop(rows);
        drop(tx);
        // Rows were deleted as well: start again from scratch.
        return Box::pin(refresh_index(db, cache, model, dims)).await;
    }
    let mut vector = Vec::with_capacity(dims);
    for row in rows {
        let id: i64 = row.try_get(0).map_err(|e| db.error(action, &e))?;
        let session: Option<&str> = row.try_get(1).map_err(|e| db.error(action, &e))?;
        let blob: &[u8] = row.try_get(2).map_err(|e| db.error(action, &e))?;
        decode_vector(blob, &mut vector);
        if !index.push(id, session, &vector) {
            return Err(MemoryError::Corrupt {
                location: db.location().to_owned(),
                what: format!("chunk {id} embedding"),
                message: format!("{} bytes for {dims} dimensions", blob.len()),
            });
        }
    }
    tracing::debug!(vectors = index.len(), "vector cache refreshed");
    *cache = Some(CachedIndex {
        generation: current,
        index,
    });
    Ok(())
}

/// `terms` as a `tsquery` matching any of them; each term is quoted (and stripped of
/// anything but letters and digits), so no query syntax gets through.
fn any_of(terms: &[String]) -> Option<String> {
    let quoted: Vec<String> = terms
        .iter()
        .map(|term| {
            term.chars()
                .filter(|c| c.is_alphanumeric())
                .collect::<String>()
        })
        .filter(|term| !term.is_empty())
        .map(|term| format!("'{term}'"))
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(" | "))
}

/// The terms of `terms` worth a full-text search (see [`choose_terms`]), by how many
/// chunks contain each. Counting stops past `max_docs`, so a very common word costs no
/// full count; only when every word is that common are they counted fully, for the
/// rarest.
pub(super) async fn selective_terms(
    db: &PostgresDatabase,
    terms: &[String],
    max_docs: usize,
) -> Result<Vec<String>, MemoryError> {
    let action = "read term frequencies";
    let client = db.client().await?;
    let statement = client
        .prepare_cached(
            "SELECT count(*) FROM (
                SELECT 1 FROM chunks WHERE tsv @@ to_tsquery('simple', $1) LIMIT $2
             ) AS found",
        )
        .await
        .map_err(|e| db.error(action, &e))?;
    let cap = i64::try_from(max_docs)
        .unwrap_or(i64::MAX - 1)
        .saturating_add(1);
    let count = |term: String, limit: i64| {
        let (client, statement) = (&client, &statement);
        async move {
            let Some(query) = any_of(std::slice::from_ref(&term)) else {
                return Ok(None);
            };
            client
                .query_one(statement, &[&query, &limit])
                .await
                .and_then(|row| row.try_get::<_, i64>(0))
                .map(|docs| Some((term, usize::try_from(docs).unwrap_or(0))))
                .map_err(|e| db.error(action, &e))
        }
    };
    let mut counted = Vec::with_capacity(terms.len());
    for term in terms {
        counted.extend(count(term.clone(), cap).await?);
    }
    if counted.iter().any(|(_, docs)| *docs <= max_docs) {
        return Ok(choose_terms(counted, max_docs));
    }
    // Every word is common: count them fully, for the rarest.
    let mut full = Vec::with_capacity(counted.len());
    for (term, _) in counted {
        full.extend(count(term, i64::MAX).await?);
    }
    Ok(choose_terms(full, max_docs))
}

/// Up to `limit` chunks matching any of `terms`, best `ts_rank` first.
pub(super) async fn text_search(
    db: &PostgresDatabase,
    terms: &[String],
    session: Option<&SessionId>,
    limit: usize,
) -> Result<Vec<(i64, f32)>, MemoryError> {
    let action = "full-text search";
    let Some(query) = any_of(terms) else {
        return Ok(Vec::new());
    };
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let client = db.client().await?;
    let statement = client
        .prepare_cached(
            "SELECT id, ts_rank(tsv, query) AS rank
             FROM chunks, to_tsquery('simple', $1) AS query
             WHERE tsv @@ query AND ($2::TEXT IS NULL OR session_id = $2)
             ORDER BY rank DESC, id LIMIT $3",
        )
        .await
        .map_err(|e| db.error(action, &e))?;
    let rows = client
        .query(
            &statement,
            &[&query, &session.map(SessionId::as_str), &limit],
        )
        .await
        .map_err(|e| db.error(action, &e))?;
    rows.iter()
        .map(|row| Ok((row.try_get::<_, i64>(0)?, row.try_get::<_, f32>(1)?)))
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()
        .map_err(|e| db.error(action, &e).into())
}

/// The session and text of each chunk of `ids` that still exists.
pub(super) async fn fetch(
    db: &PostgresDatabase,
    ids: &[i64],
) -> Result<Vec<(i64, Option<String>, String)>, MemoryError> {
    let action = "read chunks";
    let client = db.client().await?;
    let rows = client
        .query(
            "SELECT id, session_id, text FROM chunks WHERE id = ANY($1)",
            &[&ids],
        )
        .await
        .map_err(|e| db.error(action, &e))?;
    rows.iter()
        .map(|row| Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?)))
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()
        .map_err(|e| db.error(action, &e).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsquery_terms_are_quoted_and_stripped_of_syntax() {
        let terms = vec!["deploy".to_owned(), "x'|!&:*".to_owned(), "été".to_owned()];
        assert_eq!(any_of(&terms).unwrap(), "'deploy' | 'x' | 'été'");
        assert_eq!(any_of(&["'|&!()".to_owned()]), None);
        assert_eq!(any_of(&[]), None);
    }
}
