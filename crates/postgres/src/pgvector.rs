//! Where vectors are searched: with pgvector on the server when it has the extension,
//! else in the process. Decided once per schema, inside the migration transaction.
//!
//! pgvector is used when the `vector` extension is installed, or available
//! (`pg_available_extensions`) and this login may create it (it is not a trusted
//! extension: that takes a superuser). Then the `memory_pgvector` migrations move the
//! chunks' vectors into a `vector` column, and from then on that schema always uses
//! pgvector. Any failure along the way (no privilege, an undecodable stored vector)
//! is rolled back to a savepoint and leaves the in-process path, with the reason
//! logged.

use deadpool_postgres::Transaction;

use crate::error::{PostgresError, driver_message};
use crate::schema_version::{record, version};

/// The component name of the pgvector migrations in `oxydra_schema_migrations`.
const COMPONENT: &str = "memory_pgvector";

/// How the chunks' vectors are stored and searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VectorBackend {
    /// In a pgvector `vector` column, searched on the server by exact cosine distance
    /// (`ORDER BY embedding <=> $query`); no vector is held in the process.
    PgVector,
    /// As little-endian `f32` bytes, ranked in each process from a cache of every
    /// vector of the embedding model (memory proportional to the chunks, per process).
    InProcess,
}

impl VectorBackend {
    /// `pgvector` or `in-process`, for logs and messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::PgVector => "pgvector",
            Self::InProcess => "in-process",
        }
    }
}

/// What was decided for one schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum VectorSetup {
    /// pgvector, whose objects live in `schema` (quoted, ready to qualify names with).
    PgVector {
        /// The extension's schema as a quoted identifier, e.g. `public`.
        schema: String,
    },
    /// In the process, because of `reason`.
    InProcess {
        /// Why pgvector is not used.
        reason: String,
    },
}

impl VectorSetup {
    /// The backend it names.
    pub(crate) fn backend(&self) -> VectorBackend {
        match self {
            Self::PgVector { .. } => VectorBackend::PgVector,
            Self::InProcess { .. } => VectorBackend::InProcess,
        }
    }
}

/// How many pgvector migrations this build knows.
const SUPPORTED: i64 = 1;

/// Applies the pgvector migrations after version `from`, in `tx`; `ext` is the
/// extension's schema. Never edit a released one: add the next.
///
/// 1: the vectors move from the `bytea` column into a `vector` column of the same
/// name, `embedding`. It is untyped (`vector`, not `vector(n)`) since each embedding
/// model has its own dimensions; a check ties each row's to its `dims`. Its storage is
/// `MAIN`: a row too big for a page slot has its text and `tsvector` compressed or
/// moved out first, so the vector stays inline and uncompressed, as a scan computing
/// a distance per row needs (pgvector's default, `EXTENDED`, compressed sparse vectors
/// and made the scan three times slower).
async fn migrate(
    tx: &Transaction<'_>,
    location: &str,
    ext: &str,
    from: i64,
) -> Result<(), PostgresError> {
    let err = |action: &str, error: tokio_postgres::Error| {
        PostgresError::query(location, action, &driver_message(&error))
    };
    if from < 1 {
        let action = "apply memory_pgvector migration 1";
        tracing::info!(
            location,
            component = COMPONENT,
            version = 1,
            "applying schema migration"
        );
        tx.batch_execute(&format!(
            "ALTER TABLE chunks ADD COLUMN vec {ext}.vector;
             ALTER TABLE chunks ALTER COLUMN vec SET STORAGE MAIN"
        ))
        .await
        .map_err(|e| err(action, e))?;
        backfill(tx, location, ext).await?;
        tx.batch_execute(&format!(
            "ALTER TABLE chunks DROP COLUMN embedding;
             ALTER TABLE chunks RENAME COLUMN vec TO embedding;
             ALTER TABLE chunks ALTER COLUMN embedding SET NOT NULL,
                 ADD CONSTRAINT chunks_embedding_dims CHECK ({ext}.vector_dims(embedding) = dims)"
        ))
        .await
        .map_err(|e| err(action, e))?;
        record(tx, location, COMPONENT, 1).await?;
    }
    Ok(())
}

/// How many rows [`backfill`] converts per statement.
const BACKFILL_BATCH: i64 = 1_000;

