//! The team cache: the expensive per-chunk work (a slow model's vectors, LLM snippets)
//! shared through a PostgreSQL with pgvector that the team already runs.
//!
//! Content-addressed: a vector is found by its model's identity and the SHA-256 of exactly
//! the text embedded, a snippet by its model and prompt identity and its key. The local
//! index stays the source of every answer; the cache is only asked before work is done and
//! told after. Every call has a deadline, and a failure costs no local work: it is warned
//! about once, the caller carries on as if the cache had nothing, and the cache is tried
//! again after a growing pause. Rows that fail validation never leave this module.
//!
//! tokio-postgres runs on a small runtime of the cache's own, so that the engine's plain
//! threads (and the language server's, inside its own runtime) can call it alike.

mod connect;
mod snippets;
mod status;
mod store;
pub mod tally;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

pub use connect::{Target, TlsMode};
pub use status::{Link, TeamStatus};
pub use store::SCHEMA_VERSION;
use store::{Access, Schema, VectorRow};

/// The environment variable that names a team cache when `[team] url` does not.
pub const URL_VAR: &str = "SITUATE_TEAM_URL";

/// `[team]` in `situate.toml`. Its `Debug` form hides the password.
#[derive(Clone, PartialEq, Eq)]
pub struct TeamConfig {
    /// `postgres://user:password@host:port/db?sslmode=…`.
    pub url: String,
    /// Add what this machine computes; `false` makes a member who only reads.
    pub push: bool,
    /// How long a claim on a batch of work holds before another member may take it over.
    pub lease_secs: u64,
    /// The deadline of each call to the server, connecting included.
    pub timeout_secs: u64,
}

impl TeamConfig {
    pub fn new(url: impl Into<String>) -> TeamConfig {
        TeamConfig { url: url.into(), push: true, lease_secs: 120, timeout_secs: 5 }
    }
}

impl std::fmt::Debug for TeamConfig {
    /// Settings end up in logs and test failures whole: the URL goes without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamConfig")
            .field("url", &connect::scrub(&self.url, &self.url))
            .field("push", &self.push)
            .field("lease_secs", &self.lease_secs)
            .field("timeout_secs", &self.timeout_secs)
            .finish()
    }
}

/// A team cache failure. Messages never hold the password.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TeamError {
    #[error("team cache: {0}")]
    Config(String),
    #[error("team cache {target}: {reason}")]
    Server { target: String, reason: String },
}

/// A model whose vectors the cache holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelKey {
    /// `provider/model`, with everything that changes its vectors (quantisation, tokens kept).
    pub identity: String,
    pub dimensions: usize,
}

/// A snippet as the cache holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedSnippet {
    pub text: String,
    pub input_tokens: u32,
    pub output_tokens: u32,
}

/// The longest snippet taken from the cache; longer rows are refused as damaged.
pub const MAX_SNIPPET_BYTES: usize = 4_000;
/// Keys looked up or added per statement.
pub const BATCH: usize = 1_000;

/// The longest pause between attempts to reach a server that failed.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

#[derive(Default)]
struct State {
    client: Option<Arc<Client>>,
    /// Model ids by identity (`None`: not in the cache, and this member may not add it).
    models: HashMap<ModelKey, Option<i32>>,
    /// When the server may be tried again after a failure.
    retry_at: Option<Instant>,
    backoff: Duration,
    /// The failure being waited out, warned about once.
    down: Option<String>,
    /// Why this member does not write (settings, schema, privileges).
    read_only: Option<String>,
    contacted: bool,
}

/// A connection to a team cache, shared by the threads of one process.
pub struct Team {
    target: Target,
    url: String,
    config: TeamConfig,
    /// Taken only when the cache is dropped.
    runtime: Option<tokio::runtime::Runtime>,
    /// Names this process in leases.
    holder: String,
    state: Mutex<State>,
    vectors_pulled: AtomicU64,
    vectors_pushed: AtomicU64,
    snippets_pulled: AtomicU64,
    snippets_pushed: AtomicU64,
    rejected: AtomicU64,
    /// Microseconds spent pulling and pushing vectors.
    pull_micros: AtomicU64,
    push_micros: AtomicU64,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team").field("target", &self.target.shown).finish()
    }
}

