//! Which migrations of each component a schema has: the rows of
//! `oxydra_schema_migrations`, read and written inside the migrating transaction (the
//! numbered migrations and the pgvector switch both record theirs here).

use deadpool_postgres::Transaction;

use crate::error::{PostgresError, driver_message};

/// The schema version of `component` (0 when none was applied); refused when it is
/// newer than the `supported` this build knows.
pub(crate) async fn version(
    tx: &Transaction<'_>,
    location: &str,
    component: &'static str,
    supported: i64,
) -> Result<i64, PostgresError> {
    let found: i64 = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM oxydra_schema_migrations WHERE component = $1",
            &[&component],
        )
        .await
        .and_then(|row| row.try_get(0))
        .map_err(|e| {
            PostgresError::query(location, "read the schema version", &driver_message(&e))
        })?;
    if found > supported {
        return Err(PostgresError::SchemaTooNew {
            location: location.to_owned(),
            component,
            found,
            supported,
        });
    }
    Ok(found)
}

/// Records that `component`'s migration `version` was applied.
pub(crate) async fn record(
    tx: &Transaction<'_>,
    location: &str,
    component: &str,
    version: i64,
) -> Result<(), PostgresError> {
    tx.execute(
        "INSERT INTO oxydra_schema_migrations (component, version) VALUES ($1, $2)",
        &[&component, &version],
    )
    .await
    .map(drop)
    .map_err(|e| {
        PostgresError::query(
            location,
            format!("record {component} migration {version}"),
            &driver_message(&e),
        )
    })
}