/// Copies every chunk's `bytea` vector into the new `vec` column, a batch of rows at
/// a time. A vector whose length does not match its `dims`, or that holds a NaN or an
/// infinity, is an error naming the chunk.
async fn backfill(tx: &Transaction<'_>, location: &str, ext: &str) -> Result<(), PostgresError> {
    let action = "move the stored vectors to pgvector";
    let err = |error: tokio_postgres::Error| {
        PostgresError::query(location, action, &driver_message(&error))
    };
    let update = format!(
        "UPDATE chunks AS c SET vec = v.vec::{ext}.vector
         FROM unnest($1::BIGINT[], $2::TEXT[]) AS v(id, vec) WHERE c.id = v.id"
    );
    let mut after = 0_i64;
    let mut moved = 0_usize;
    let mut vector = Vec::new();
    loop {
        let rows = tx
            .query(
                "SELECT id, dims, embedding FROM chunks WHERE id > $1 ORDER BY id LIMIT $2",
                &[&after, &BACKFILL_BATCH],
            )
            .await
            .map_err(err)?;
        if rows.is_empty() {
            break;
        }
        let mut ids = Vec::with_capacity(rows.len());
        let mut texts = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: i64 = row.try_get(0).map_err(err)?;
            let dims: i32 = row.try_get(1).map_err(err)?;
            let blob: &[u8] = row.try_get(2).map_err(err)?;
            oxydra_memory::decode_vector(blob, &mut vector);
            let problem = if dims < 1 || blob.len() != dims as usize * 4 {
                Some(format!("{} bytes for {dims} dimensions", blob.len()))
            } else if vector.iter().any(|x| !x.is_finite()) {
                Some("a NaN or infinite value".to_owned())
            } else {
                None
            };
            if let Some(problem) = problem {
                return Err(PostgresError::query(
                    location,
                    action,
                    &format!("chunk {id}: {problem}"),
                ));
            }
            ids.push(id);
            texts.push(vector_text(&vector));
            after = id;
        }
        tx.execute(&update, &[&ids, &texts]).await.map_err(err)?;
        moved += ids.len();
    }
    tracing::info!(
        location,
        vectors = moved,
        "stored vectors moved to pgvector"
    );
    Ok(())
}

/// pgvector's text form of `vector`, `[1,-0.5,0.25]`; each value written with the
/// fewest digits that read back to the same `f32`.
fn vector_text(vector: &[f32]) -> String {
    let values: Vec<String> = vector.iter().map(f32::to_string).collect();
    format!("[{}]", values.join(","))
}

/// Decides, inside the migration transaction `tx` (holding the schema's migration
/// lock), whether this schema uses pgvector, applying the pgvector migrations when it
/// starts to; logs the outcome once. `wanted`: whether a schema not yet on pgvector
/// may move to it.
pub(crate) async fn setup(
    tx: &mut Transaction<'_>,
    location: &str,
    wanted: bool,
) -> Result<VectorSetup, PostgresError> {
    let applied = version(tx, location, COMPONENT, SUPPORTED).await?;
    let installed = extension_schema(tx, location).await?;
    let (setup, warn) = if applied > 0 {
        // Already on pgvector: it stays so (the vectors are in its column).
        let Some(schema) = installed else {
            return Err(PostgresError::query(
                location,
                "look for the pgvector extension",
                &"the chunks' vectors are stored with pgvector, but the `vector` extension is no longer installed in this database",
            ));
        };
        migrate(tx, location, &schema, applied).await?;
        (VectorSetup::PgVector { schema }, false)
    } else if !wanted {
        let reason = "pgvector is turned off in the options".to_owned();
        (VectorSetup::InProcess { reason }, false)
    } else {
        match adopt(tx, location, installed).await? {
            Adoption::Adopted { schema } => (VectorSetup::PgVector { schema }, false),
            Adoption::Unused { reason, warn } => (VectorSetup::InProcess { reason }, warn),
        }
    };
    log(location, &setup, warn);
    Ok(setup)
}

/// The outcome of moving a schema to pgvector.
enum Adoption {
    /// On pgvector now; the extension's schema.
    Adopted { schema: String },
    /// Left in process because of `reason`; `warn` when pgvector was there to be had.
    Unused { reason: String, warn: bool },
}