/// A call that did not happen (the server is being waited out) or did not finish (the
/// server's state is already updated): either way, the caller goes on without the cache.
struct Failure;

impl Team {
    /// Reads the address; nothing is sent until the first call.
    pub fn new(config: &TeamConfig) -> Result<Team, TeamError> {
        let pgpassword = std::env::var("PGPASSWORD").ok();
        let target = Target::parse(&config.url, pgpassword.as_deref())?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("situate-team")
            .enable_all()
            .build()
            .map_err(|e| TeamError::Config(format!("cannot start its runtime: {e}")))?;
        let read_only = (!config.push).then(|| "push = false".to_string());
        let holder = format!(
            "{}:{}:{:x}",
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
                .or_else(|| std::env::var("HOSTNAME").ok())
                .unwrap_or_else(|| "host".to_string()),
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        );
        Ok(Team {
            target,
            url: config.url.clone(),
            config: config.clone(),
            runtime: Some(runtime),
            holder,
            state: Mutex::new(State { read_only, ..State::default() }),
            vectors_pulled: AtomicU64::new(0),
            vectors_pushed: AtomicU64::new(0),
            snippets_pulled: AtomicU64::new(0),
            snippets_pushed: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            pull_micros: AtomicU64::new(0),
            push_micros: AtomicU64::new(0),
        })
    }

    /// The address without its password.
    pub fn shown(&self) -> &str {
        &self.target.shown
    }

    /// The key of a text: the SHA-256 of its bytes.
    pub fn text_key(text: &str) -> Vec<u8> {
        Sha256::digest(text.as_bytes()).to_vec()
    }

