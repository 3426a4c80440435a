//! The team cache's tables and the statements situate runs on them: the schema and its
//! migrations, looking vectors and snippets up by key, adding them, and leases on work.

use half::f16;
use pgvector::HalfVector;
use tokio_postgres::Client;

/// The schema this binary writes. A server at a newer version is read, never written.
pub const SCHEMA_VERSION: i32 = 2;

/// Held while the schema is created or migrated, so that two first runs do not race.
const MIGRATION_LOCK: i64 = 0x5174_7561_7465_0001;

/// Version 1: the models, the vectors by model and text hash, the snippets by their key, and
/// the leases of work in progress (unlogged: losing them in a crash only costs a repeat).
const V1: &str = "
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE situate_models (
    id serial PRIMARY KEY,
    identity text NOT NULL UNIQUE,
    dimensions integer NOT NULL CHECK (dimensions > 0),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE situate_vectors (
    model integer NOT NULL REFERENCES situate_models (id) ON DELETE CASCADE,
    key bytea NOT NULL,
    text_bytes integer NOT NULL,
    vector halfvec NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, key)
);
CREATE TABLE situate_snippets (
    model text NOT NULL,
    key bytea NOT NULL,
    snippet text NOT NULL,
    input_tokens integer NOT NULL,
    output_tokens integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, key)
);
CREATE UNLOGGED TABLE situate_claims (
    scope text NOT NULL,
    key bytea NOT NULL,
    holder text NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (scope, key)
);
";

/// Version 2: a model is its identity and its dimensions, so that one model asked for
/// vectors of other lengths (a remote model's `dimensions`) is a model of its own.
const V2: &str = "
ALTER TABLE situate_models DROP CONSTRAINT situate_models_identity_key;
ALTER TABLE situate_models ADD CONSTRAINT situate_models_identity_dimensions_key UNIQUE (identity, dimensions);
";

/// What the server's schema allows this binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// At this binary's version (created or migrated now if needed).
    Current,
    /// Written by a newer situate: read, never written.
    Newer(i32),
}

/// Creates or migrates the schema (under a lock, in one transaction), or reports a newer one.
pub async fn migrate(client: &mut Client) -> Result<Schema, tokio_postgres::Error> {
    let version = read_version(client).await?;
    if let Some(v) = version.filter(|v| *v >= SCHEMA_VERSION) {
        return Ok(if v > SCHEMA_VERSION { Schema::Newer(v) } else { Schema::Current });
    }
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS situate_schema (
             only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
             version integer NOT NULL,
             migrated_at timestamptz NOT NULL DEFAULT now()
         )",
    )
    .await?;
    let row = tx.query_opt("SELECT version FROM situate_schema", &[]).await?;
    let found: i32 = row.map(|r| r.get(0)).unwrap_or(0);
    if found >= SCHEMA_VERSION {
        tx.commit().await?;
        return Ok(if found > SCHEMA_VERSION { Schema::Newer(found) } else { Schema::Current });
    }
    if found < 1 {
        tx.batch_execute(V1).await?;
    }
    if found < 2 {
        tx.batch_execute(V2).await?;
    }
    tx.execute(
        "INSERT INTO situate_schema (version) VALUES ($1)
         ON CONFLICT (only_row) DO UPDATE SET version = excluded.version, migrated_at = now()",
        &[&SCHEMA_VERSION],
    )
    .await?;
    tx.commit().await?;
    Ok(Schema::Current)
}

/// The schema's version, `None` before situate ever ran on this database.
async fn read_version(client: &Client) -> Result<Option<i32>, tokio_postgres::Error> {
    let exists: bool =
        client.query_one("SELECT to_regclass('situate_schema') IS NOT NULL", &[]).await?.get(0);
    if !exists {
        return Ok(None);
    }
    Ok(client.query_opt("SELECT version FROM situate_schema", &[]).await?.map(|r| r.get(0)))
}

/// What the connected role may do with situate's tables, as the server's privileges say
/// before any statement fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// It may read and add.
    Full,
    /// It may read; why it may not add.
    ReadOnly(String),
    /// The tables are not there yet: a member who may write creates them.
    NoTables,
    /// It may not read them (why).
    Unreadable(String),
}

/// The privileges that reading takes: looking models, vectors and snippets up.
const READ: &[(&str, &str)] =
    &[("situate_models", "SELECT"), ("situate_vectors", "SELECT"), ("situate_snippets", "SELECT")];

/// The privileges that adding takes: rows of each kind, and leases taken, renewed and
/// given back.
const WRITE: &[(&str, &str)] = &[
    ("situate_models", "INSERT"),
    ("situate_vectors", "INSERT"),
    ("situate_snippets", "INSERT"),
    ("situate_claims", "SELECT"),
    ("situate_claims", "INSERT"),
    ("situate_claims", "UPDATE"),
    ("situate_claims", "DELETE"),
];