/// Moves a schema not yet on pgvector to it: creates the extension unless it is
/// `installed` (in that schema), then applies the migrations in a savepoint, so that a
/// failure (say an undecodable stored vector) leaves the schema as it was.
async fn adopt(
    tx: &mut Transaction<'_>,
    location: &str,
    installed: Option<String>,
) -> Result<Adoption, PostgresError> {
    let err = |action: &str, error: tokio_postgres::Error| {
        PostgresError::query(location, action, &driver_message(&error))
    };
    let schema = match installed {
        Some(schema) => schema,
        None => {
            let available: bool = tx
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')",
                    &[],
                )
                .await
                .and_then(|row| row.try_get(0))
                .map_err(|e| err("look for the pgvector extension", e))?;
            if !available {
                return Ok(Adoption::Unused {
                    reason:
                        "the server has no pgvector (`vector` is not in pg_available_extensions)"
                            .into(),
                    warn: false,
                });
            }
            if let Err(reason) = create_extension(tx).await {
                return Ok(Adoption::Unused {
                    reason: format!("the pgvector extension could not be created: {reason}"),
                    warn: true,
                });
            }
            match extension_schema(tx, location).await? {
                Some(schema) => schema,
                None => {
                    return Ok(Adoption::Unused {
                        reason: "the pgvector extension is not installed after creating it".into(),
                        warn: true,
                    });
                }
            }
        }
    };
    let savepoint = tx
        .savepoint("oxydra_pgvector")
        .await
        .map_err(|e| err("begin the pgvector migration", e))?;
    match migrate(&savepoint, location, &schema, 0).await {
        Ok(()) => {
            savepoint
                .commit()
                .await
                .map_err(|e| err("apply the pgvector migration", e))?;
            Ok(Adoption::Adopted { schema })
        }
        Err(error) => {
            savepoint
                .rollback()
                .await
                .map_err(|e| err("roll the pgvector migration back", e))?;
            Ok(Adoption::Unused {
                reason: format!("moving the vectors to pgvector failed: {error}"),
                warn: true,
            })
        }
    }
}

/// The `vector` extension's schema, quoted, when it is installed.
async fn extension_schema(
    tx: &Transaction<'_>,
    location: &str,
) -> Result<Option<String>, PostgresError> {
    tx.query_opt(
        "SELECT quote_ident(n.nspname) FROM pg_extension e
         JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'",
        &[],
    )
    .await
    .and_then(|row| row.map(|row| row.try_get(0)).transpose())
    .map_err(|e| {
        PostgresError::query(
            location,
            "look for the pgvector extension",
            &driver_message(&e),
        )
    })
}

/// `CREATE EXTENSION vector` in schema `public` (a schema every deployment in the
/// database can see, and that no test drops), in a savepoint; the server's message
/// when it fails. A database-wide advisory lock keeps two schemas migrating at once
/// from racing to create it.
async fn create_extension(tx: &mut Transaction<'_>) -> Result<(), String> {
    let savepoint = tx
        .savepoint("oxydra_create_vector")
        .await
        .map_err(|e| driver_message(&e))?;
    let created = savepoint
        .batch_execute(
            "SELECT pg_advisory_xact_lock(hashtext('oxydra-extension:vector'));
             CREATE EXTENSION IF NOT EXISTS vector SCHEMA public",
        )
        .await;
    match created {
        Ok(()) => savepoint.commit().await.map_err(|e| driver_message(&e)),
        Err(error) => {
            let reason = error
                .as_db_error()
                .map(|db| db.message().to_owned())
                .unwrap_or_else(|| driver_message(&error));
            savepoint.rollback().await.map_err(|e| driver_message(&e))?;
            Err(reason)
        }
    }
}

/// The one log line naming the backend (and why, when it is not pgvector); a warning
/// when pgvector was there to be had.
fn log(location: &str, setup: &VectorSetup, warn: bool) {
    match setup {
        VectorSetup::PgVector { schema } => tracing::info!(
            location,
            vector_backend = "pgvector",
            extension_schema = %schema,
            "vectors are stored and searched with pgvector"
        ),
        VectorSetup::InProcess { reason } if warn => tracing::warn!(
            location,
            vector_backend = "in-process",
            reason = %reason,
            "pgvector not used: vectors are ranked in this process"
        ),
        VectorSetup::InProcess { reason } => tracing::info!(
            location,
            vector_backend = "in-process",
            reason = %reason,
            "pgvector not used: vectors are ranked in this process"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_form_reads_back_to_the_same_floats() {
        let vector = [1.0_f32, -0.5, 0.1, 1.0e-7, f32::MAX, 0.0];
        let text = vector_text(&vector);
        assert!(
            text.starts_with("[1,-0.5,0.1,0.0000001,") && text.ends_with(",0]"),
            "{text}"
        );
        let parsed: Vec<f32> = text
            .trim_matches(['[', ']'])
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(parsed, vector);
        assert_eq!(vector_text(&[]), "[]");
    }

    #[test]
    fn backends_are_named_and_setups_say_which() {
        assert_eq!(VectorBackend::PgVector.name(), "pgvector");
        assert_eq!(VectorBackend::InProcess.name(), "in-process");
        assert_eq!(
            VectorSetup::InProcess { reason: "x".into() }.backend(),
            VectorBackend::InProcess
        );
        assert_eq!(
            VectorSetup::PgVector {
                schema: "public".into()
            }
            .backend(),
            VectorBackend::PgVector
        );
    }
}