    /// Why the cache cannot be reached now, when it cannot (the server away, the login
    /// refused, no tables to read): what `status` shows after "unreachable:".
    pub fn unreachable(&self) -> Option<String> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).down.clone()
    }

    pub fn status(&self) -> TeamStatus {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let link = match (&state.down, &state.client, state.contacted) {
            (Some(reason), _, _) => Link::Unreachable(reason.clone()),
            (None, Some(_), _) => Link::Connected,
            (None, None, true) => Link::Disconnected,
            (None, None, false) => Link::NotContactedYet,
        };
        TeamStatus {
            target: self.target.shown.clone(),
            state: link,
            read_only: state.read_only.clone(),
            vectors_pulled: self.vectors_pulled.load(Ordering::Relaxed),
            vectors_pushed: self.vectors_pushed.load(Ordering::Relaxed),
            snippets_pulled: self.snippets_pulled.load(Ordering::Relaxed),
            snippets_pushed: self.snippets_pushed.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            pull_seconds: self.pull_micros.load(Ordering::Relaxed) as f64 / 1e6,
            push_seconds: self.push_micros.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }

    /// Whether the cache may be asked now (reachable, or due for another try).
    pub fn usable(&self) -> bool {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.client.is_some() || state.retry_at.is_none_or(|at| Instant::now() >= at)
    }

    /// Whether this member adds to the cache (and so takes leases on work).
    pub fn writes(&self) -> bool {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).read_only.is_none()
    }

    /// The cache's vectors of these texts, one slot per text, validated: the right length,
    /// finite, of unit length, and for the text asked for.
    pub fn pull_vectors(&self, model: &ModelKey, texts: &[&str]) -> Vec<Option<Vec<f32>>> {
        let started = Instant::now();
        let out = self.pull_vectors_untimed(model, texts);
        self.pull_micros.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        out
    }

    fn pull_vectors_untimed(&self, model: &ModelKey, texts: &[&str]) -> Vec<Option<Vec<f32>>> {
        let mut out = vec![None; texts.len()];
        let Some(id) = self.model_id(model) else { return out };
        let keys: Vec<Vec<u8>> = texts.iter().map(|t| Team::text_key(t)).collect();
        let mut slots: HashMap<&[u8], Vec<usize>> = HashMap::new();
        for (n, key) in keys.iter().enumerate() {
            slots.entry(key.as_slice()).or_default().push(n);
        }
        let mut bad = Vec::new();
        for batch in keys.chunks(BATCH) {
            let batch = batch.to_vec();
            let Ok(rows) = self.run(move |c| async move { store::pull_vectors(&c, id, &batch).await }) else {
                break;
            };
            for row in rows {
                let Some(at) = slots.get(row.key.as_slice()) else {
                    bad.push(row.key);
                    continue;
                };
                if valid_vector(&row, model.dimensions, texts[at[0]].len()) {
                    for n in at {
                        out[*n] = Some(row.vector.clone());
                    }
                } else {
                    bad.push(row.key);
                }
            }
        }
        let pulled = out.iter().filter(|v| v.is_some()).count() as u64;
        self.vectors_pulled.fetch_add(pulled, Ordering::Relaxed);
        if !bad.is_empty() {
            self.rejected.fetch_add(bad.len() as u64, Ordering::Relaxed);
            tracing::warn!(
                target = %self.target.shown,
                "{} vectors from the team cache failed validation (dimensions, values or key) and are computed here",
                bad.len()
            );
            if self.writes() {
                let _ = self.run(move |c| async move { store::drop_vectors(&c, id, &bad).await });
            }
        }
        out
    }

    /// Takes leases on the texts that nobody computes or has computed yet. `None` when this
    /// member does not share work (it reads only, or the cache is away): compute them all.
    pub fn claim_vectors(&self, model: &ModelKey, texts: &[&str]) -> Option<Vec<bool>> {
        if !self.writes() {
            return None;
        }
        let id = self.model_id(model)?;
        let keys: Vec<Vec<u8>> = texts.iter().map(|t| Team::text_key(t)).collect();
        let scope = format!("v{id}");
        let holder = self.holder.clone();
        let lease = self.config.lease_secs as f64;
        let asked = keys.clone();
        let won = self
            .run(move |c| async move { store::claim(&c, &scope, &asked, &holder, lease, Some(id)).await })
            .ok()?;
        let won: std::collections::HashSet<Vec<u8>> = won.into_iter().collect();
        Some(keys.iter().map(|k| won.contains(k)).collect())
    }

    /// Adds computed vectors and gives back their leases. Returns how many rows were new.
    pub fn push_vectors(&self, model: &ModelKey, items: &[(&str, &[f32])]) -> u64 {
        let started = Instant::now();
        let added = self.push_vectors_untimed(model, items);
        self.push_micros.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        added
    }

    fn push_vectors_untimed(&self, model: &ModelKey, items: &[(&str, &[f32])]) -> u64 {
        if !self.writes() || items.is_empty() {
            return 0;
        }
        let Some(id) = self.model_id(model) else { return 0 };
        let mut added = 0;
        for batch in items.chunks(BATCH) {
            let rows: Vec<VectorRow> = batch
                .iter()
                .map(|(text, v)| VectorRow {
                    key: Team::text_key(text),
                    text_bytes: text.len() as i32,
                    vector: v.to_vec(),
                })
                .collect();
            let keys: Vec<Vec<u8>> = rows.iter().map(|r| r.key.clone()).collect();
            let (scope, holder) = (format!("v{id}"), self.holder.clone());
            match self.run(move |c| async move {
                let added = store::push_vectors(&c, id, &rows).await?;
                store::release(&c, &scope, &keys, &holder).await?;
                Ok(added)
            }) {
                Ok(n) => added += n,
                Err(_) => break,
            }
        }
        self.vectors_pushed.fetch_add(added, Ordering::Relaxed);
        added
    }

    /// The model's id in the cache, registering it when this member writes.
    fn model_id(&self, model: &ModelKey) -> Option<i32> {
        if let Some(id) = self.state.lock().unwrap_or_else(PoisonError::into_inner).models.get(model) {
            return *id;
        }
        let lookup = |create: bool| {
            let (identity, dims) = (model.identity.clone(), model.dimensions);
            // Decided once connected: connecting may find that this member cannot write.
            self.run(move |c| {
                let create = create && self.writes();
                async move { store::model_id(&c, &identity, dims, create).await }
            })
        };
        let create = self.writes();
        let id = match lookup(create) {
            Ok(id) => id,
            // A member without the privilege to register a model may still read its vectors.
            Err(_) if create && !self.writes() => lookup(false).ok()?,
            Err(_) => return None,
        };
        self.state.lock().unwrap_or_else(PoisonError::into_inner).models.insert(model.clone(), id);
        id
    }

    fn handle(&self) -> tokio::runtime::Handle {
        self.runtime.as_ref().expect("the runtime lives as long as the cache").handle().clone()
    }

    /// Runs one call on the cache's runtime within the deadline, connecting first if needed.
    fn run<T, F, Fut>(&self, call: F) -> Result<T, Failure>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Client>) -> Fut,
        Fut: Future<Output = Result<T, tokio_postgres::Error>> + Send + 'static,
    {
        let client = self.client()?;
        let deadline = Duration::from_secs(self.config.timeout_secs.max(1));
        let future = call(client);
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle().spawn(async move {
            let _ = tx.send(tokio::time::timeout(deadline, future).await);
        });
        match rx.recv() {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(e))) => Err(self.failed(Cause::Sql(e))),
            Ok(Err(_)) | Err(_) => Err(self.failed(Cause::Timeout(deadline))),
        }
    }

    /// The open connection, or a new one (with the schema created or checked), unless the
    /// server is being waited out.
    fn client(&self) -> Result<Arc<Client>, Failure> {
        {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(client) = state.client.as_ref() {
                if !client.is_closed() {
                    return Ok(Arc::clone(client));
                }
                state.client = None;
            }
            if state.retry_at.is_some_and(|at| Instant::now() < at) {
                return Err(Failure);
            }
            state.contacted = true;
        }
        let tls = match self.target.tls_config() {
            Ok(tls) => tls,
            Err(e) => return Err(self.failed(Cause::Setup(e.to_string()))),
        };
        let config = self.target.config.clone();
        let migrate = self.writes();
        let deadline = Duration::from_secs(self.config.timeout_secs.max(1));
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let runtime = self.handle();
        self.handle().spawn(async move {
            let connected = tokio::time::timeout(deadline, async move {
                let (mut client, connection) =
                    config.connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls)).await?;
                runtime.spawn(connection);
                // The role's privileges first: a member who may not add to the cache is
                // read-only before it tries to, and a reader of a database whose tables
                // are not made yet is told so.
                let mut access = store::access(&client).await?;
                let mut schema = None;
                if migrate && matches!(access, Access::Full | Access::NoTables) {
                    schema = Some(store::migrate(&mut client).await?);
                    access = store::access(&client).await?;
                }
                Ok::<_, tokio_postgres::Error>((client, schema, access))
            })
            .await;
            let _ = tx.send(connected);
        });
        let (client, schema, access) = match rx.recv() {
            Ok(Ok(Ok(connected))) => connected,
            Ok(Ok(Err(e))) => return Err(self.failed(Cause::Sql(e))),
            Ok(Err(_)) | Err(_) => return Err(self.failed(Cause::Timeout(deadline))),
        };
        let cannot_write = match access {
            Access::Full => None,
            Access::ReadOnly(reason) => Some(reason),
            Access::NoTables => {
                let reason = "it holds no situate tables yet (the first member who may write creates them)";
                return Err(self.failed(Cause::Setup(reason.to_string())));
            }
            Access::Unreadable(reason) => return Err(self.failed(Cause::Setup(reason))),
        };
        let client = Arc::new(client);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(reason) = cannot_write
            && state.read_only.is_none()
        {
            tracing::info!(target = %self.target.shown, "team cache: {reason}; reading only");
            state.read_only = Some(reason);
        }
        if let Some(Schema::Newer(v)) = schema {
            let reason = format!(
                "its schema is version {v}, newer than this situate's ({SCHEMA_VERSION}): reading only; update situate to add to it"
            );
            tracing::warn!(target = %self.target.shown, "team cache: {reason}");
            state.read_only = Some(reason);
        }
        if let Some(reason) = state.down.take() {
            tracing::info!(target = %self.target.shown, "team cache reachable again (it was: {reason})");
        }
        state.retry_at = None;
        state.backoff = Duration::ZERO;
        state.client = Some(Arc::clone(&client));
        Ok(client)
    }

    /// Records a failure: a missing privilege makes this member read-only; a conflict
    /// between members is retried by the caller's next batch; anything else drops the
    /// connection and waits the server out, warned about once per outage.
    fn failed(&self, cause: Cause) -> Failure {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let code = match &cause {
            Cause::Sql(e) => e.code().cloned(),
            _ => None,
        };
        let reason = match &cause {
            Cause::Sql(e) => connect::scrub(&sql_reason(e), &self.url),
            Cause::Timeout(d) => format!("no answer within {} s", d.as_secs()),
            Cause::Setup(reason) => reason.clone(),
        };
        match code {
            // A role without the privilege, a read-only server, or one out of space: this
            // process stops adding to it, and goes on reading from it.
            Some(code)
                if code == SqlState::INSUFFICIENT_PRIVILEGE
                    || code == SqlState::READ_ONLY_SQL_TRANSACTION
                    || code.code().starts_with("53") =>
            {
                if state.read_only.is_none() {
                    tracing::warn!(target = %self.target.shown, "team cache: {reason}; reading only from now on");
                    state.read_only = Some(reason);
                }
                return Failure;
            }
            Some(code)
                if code == SqlState::T_R_DEADLOCK_DETECTED
                    || code == SqlState::T_R_SERIALIZATION_FAILURE
                    || code == SqlState::UNIQUE_VIOLATION =>
            {
                return Failure;
            }
            _ => {}
        }
        state.client = None;
        state.models.clear();
        state.backoff = (state.backoff * 2).clamp(Duration::from_secs(1), MAX_BACKOFF);
        state.retry_at = Some(Instant::now() + state.backoff);
        if state.down.is_none() {
            tracing::warn!(
                target = %self.target.shown,
                "team cache unavailable ({reason}); working locally and trying again later"
            );
        }
        state.down = Some(reason);
        Failure
    }
}