/// Reads the role's privileges on situate's tables (as its search path finds them).
pub async fn access(client: &Client) -> Result<Access, tokio_postgres::Error> {
    let (tables, privileges): (Vec<&str>, Vec<&str>) = READ.iter().chain(WRITE).copied().unzip();
    let rows = client
        .query(
            "SELECT to_regclass(t) IS NOT NULL, coalesce(has_table_privilege(to_regclass(t), p), false)
             FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x (t, p, n) ORDER BY n",
            &[&tables, &privileges],
        )
        .await?;
    let held: Vec<(bool, bool)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    Ok(access_of(&held))
}

/// The access that these rows (table exists, privilege held), in the order of [`READ`]
/// then [`WRITE`], give.
fn access_of(held: &[(bool, bool)]) -> Access {
    let wanted: Vec<(&str, &str)> = READ.iter().chain(WRITE).copied().collect();
    if held.len() != wanted.len() || held.iter().any(|(exists, _)| !exists) {
        return Access::NoTables;
    }
    let lacking = |range: std::ops::Range<usize>| {
        let mut by_table: Vec<(&str, Vec<&str>)> = Vec::new();
        for n in range.filter(|n| !held[*n].1) {
            let (table, privilege) = wanted[n];
            match by_table.iter_mut().find(|(t, _)| *t == table) {
                Some((_, privileges)) => privileges.push(privilege),
                None => by_table.push((table, vec![privilege])),
            }
        }
        by_table.iter().map(|(t, p)| format!("{} on {t}", p.join(", "))).collect::<Vec<_>>().join("; ")
    };
    let unreadable = lacking(0..READ.len());
    if !unreadable.is_empty() {
        return Access::Unreadable(format!(
            "this role may not read situate's tables (it lacks {unreadable})"
        ));
    }
    let unwritable = lacking(READ.len()..wanted.len());
    if !unwritable.is_empty() {
        return Access::ReadOnly(format!("this role may not add to it (it lacks {unwritable})"));
    }
    Access::Full
}

/// The id of a model by its identity; registered when `create` (a member who may write).
pub async fn model_id(
    client: &Client,
    identity: &str,
    dimensions: usize,
    create: bool,
) -> Result<Option<i32>, tokio_postgres::Error> {
    let dims = dimensions as i32;
    if create {
        client
            .execute(
                "INSERT INTO situate_models (identity, dimensions) VALUES ($1, $2) ON CONFLICT (identity, dimensions) DO NOTHING",
                &[&identity, &dims],
            )
            .await?;
    }
    let row = client
        .query_opt(
            "SELECT id FROM situate_models WHERE identity = $1 AND dimensions = $2",
            &[&identity, &dims],
        )
        .await?;
    Ok(row.map(|r| r.get(0)))
}

/// A vector as the server holds it.
pub struct VectorRow {
    pub key: Vec<u8>,
    pub text_bytes: i32,
    pub vector: Vec<f32>,
}

pub async fn pull_vectors(
    client: &Client,
    model: i32,
    keys: &[Vec<u8>],
) -> Result<Vec<VectorRow>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT key, text_bytes, vector FROM situate_vectors WHERE model = $1 AND key = ANY($2)",
            &[&model, &keys],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| VectorRow {
            key: r.get(0),
            text_bytes: r.get(1),
            vector: r.get::<_, HalfVector>(2).to_vec().iter().map(|x| x.to_f32()).collect(),
        })
        .collect())
}

/// Adds vectors (kept as half floats); rows another member added first stay. Returns how
/// many rows were added.
pub async fn push_vectors(
    client: &Client,
    model: i32,
    rows: &[VectorRow],
) -> Result<u64, tokio_postgres::Error> {
    let keys: Vec<&[u8]> = rows.iter().map(|r| r.key.as_slice()).collect();
    let sizes: Vec<i32> = rows.iter().map(|r| r.text_bytes).collect();
    let vectors: Vec<HalfVector> = rows
        .iter()
        .map(|r| HalfVector::from(r.vector.iter().map(|x| f16::from_f32(*x)).collect::<Vec<_>>()))
        .collect();
    client
        .execute(
            "INSERT INTO situate_vectors (model, key, text_bytes, vector)
             SELECT $1, k, b, v FROM unnest($2::bytea[], $3::integer[], $4::halfvec[]) AS t (k, b, v)
             ON CONFLICT DO NOTHING",
            &[&model, &keys, &sizes, &vectors],
        )
        .await
}

/// Removes rows that failed validation here, so that the vectors computed in their place
/// can be added.
pub async fn drop_vectors(
    client: &Client,
    model: i32,
    keys: &[Vec<u8>],
) -> Result<u64, tokio_postgres::Error> {
    client.execute("DELETE FROM situate_vectors WHERE model = $1 AND key = ANY($2)", &[&model, &keys]).await
}

