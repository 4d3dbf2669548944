//! Chunks on pgvector: vectors (inserted by [`super::chunks::insert`]) searched on the
//! server by exact cosine distance, so no vector is held in the process.
//!
//! The search scans the model's rows (`ORDER BY embedding <=> $query`): no HNSW or
//! ivfflat index, since those need one fixed dimension per column and approximate the
//! ranking, while the column holds every model's vectors and the ranking must equal
//! the in-process one.

use oxydra_memory::MemoryError;
use oxydra_types::SessionId;
use pgvector::Vector;

use crate::database::PostgresDatabase;

/// Up to `limit` chunks of `model` whose vector has a positive cosine with the unit
/// `query`, best first (ties to the older chunk), with that cosine; only chunks of
/// `session` when one is given. The same hits as the in-process `VectorIndex`.
pub(super) async fn search(
    db: &PostgresDatabase,
    ext: &str,
    model: &str,
    query: &[f32],
    session: Option<&SessionId>,
    limit: usize,
) -> Result<Vec<(i64, f32)>, MemoryError> {
    let action = "vector search";
    if limit == 0 || query.is_empty() {
        return Ok(Vec::new());
    }
    let dims = i32::try_from(query.len()).unwrap_or(i32::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let client = db.client().await?;
    // A cosine distance below 1 is a positive cosine; a zero vector's distance is NaN,
    // which no comparison lets through. Ascending, the distances below 1 come first
    // (NaN sorts last), so filtering after the limit keeps the best of them, and the
    // distance is computed once per row.
    let statement = client
        .prepare_cached(&format!(
            "SELECT id, 1 - distance FROM (
                SELECT id, embedding OPERATOR({ext}.<=>) $1::{ext}.vector AS distance
                FROM chunks
                WHERE model = $2 AND dims = $3 AND ($4::TEXT IS NULL OR session_id = $4)
                ORDER BY distance, id LIMIT $5
             ) AS nearest
             WHERE distance < 1
             ORDER BY distance, id"
        ))
        .await
        .map_err(|e| db.error(action, &e))?;
    let rows = client
        .query(
            &statement,
            &[
                &Vector::from(query.to_vec()),
                &model,
                &dims,
                &session.map(SessionId::as_str),
                &limit,
            ],
        )
        .await
        .map_err(|e| db.error(action, &e))?;
    rows.iter()
        .map(|row| Ok((row.try_get::<_, i64>(0)?, row.try_get::<_, f64>(1)? as f32)))
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()
        .map_err(|e| db.error(action, &e).into())
}