impl Drop for Team {
    /// The last holder of a view may let go of it on an async thread (the language
    /// server's), where dropping a runtime the usual way would block: stop it in the
    /// background instead.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

enum Cause {
    Sql(tokio_postgres::Error),
    Timeout(Duration),
    Setup(String),
}

/// The server's own message when it sent one, else the client's.
fn sql_reason(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            text
        }
    }
}

/// A vector row fit to enter the local index.
fn valid_vector(row: &VectorRow, dimensions: usize, text_bytes: usize) -> bool {
    if row.vector.len() != dimensions || row.text_bytes as i64 != text_bytes as i64 {
        return false;
    }
    if row.vector.iter().any(|x| !x.is_finite()) {
        return false;
    }
    let norm = row.vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    (0.9..=1.1).contains(&norm)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dead_cache() -> Team {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        Team::new(&TeamConfig::new(format!("postgres://u:pw@127.0.0.1:{port}/db?sslmode=disable"))).unwrap()
    }

    #[test]
    fn the_cache_is_called_and_dropped_from_async_threads_alike() {
        let model = ModelKey { identity: "e5/x".to_string(), dimensions: 3 };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let team = dead_cache();
        runtime.block_on(async move {
            assert_eq!(team.pull_vectors(&model, &["a", "b"]), vec![None, None]);
            assert!(matches!(team.status().state, Link::Unreachable(_)), "{:?}", team.status());
            assert!(!team.usable(), "a failed server is waited out");
            drop(team);
        });
    }

    #[test]
    fn settings_are_debugged_without_their_password() {
        let config = TeamConfig::new("postgres://alice:hunter22@db.example/docs");
        let shown = format!("{config:?}");
        assert!(!shown.contains("hunter22") && shown.contains("alice:****@db.example"), "{shown}");
    }

    #[test]
    fn rows_are_validated() {
        let row = |vector: Vec<f32>, text_bytes| VectorRow { key: vec![1], text_bytes, vector };
        let unit = vec![0.6, 0.8, 0.0];
        assert!(valid_vector(&row(unit.clone(), 5), 3, 5));
        assert!(!valid_vector(&row(unit.clone(), 5), 4, 5), "dimensions");
        assert!(!valid_vector(&row(unit, 6), 3, 5), "text size");
        assert!(!valid_vector(&row(vec![f32::NAN, 0.8, 0.0], 5), 3, 5), "NaN");
        assert!(!valid_vector(&row(vec![f32::INFINITY, 0.0, 0.0], 5), 3, 5), "infinite");
        assert!(!valid_vector(&row(vec![3.0, 0.0, 0.0], 5), 3, 5), "not of unit length");
    }
}