/// Removes snippets that failed validation here, so that the ones written in their place
/// can be added.
pub async fn drop_snippets(
    client: &Client,
    model: &str,
    keys: &[Vec<u8>],
) -> Result<u64, tokio_postgres::Error> {
    client.execute("DELETE FROM situate_snippets WHERE model = $1 AND key = ANY($2)", &[&model, &keys]).await
}

/// A snippet as the server holds it.
pub struct SnippetRow {
    pub key: Vec<u8>,
    pub text: String,
    pub input_tokens: i32,
    pub output_tokens: i32,
}

pub async fn pull_snippets(
    client: &Client,
    model: &str,
    keys: &[Vec<u8>],
) -> Result<Vec<SnippetRow>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT key, snippet, input_tokens, output_tokens FROM situate_snippets WHERE model = $1 AND key = ANY($2)",
            &[&model, &keys],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| SnippetRow {
            key: r.get(0),
            text: r.get(1),
            input_tokens: r.get(2),
            output_tokens: r.get(3),
        })
        .collect())
}

pub async fn push_snippets(
    client: &Client,
    model: &str,
    rows: &[SnippetRow],
) -> Result<u64, tokio_postgres::Error> {
    let keys: Vec<&[u8]> = rows.iter().map(|r| r.key.as_slice()).collect();
    let texts: Vec<&str> = rows.iter().map(|r| r.text.as_str()).collect();
    let inputs: Vec<i32> = rows.iter().map(|r| r.input_tokens).collect();
    let outputs: Vec<i32> = rows.iter().map(|r| r.output_tokens).collect();
    client
        .execute(
            "INSERT INTO situate_snippets (model, key, snippet, input_tokens, output_tokens)
             SELECT $1, k, s, i, o FROM unnest($2::bytea[], $3::text[], $4::integer[], $5::integer[]) AS t (k, s, i, o)
             ON CONFLICT DO NOTHING",
            &[&model, &keys, &texts, &inputs, &outputs],
        )
        .await
}

/// Takes a lease on those of `keys` that nobody holds (or whose lease ran out) and that
/// are not done yet (`done_in`: the vectors of that model id). Keys go in sorted order, so
/// that two members claiming overlapping batches lock rows in the same order, and once
/// each: chunks of the same text share a key, and an upsert may not touch a row twice.
pub async fn claim(
    client: &Client,
    scope: &str,
    keys: &[Vec<u8>],
    holder: &str,
    lease_secs: f64,
    done_in: Option<i32>,
) -> Result<Vec<Vec<u8>>, tokio_postgres::Error> {
    let mut sorted: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let rows = client
        .query(
            "INSERT INTO situate_claims (scope, key, holder, expires_at)
             SELECT $1, k, $3, now() + make_interval(secs => $4)
             FROM unnest($2::bytea[]) WITH ORDINALITY AS t (k, n)
             WHERE $5::integer IS NULL
                OR NOT EXISTS (SELECT 1 FROM situate_vectors v WHERE v.model = $5 AND v.key = t.k)
             ORDER BY n
             ON CONFLICT (scope, key) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
             WHERE situate_claims.expires_at < now() OR situate_claims.holder = excluded.holder
             RETURNING key",
            &[&scope, &sorted, &holder, &lease_secs, &done_in],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Gives back leases (the work is pushed, or was given up).
pub async fn release(
    client: &Client,
    scope: &str,
    keys: &[Vec<u8>],
    holder: &str,
) -> Result<u64, tokio_postgres::Error> {
    client
        .execute(
            "DELETE FROM situate_claims WHERE scope = $1 AND holder = $2 AND key = ANY($3)",
            &[&scope, &holder, &keys],
        )
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn privileges_read_as_access() {
        let all = READ.len() + WRITE.len();
        assert_eq!(access_of(&vec![(true, true); all]), Access::Full);
        let mut held = vec![(true, true); all];
        held[all - 1] = (false, false);
        assert_eq!(access_of(&held), Access::NoTables, "situate_claims is missing");
        let mut reader = vec![(true, true); READ.len()];
        reader.extend(vec![(true, false); WRITE.len()]);
        assert_eq!(
            access_of(&reader),
            Access::ReadOnly(
                "this role may not add to it (it lacks INSERT on situate_models; INSERT on situate_vectors; \
                 INSERT on situate_snippets; SELECT, INSERT, UPDATE, DELETE on situate_claims)"
                    .to_string()
            )
        );
        let mut stranger = vec![(true, false); all];
        stranger[0] = (true, true);
        assert_eq!(
            access_of(&stranger),
            Access::Unreadable(
                "this role may not read situate's tables (it lacks SELECT on situate_vectors; SELECT on situate_snippets)"
                    .to_string()
            )
        );
    }
}
