//! The team cache against a real PostgreSQL with pgvector (one server per test, started by
//! `tests/postgres`): a second machine takes the vectors a first one computed, members who
//! only read, work shared between machines filling at once, a claimer's lease taken over,
//! rows that fail validation, and a server that is away, stalls, cuts the connection,
//! refuses the login, runs out of space or speaks TLS.

mod common;
mod http_server;
mod lsp_client;
mod postgres;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{Counting, Fixture};
use postgres::{Mode, Postgres, Proxy};
use situate::engine::Engine;
use situate::providers::{EmbedError, Embedder, EmbedderIdentity};
use situate::search::{Expand, SearchMode, SearchRequest};
use situate::team::TeamConfig;

fn team(url: &str) -> TeamConfig {
    TeamConfig { url: url.to_string(), push: true, lease_secs: 120, timeout_secs: 5 }
}

/// An engine on `fixture` with the team cache `config`, embedding with the static model
/// presented as a slow one (so its vectors are filled after the texts, as e5's are).
fn machine(fixture: &Fixture, config: TeamConfig) -> (Engine, Arc<Counting>) {
    let embedder = Counting::slow();
    let mut settings = fixture.config();
    settings.team = Some(config);
    (fixture.engine_with(settings, embedder.clone()), embedder)
}

fn answers(engine: &Engine) -> Vec<(String, u32, String)> {
    let mut out = Vec::new();
    for query in ["how long are backups kept", "sourdough starter feeding", "rotate the logs"] {
        let request = SearchRequest {
            query: query.to_string(),
            limit: 5,
            mode: SearchMode::Hybrid,
            paths: Vec::new(),
            filters: Vec::new(),
            expand: Expand::None,
        };
        for hit in engine.search(&request).unwrap() {
            out.push((hit.chunk.path.clone(), hit.chunk.start_line, format!("{:.5}", hit.score)));
        }
    }
    out
}

fn vector_rows(pg: &Postgres) -> i64 {
    pg.count("SELECT count(*) FROM situate_vectors")
}

#[test]
fn a_second_machine_takes_the_vectors_the_first_computed() {
    let Some(pg) = Postgres::start() else { return };
    let (a, b) = (Fixture::standard(), Fixture::standard());
    let (mut first, computed_a) = machine(&a, team(&pg.super_url()));
    let report = first.reconcile(&mut |_| {}).unwrap();
    let chunks = first.status().chunks;
    assert!(chunks > 5);
    assert_eq!((report.vectors_from_team, report.vectors_embedded), (0, chunks));
    assert_eq!(computed_a.count(), chunks);
    let rows = vector_rows(&pg);
    assert!(rows > 0 && rows <= chunks as i64, "{rows} rows for {chunks} chunks");
    assert_eq!(pg.count("SELECT count(*) FROM situate_claims"), 0, "leases are given back");
    assert_eq!(pg.count("SELECT version FROM situate_schema"), situate::team::SCHEMA_VERSION as i64);

    let (mut second, computed_b) = machine(&b, team(&pg.super_url()));
    let mut progress_from_team = 0;
    let report = second
        .reconcile(&mut |p| {
            if let situate::engine::Progress::Embedding { from_team, .. } = p {
                progress_from_team = from_team;
            }
        })
        .unwrap();
    assert_eq!(report.vectors_from_team, chunks);
    assert_eq!(report.vectors_embedded, 0);
    assert_eq!(computed_b.count(), 0, "nothing was computed on the second machine");
    assert_eq!(progress_from_team, chunks, "progress says how many came from the team");
    assert_eq!(vector_rows(&pg), rows, "nothing was added twice");
    let status = second.status();
    assert_eq!((status.vectors, status.vectors_pending), (chunks, 0));
    let tally = &status.team.as_ref().unwrap().tally;
    assert_eq!((tally.vectors_from_team, tally.vectors_computed), (chunks as u64, 0));
    // Half floats on the server are what the local index keeps: the answers are the same.
    assert_eq!(answers(&first), answers(&second));
}

#[test]
fn a_member_who_only_reads_pulls_and_never_pushes() {
    let Some(pg) = Postgres::start() else { return };
    let (a, b, c) = (Fixture::standard(), Fixture::standard(), Fixture::standard());
    let (mut writer, _) = machine(&a, team(&pg.super_url()));
    writer.reconcile(&mut |_| {}).unwrap();
    let rows = vector_rows(&pg);
    pg.sql(
        "CREATE ROLE reader LOGIN PASSWORD 'reader-pw'; GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader",
    );
    b.write("new/fresh.md", "# Fresh\n\nA page only the reader has, about tidal pools and anemones.\n");
    let (mut reader, computed) = machine(&b, team(&pg.url("reader", "reader-pw", "postgres")));
    let report = reader.reconcile(&mut |_| {}).unwrap();
    assert!(report.vectors_from_team > 0);
    assert!(report.vectors_embedded >= 1);
    assert_eq!(computed.count(), report.vectors_embedded);
    assert_eq!(vector_rows(&pg), rows, "a reader adds nothing");
    let live = reader.status().team.unwrap().live.unwrap();
    assert!(live.read_only.as_deref().unwrap_or("").contains("may not add to it"), "{live:?}");

    // `push = false` reads the same way without trying to write.
    c.write("new/other.md", "# Other\n\nA page about lichens on granite.\n");
    let mut config = team(&pg.super_url());
    config.push = false;
    let (mut quiet, _) = machine(&c, config);
    let report = quiet.reconcile(&mut |_| {}).unwrap();
    assert!(report.vectors_from_team > 0 && report.vectors_embedded >= 1);
    assert_eq!(vector_rows(&pg), rows);
    assert_eq!(pg.count("SELECT count(*) FROM situate_claims"), 0);
}

#[test]
fn a_role_is_told_what_it_may_not_do_before_a_statement_fails() {
    let Some(pg) = Postgres::start() else { return };
    pg.sql(
        "CREATE ROLE reader LOGIN PASSWORD 'reader-pw'; CREATE ROLE stranger LOGIN PASSWORD 'stranger-pw'",
    );
    let reader_url = pg.url("reader", "reader-pw", "postgres");
    let live = |engine: &Engine| engine.status().team.unwrap().live.unwrap();

    // A reader before any writer made the tables: nothing to read yet, and it says so.
    let a = Fixture::standard();
    let (mut early, computed) = machine(&a, team(&reader_url));
    early.reconcile(&mut |_| {}).unwrap();
    let state = live(&early).state.to_string();
    assert!(state.starts_with("unreachable") && state.contains("no situate tables yet"), "{state}");
    assert_eq!(computed.count(), early.status().chunks);

    let (b, c, d) = (Fixture::standard(), Fixture::standard(), Fixture::standard());
    let (mut writer, _) = machine(&b, team(&pg.super_url()));
    writer.reconcile(&mut |_| {}).unwrap();
    pg.sql("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader");
    let logged = pg.log().len();

    // A role that may not read the tables is not a member who reads only: it is told what
    // it lacks, and the fill goes on here.
    let (mut stranger, computed) = machine(&c, team(&pg.url("stranger", "stranger-pw", "postgres")));
    stranger.reconcile(&mut |_| {}).unwrap();
    let state = live(&stranger).state.to_string();
    assert!(state.starts_with("unreachable: this role may not read"), "{state}");
    assert!(state.contains("SELECT on situate_models"), "{state}");
    assert_eq!(computed.count(), stranger.status().chunks);

    // A reader reads, is read-only from the start, and makes no statement that fails.
    let (mut reader, computed) = machine(&d, team(&reader_url));
    let report = reader.reconcile(&mut |_| {}).unwrap();
    assert_eq!((report.vectors_from_team, computed.count()), (reader.status().chunks, 0));
    let reason = live(&reader).read_only.unwrap();
    assert!(reason.contains("may not add to it") && reason.contains("INSERT on situate_vectors"), "{reason}");
    let log = pg.log();
    assert!(!log[logged..].contains("ERROR"), "{}", &log[logged..]);
}

#[test]
fn an_unreachable_server_costs_nothing_but_a_warning() {
    let Some(_pg) = Postgres::start() else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let f = Fixture::standard();
    let url = format!("postgres://situate:pw-not-shown@127.0.0.1:{port}/postgres?sslmode=disable");
    let (mut engine, computed) = machine(&f, team(&url));
    let report = engine.reconcile(&mut |_| {}).unwrap();
    let status = engine.status();
    assert_eq!(report.vectors_from_team, 0);
    assert_eq!(computed.count(), status.chunks);
    assert_eq!((status.vectors, status.vectors_pending), (status.chunks, 0));
    let team = status.team.as_ref().unwrap();
    let state = team.live.as_ref().unwrap().state.to_string();
    assert!(state.starts_with("unreachable"), "{state}");
    let json = serde_json::to_string(&situate::wire::StatusJson::from(&status)).unwrap();
    assert!(!json.contains("pw-not-shown") && !state.contains("pw-not-shown"), "{json}");
    assert!(team.target.ends_with(&format!("127.0.0.1:{port}/postgres")), "{}", team.target);
}

#[test]
fn a_refused_login_is_reported_without_the_password() {
    let Some(pg) = Postgres::start() else { return };
    let f = Fixture::standard();
    let (mut engine, computed) = machine(&f, team(&pg.url("situate", "wrong-secret-77", "postgres")));
    engine.reconcile(&mut |_| {}).unwrap();
    let status = engine.status();
    assert_eq!(computed.count(), status.chunks);
    let state = status.team.as_ref().unwrap().live.as_ref().unwrap().state.to_string();
    assert!(state.contains("password authentication failed"), "{state}");
    let json = serde_json::to_string(&situate::wire::StatusJson::from(&status)).unwrap();
    assert!(!json.contains("wrong-secret-77"), "{json}");
    assert!(!pg.log().is_empty());
}

/// The static model, slowed down; `at` runs once, when the model has embedded that many
/// texts (to cut the network, or to crash the machine, mid-fill).
struct Slow {
    inner: Arc<Counting>,
    pause: Duration,
    at: Option<(usize, Box<dyn Fn() + Send + Sync>)>,
    fired: AtomicBool,
}

impl Slow {
    fn new(inner: Arc<Counting>, pause: Duration) -> Slow {
        Slow { inner, pause, at: None, fired: AtomicBool::new(false) }
    }

    fn at(mut self, texts: usize, then: impl Fn() + Send + Sync + 'static) -> Slow {
        self.at = Some((texts, Box::new(then)));
        self
    }
}

impl Embedder for Slow {
    fn identity(&self) -> EmbedderIdentity {
        self.inner.identity()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        std::thread::sleep(self.pause);
        if let Some((after, then)) = &self.at
            && self.inner.count() >= *after
            && !self.fired.swap(true, Ordering::SeqCst)
        {
            then();
        }
        self.inner.embed(texts)
    }
}

/// The static model asked for shorter vectors, as a remote model's `dimensions` asks: the
/// same identity, another length.
struct Shortened {
    inner: Arc<Counting>,
    dimensions: usize,
}

impl Embedder for Shortened {
    fn identity(&self) -> EmbedderIdentity {
        EmbedderIdentity { dimensions: self.dimensions, ..self.inner.identity() }
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let vectors = self.inner.embed(texts)?;
        Ok(vectors
            .into_iter()
            .map(|v| {
                let short = &v[..self.dimensions];
                let norm = short.iter().map(|x| x * x).sum::<f32>().sqrt();
                short.iter().map(|x| x / norm).collect()
            })
            .collect())
    }
}

#[test]
fn one_model_at_two_lengths_is_shared_as_two_models_and_an_older_schema_is_migrated() {
    let Some(pg) = Postgres::start() else { return };
    let (a, b, c) = (Fixture::standard(), Fixture::standard(), Fixture::standard());
    let (mut full, _) = machine(&a, team(&pg.super_url()));
    full.reconcile(&mut |_| {}).unwrap();
    let dims = full.status().embedder.dimensions;
    let rows = vector_rows(&pg);
    // The cache as a situate of schema version 1 left it: a model was its identity alone.
    pg.sql(
        "ALTER TABLE situate_models DROP CONSTRAINT situate_models_identity_dimensions_key,
           ADD CONSTRAINT situate_models_identity_key UNIQUE (identity);
         UPDATE situate_schema SET version = 1",
    );

    let short = |f: &Fixture| {
        let counting = Counting::slow();
        let mut settings = f.config();
        settings.team = Some(team(&pg.super_url()));
        let embedder = Arc::new(Shortened { inner: counting.clone(), dimensions: dims / 2 });
        (f.engine_with(settings, embedder), counting)
    };
    // The first machine with shorter vectors takes none of the longer ones, and shares its own.
    let (mut first, computed) = short(&b);
    let report = first.reconcile(&mut |_| {}).unwrap();
    let chunks = first.status().chunks;
    assert_eq!((report.vectors_from_team, computed.count()), (0, chunks));
    assert_eq!(pg.count("SELECT count(*) FROM situate_models"), 2);
    assert_eq!(pg.count("SELECT version FROM situate_schema"), situate::team::SCHEMA_VERSION as i64);
    assert_eq!(vector_rows(&pg), 2 * rows, "{:?}", first.status().team.unwrap().live);
    // The next one takes them.
    let (mut second, computed) = short(&c);
    let report = second.reconcile(&mut |_| {}).unwrap();
    assert_eq!((report.vectors_from_team, computed.count()), (chunks, 0));
    assert_eq!(answers(&first), answers(&second));
    // The migration kept the longer vectors.
    let d = Fixture::standard();
    let (mut again, computed) = machine(&d, team(&pg.super_url()));
    let report = again.reconcile(&mut |_| {}).unwrap();
    assert_eq!((report.vectors_from_team, computed.count()), (chunks, 0));
    assert_eq!(answers(&full), answers(&again));
}

/// A workspace of `n` pages of about one chunk each, the same on every machine.
fn pages(n: usize) -> Fixture {
    let f = Fixture::empty();
    for i in 0..n {
        let body = format!(
            "# Page {i}\n\nNote {i} is about topic {} and subtopic {}: the {} of item {i}.\n",
            i % 7,
            i % 13,
            ["colour", "weight", "origin", "price", "shape"][i % 5]
        );
        f.write(&format!("p/{i:03}.md"), body);
        common::age(&f.root().join(format!("p/{i:03}.md")));
    }
    f
}

#[test]
fn machines_filling_at_once_share_the_work() {
    let Some(pg) = Postgres::start() else { return };
    let fixtures: Vec<Fixture> = (0..3).map(|_| pages(400)).collect();
    let handles: Vec<_> = fixtures
        .iter()
        .map(|f| {
            let counting = Counting::slow();
            let embedder = Arc::new(Slow::new(counting.clone(), Duration::from_millis(40)));
            let mut settings = f.config();
            settings.team = Some(team(&pg.super_url()));
            (f.engine_with(settings, embedder), counting)
        })
        .collect();
    let reports: Vec<_> = std::thread::scope(|s| {
        let running: Vec<_> = handles
            .into_iter()
            .map(|(mut engine, counting)| {
                s.spawn(move || {
                    let report = engine.reconcile(&mut |_| {}).unwrap();
                    let status = engine.status();
                    (report, counting.count(), status.chunks, status.vectors)
                })
            })
            .collect();
        running.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let computed: usize = reports.iter().map(|r| r.1).sum();
    for (report, own, chunks, vectors) in &reports {
        assert_eq!(*vectors, *chunks, "every machine ends with every vector");
        assert_eq!(report.vectors_from_team + report.vectors_embedded, *chunks);
        assert_eq!(*own, report.vectors_embedded);
    }
    let rows = vector_rows(&pg) as usize;
    assert_eq!(computed, rows, "each vector was computed by one machine only: {reports:?}");
    assert!(reports.iter().all(|r| r.1 > 0), "every machine took a share: {reports:?}");
}

#[test]
fn chunks_of_the_same_text_are_claimed_and_shared_once() {
    let Some(pg) = Postgres::start() else { return };
    // Copies of a page (a folder of each version of the docs) embed the same text: their
    // chunks fall in one batch, and the batch's claim names that text twice.
    let f = Fixture::empty();
    for copy in ["v1", "v2", "v3"] {
        f.write(&format!("{copy}/backup.md"), "# Backups\n\nSnapshots are kept for thirty days.\n");
        common::age(&f.root().join(format!("{copy}/backup.md")));
    }
    let (mut engine, computed) = machine(&f, team(&pg.super_url()));
    engine.reconcile(&mut |_| {}).unwrap();
    let status = engine.status();
    assert_eq!((status.chunks, status.vectors, status.vectors_pending), (3, 3, 0));
    let live = status.team.unwrap().live.unwrap();
    assert_eq!(live.state.to_string(), "connected", "{live:?}");
    assert_eq!(vector_rows(&pg), 1, "the text's vector was shared: {live:?}");
    assert!(computed.count() >= 1);
    assert_eq!(pg.count("SELECT count(*) FROM situate_claims"), 0, "the lease was given back");
}

#[test]
fn a_crashed_claimers_work_is_taken_over_after_its_lease() {
    let Some(pg) = Postgres::start() else { return };
    let (a, b) = (pages(150), pages(150));
    let crashed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&crashed);
    let embedder = Arc::new(Slow::new(Counting::slow(), Duration::ZERO).at(64, move || {
        flag.store(true, Ordering::SeqCst);
        panic!("the machine crashed while embedding");
    }));
    let mut settings = a.config();
    settings.team = Some(TeamConfig { lease_secs: 2, ..team(&pg.super_url()) });
    let mut doomed = a.engine_with(settings, embedder);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| doomed.reconcile(&mut |_| {})));
    assert!(outcome.is_err() && crashed.load(Ordering::SeqCst));
    std::mem::forget(doomed);
    let held = pg.count("SELECT count(*) FROM situate_claims");
    assert!(held > 0, "the crashed machine left its lease");

    let (mut survivor, computed) = machine(&b, team(&pg.super_url()));
    let report = survivor.reconcile(&mut |_| {}).unwrap();
    let status = survivor.status();
    assert_eq!((status.vectors, status.vectors_pending), (status.chunks, 0));
    assert_eq!(report.vectors_from_team + report.vectors_embedded, status.chunks);
    assert_eq!(computed.count(), status.chunks - report.vectors_from_team);
    assert_eq!(pg.count("SELECT count(*) FROM situate_claims"), 0);
}

#[test]
fn rows_that_fail_validation_are_refused_and_replaced() {
    let Some(pg) = Postgres::start() else { return };
    let (a, b) = (Fixture::standard(), Fixture::standard());
    let (mut first, _) = machine(&a, team(&pg.super_url()));
    first.reconcile(&mut |_| {}).unwrap();
    let dims = first.status().embedder.dimensions;
    // Three rows damaged three ways: the wrong length, not of unit length, and recorded
    // for a text of another size than the one its key is for.
    pg.sql(
        "UPDATE situate_vectors SET vector = '[1,0,0]' WHERE key = (SELECT key FROM situate_vectors ORDER BY key LIMIT 1)",
    );
    pg.sql(&format!(
        "UPDATE situate_vectors SET vector = array_fill(0.5, ARRAY[{dims}])::real[]::halfvec
         WHERE key = (SELECT key FROM situate_vectors ORDER BY key OFFSET 1 LIMIT 1)"
    ));
    pg.sql(
        "UPDATE situate_vectors SET text_bytes = text_bytes + 1
         WHERE key = (SELECT key FROM situate_vectors ORDER BY key OFFSET 2 LIMIT 1)",
    );
    let (mut second, computed) = machine(&b, team(&pg.super_url()));
    let report = second.reconcile(&mut |_| {}).unwrap();
    assert!(report.vectors_embedded >= 3, "{report:?}");
    assert_eq!(computed.count(), report.vectors_embedded);
    assert!(second.status().team.unwrap().live.unwrap().rejected >= 3);
    assert_eq!(answers(&first), answers(&second), "nothing damaged entered the index");
    let bad = pg.count(&format!(
        "SELECT count(*) FROM situate_vectors WHERE vector_dims(vector) <> {dims}
         OR abs(l2_norm(vector) - 1) > 0.01"
    ));
    assert_eq!(bad, 0, "the damaged rows were replaced by the computed ones");
}

#[test]
fn a_server_that_goes_away_or_stalls_mid_fill_loses_nothing() {
    let Some(pg) = Postgres::start() else { return };
    for fault in [Mode::Cut, Mode::Stall] {
        let proxy = Proxy::to(pg.port);
        let f = pages(300);
        let counting = Counting::slow();
        let switch = proxy.switch();
        let embedder =
            Arc::new(Slow::new(counting.clone(), Duration::from_millis(20)).at(64, move || switch(fault)));
        let mut settings = f.config();
        let url = proxy.url("situate", postgres::SUPER_PASSWORD, "postgres");
        settings.team = Some(TeamConfig { timeout_secs: 1, ..team(&url) });
        let mut engine = f.engine_with(settings, embedder);
        let report = engine.reconcile(&mut |_| {}).unwrap();
        let status = engine.status();
        assert_eq!((status.vectors, status.vectors_pending), (status.chunks, 0), "{fault:?}");
        assert_eq!(counting.count(), report.vectors_embedded);
        let live = status.team.as_ref().unwrap().live.clone().unwrap();
        assert!(live.state.to_string().starts_with("unreachable"), "{fault:?}: {live:?}");
        assert!(live.vectors_pushed > 0, "{fault:?}: some vectors went out before the fault");

        // Once the server is back, the cache is used again (after a pause that grows with
        // the failures, at most a minute).
        proxy.set(Mode::Pass);
        // (A write stalled before may land late: only a push made once connected counts.)
        let mut n = 0;
        loop {
            assert!(n < 120, "{fault:?}: the cache was never used again");
            n += 1;
            let before = vector_rows(&pg);
            f.write(
                &format!("later/{n}.md"),
                format!("# Later {n}\n\nA note written after the fault, number {n}.\n"),
            );
            engine.reconcile(&mut |_| {}).unwrap();
            let live = engine.status().team.unwrap().live.unwrap();
            if live.state.to_string() == "connected" && vector_rows(&pg) > before {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        // What was computed here while the cache was away goes out once it is back, with
        // the fill's next steps: teammates then take it instead of computing it again.
        let chunks = engine.status().chunks as i64;
        for m in 0..3 {
            if vector_rows(&pg) >= chunks {
                break;
            }
            f.write(&format!("after/{m}.md"), format!("# After {m}\n\nOne more note, number {m}.\n"));
            engine.reconcile(&mut |_| {}).unwrap();
        }
        assert_eq!(
            vector_rows(&pg),
            engine.status().chunks as i64,
            "{fault:?}: every vector reached the cache"
        );
        pg.sql("TRUNCATE situate_vectors, situate_claims");
    }
}

#[test]
fn vectors_computed_while_the_cache_was_away_reach_it_when_it_is_back_even_after_an_exit() {
    let Some(pg) = Postgres::start() else { return };
    let proxy = Proxy::to(pg.port);
    let url = proxy.url("situate", postgres::SUPER_PASSWORD, "postgres");
    let settings = |f: &Fixture| {
        let mut settings = f.config();
        settings.team = Some(TeamConfig { timeout_secs: 1, ..team(&url) });
        settings
    };

    // A process that stays (a language server): the cache comes back with nothing left to
    // embed, and the vectors go to it between other work.
    let f = pages(40);
    proxy.set(Mode::Cut);
    let mut engine = f.engine_with(settings(&f), Counting::slow());
    engine.reconcile(&mut |_| {}).unwrap();
    let chunks = engine.status().chunks;
    assert_eq!(engine.status().vectors_pending, 0);
    proxy.set(Mode::Pass);
    let mut shared = 0;
    for _ in 0..240 {
        if engine.vectors_to_share() > 0 {
            shared += engine.share_vectors_step().unwrap();
        }
        if shared >= chunks {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!((shared, vector_rows(&pg)), (chunks, chunks as i64));
    assert_eq!(engine.vectors_to_share(), 0);
    drop(engine);
    pg.sql("TRUNCATE situate_vectors, situate_claims");

    // A process that exits first (`situate index`): the next one on the index pushes them,
    // with nothing to embed.
    let f = pages(30);
    proxy.set(Mode::Cut);
    let mut engine = f.engine_with(settings(&f), Counting::slow());
    engine.reconcile(&mut |_| {}).unwrap();
    let chunks = engine.status().chunks as i64;
    drop(engine);
    assert!(f.index_dir().join("unshared.list").exists());
    proxy.set(Mode::Pass);
    let embedder = Counting::slow();
    let mut engine = f.engine_with(settings(&f), embedder.clone());
    let report = engine.reconcile(&mut |_| {}).unwrap();
    assert_eq!((report.vectors_embedded, embedder.count()), (0, 0));
    assert_eq!(vector_rows(&pg), chunks, "every vector reached the cache");
    assert!(!f.index_dir().join("unshared.list").exists());
}

#[test]
fn a_newer_schema_or_a_full_disk_makes_a_member_read_only() {
    let Some(pg) = Postgres::start() else { return };
    let (a, b, c) = (Fixture::standard(), Fixture::standard(), Fixture::standard());
    let (mut first, _) = machine(&a, team(&pg.super_url()));
    first.reconcile(&mut |_| {}).unwrap();
    let rows = vector_rows(&pg);

    pg.sql("UPDATE situate_schema SET version = 99");
    b.write("new/fresh.md", "# Fresh\n\nA page about tidal pools.\n");
    let (mut second, _) = machine(&b, team(&pg.super_url()));
    let report = second.reconcile(&mut |_| {}).unwrap();
    assert!(report.vectors_from_team > 0, "a newer schema is still read");
    assert_eq!(vector_rows(&pg), rows);
    let reason = second.status().team.unwrap().live.unwrap().read_only.unwrap();
    assert!(reason.contains("version 99"), "{reason}");
    pg.sql(&format!("UPDATE situate_schema SET version = {}", situate::team::SCHEMA_VERSION));

    // The server's own error for a full disk, raised by a trigger.
    pg.sql(
        "CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS
           $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$;
         CREATE TRIGGER out_of_space BEFORE INSERT ON situate_vectors FOR EACH ROW EXECUTE FUNCTION full_disk()",
    );
    c.write("new/other.md", "# Other\n\nA page about lichens on granite.\n");
    let (mut third, computed) = machine(&c, team(&pg.super_url()));
    let report = third.reconcile(&mut |_| {}).unwrap();
    let status = third.status();
    assert_eq!((status.vectors, status.vectors_pending), (status.chunks, 0));
    assert_eq!(computed.count(), report.vectors_embedded);
    let reason = status.team.unwrap().live.unwrap().read_only.unwrap();
    assert!(reason.contains("No space left"), "{reason}");
    assert_eq!(vector_rows(&pg), rows);
}

#[test]
fn a_teammates_snippets_are_taken_instead_of_written_again() {
    let Some(pg) = Postgres::start() else { return };
    let chat = http_server::TestServer::start();
    chat.set_reply(|_| "This part of the notes describes a routine task for the team.".to_string());
    let snippets = situate::snippets::SnippetConfig {
        base_url: chat.openai_url(),
        max_retries: 1,
        timeout_secs: 5,
        ..situate::snippets::SnippetConfig::new(situate::snippets::ChatProvider::OpenAi, "small-chat")
    };
    let with_snippets = |f: &Fixture| {
        let mut settings = f.config();
        settings.snippets = Some(snippets.clone());
        settings.team = Some(team(&pg.super_url()));
        f.engine_with(settings, Counting::slow())
    };
    let (a, b) = (Fixture::standard(), Fixture::standard());
    let mut first = with_snippets(&a);
    first.reconcile(&mut |_| {}).unwrap();
    let run = first.write_snippets(situate::snippets::generator::Totals::default(), &mut |_| {}).unwrap();
    let calls = chat.chat_requests().len();
    assert!(run.indexed > 0 && calls == run.indexed, "{run:?}, {calls} calls");
    let shared =
        pg.count("SELECT count(*) FROM situate_snippets WHERE input_tokens >= 0 AND length(snippet) > 0");
    assert_eq!(shared, run.indexed as i64);

    chat.clear_requests();
    let mut second = with_snippets(&b);
    second.reconcile(&mut |_| {}).unwrap();
    let run = second.write_snippets(situate::snippets::generator::Totals::default(), &mut |_| {}).unwrap();
    assert_eq!(chat.chat_requests().len(), 0, "no call was made for a snippet the team has");
    assert_eq!(run.waiting, 0);
    let status = second.status();
    assert_eq!(status.snippets.as_ref().unwrap().pending, 0);
    assert_eq!(status.team.unwrap().tally.snippets_from_team, shared as u64);
    assert_eq!(answers(&first), answers(&second));

    // A snippet over the size limit on the server is refused, and written here instead.
    pg.sql("UPDATE situate_snippets SET snippet = repeat('x', 5000) WHERE key = (SELECT key FROM situate_snippets ORDER BY key LIMIT 1)");
    let c = Fixture::standard();
    let mut third = with_snippets(&c);
    third.reconcile(&mut |_| {}).unwrap();
    third.write_snippets(situate::snippets::generator::Totals::default(), &mut |_| {}).unwrap();
    assert_eq!(chat.chat_requests().len(), 1, "the refused snippet was written again");
    assert_eq!(answers(&first), answers(&third));
    assert_eq!(
        pg.count("SELECT count(*) FROM situate_snippets WHERE length(snippet) > 4000"),
        0,
        "and replaced"
    );
}

#[test]
fn tls_is_used_and_checked_as_sslmode_says() {
    let Some(pg) = Postgres::start() else { return };
    if std::process::Command::new("openssl").arg("version").output().is_err() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "openssl is not installed");
        eprintln!("skipped: the openssl command is not installed");
        return;
    }
    let front = postgres::TlsFront::to(pg.port);
    let base = format!("postgres://situate:{}@127.0.0.1:{}/postgres", postgres::SUPER_PASSWORD, front.port);
    // Checked against the CA named by sslrootcert, host name included.
    let f = Fixture::standard();
    let (mut checked, _) =
        machine(&f, team(&format!("{base}?sslmode=verify-full&sslrootcert={}", front.ca.display())));
    checked.reconcile(&mut |_| {}).unwrap();
    assert_eq!(checked.status().team.unwrap().live.unwrap().state.to_string(), "connected");
    assert!(vector_rows(&pg) > 0);

    // `require` encrypts without checking, as libpq does.
    let g = Fixture::standard();
    let (mut unchecked, computed) = machine(&g, team(&format!("{base}?sslmode=require")));
    let report = unchecked.reconcile(&mut |_| {}).unwrap();
    assert_eq!((report.vectors_from_team, computed.count()), (unchecked.status().chunks, 0));

    // `verify-full` with only the system's roots refuses a certificate they did not sign,
    // and so does `disable` against a front that speaks TLS only: the fill goes on here.
    for mode in ["verify-full", "disable"] {
        let h = Fixture::standard();
        let (mut refused, computed) = machine(&h, team(&format!("{base}?sslmode={mode}")));
        refused.reconcile(&mut |_| {}).unwrap();
        let state = refused.status().team.unwrap().live.unwrap().state.to_string();
        assert!(state.starts_with("unreachable"), "{mode}: {state}");
        if mode == "verify-full" {
            assert!(state.contains("certificate") || state.contains("issuer"), "{state}");
        }
        assert_eq!(computed.count(), refused.status().chunks);
    }
}

/// `situate` itself, on `fixture`, with its cache folder inside the fixture.
fn situate(fixture: &Fixture, args: &[&str], env: &[(&str, &str)]) -> (String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_situate"))
        .args(args)
        .current_dir(fixture.root())
        .env("XDG_CACHE_HOME", fixture.index.path())
        .env_remove("SITUATE_TEAM_URL")
        .env_remove("PGPASSWORD")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert!(out.status.success(), "{args:?}: {stdout}\n{stderr}");
    (stdout, stderr)
}

#[test]
fn the_binary_with_e5_shares_through_the_team_and_searches_never_wait_on_it() {
    let Some(pg) = Postgres::start() else { return };
    let proxy = Proxy::to(pg.port);
    let url = format!("postgres://situate@127.0.0.1:{}/postgres?sslmode=disable", proxy.port);
    let password = [("PGPASSWORD", postgres::SUPER_PASSWORD)];
    // The first machine names the cache in situate.toml, the password in PGPASSWORD.
    let a = Fixture::standard();
    a.write("situate.toml", format!("[team]\nurl = \"{url}\"\n"));
    let (out, _) = situate(&a, &["index", "--json"], &password);
    let first: serde_json::Value = serde_json::from_str(&out).unwrap();
    let chunks = first["chunks_written"].as_u64().unwrap();
    assert_eq!(
        (first["vectors_embedded"].as_u64(), first["vectors_from_team"].as_u64()),
        (Some(chunks), Some(0))
    );

    // The second names it in SITUATE_TEAM_URL, and computes nothing.
    let b = Fixture::standard();
    let env = [("PGPASSWORD", postgres::SUPER_PASSWORD), ("SITUATE_TEAM_URL", url.as_str())];
    let (out, _) = situate(&b, &["index"], &env);
    assert!(out.contains(&format!("{chunks} vectors taken from it, 0 computed here")), "{out}");
    let (out, _) = situate(&b, &["status", "--json"], &env);
    let status: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(status["team"]["vectors_from_team"].as_u64(), Some(chunks));
    assert_eq!(status["team"]["target"], format!("postgres://situate@127.0.0.1:{}/postgres", proxy.port));
    assert!(!out.contains(postgres::SUPER_PASSWORD));
    let (text, _) = situate(&b, &["status"], &env);
    assert!(text.contains(&format!("vectors: {chunks} from the team, 0 computed here")), "{text}");

    // Searches read the local index only: not one connection, even with the server hung.
    proxy.set(Mode::Stall);
    let before = proxy.connections();
    let (out, _) = situate(&b, &["search", "how long are backups kept", "-k", "3"], &env);
    assert!(out.contains("ops/backup.md"), "{out}");
    let (out, _) = situate(&b, &["search", "--no-update", "sourdough", "-k", "3"], &env);
    assert!(out.contains("kitchen/"), "{out}");
    assert_eq!(proxy.connections(), before, "a search never contacts the team cache");
}

#[test]
fn the_index_summary_says_why_the_team_gave_or_took_nothing() {
    let Some(pg) = Postgres::start() else { return };
    let a = Fixture::standard();
    let url = pg.url("situate", "wrong-secret-77", "postgres");
    let (out, _) = situate(&a, &["index"], &[("SITUATE_TEAM_URL", url.as_str())]);
    assert!(out.contains("computed here (unreachable: password authentication failed"), "{out}");
    assert!(!out.contains("wrong-secret-77"), "{out}");

    // The tables made by a writer, a member who only reads says so beside its counts.
    let w = Fixture::standard();
    let (mut writer, _) = machine(&w, team(&pg.super_url()));
    writer.reconcile(&mut |_| {}).unwrap();
    let b = Fixture::standard();
    b.write("situate.toml", "[team]\npush = false\n");
    let url = pg.super_url();
    let (out, _) = situate(&b, &["index"], &[("SITUATE_TEAM_URL", url.as_str())]);
    assert!(out.contains("computed here (reading only: push = false)"), "{out}");
}

#[test]
fn the_language_server_says_once_that_the_team_cache_is_unreachable_and_fills_here() {
    // No PostgreSQL at all: a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let f = Fixture::standard();
    let embeddings = http_server::TestServer::start();
    let mut client = lsp_client::LspClient::start(f.index.path());
    let options = serde_json::json!({
        "embedding": { "provider": "openai", "model": "mini", "base_url": embeddings.openai_url(), "max_retries": 0 },
        "team": { "url": format!("postgres://situate@127.0.0.1:{port}/situate"), "timeout_secs": 1 },
    });
    client.initialize(f.root(), options, serde_json::json!({}));
    let shown = client.wait_for(|m| m["method"] == "window/showMessage");
    let message = shown["params"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("the team cache at postgres://situate@127.0.0.1:{port}")), "{message}");
    assert!(message.contains("is unreachable") && message.contains("computed here"), "{message}");
    // The fill goes on here, and the outage is told once.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let status = client.command("situate.status", serde_json::Value::Null).unwrap();
        let folder = &status["folders"][0];
        if folder["phase"] == "ready"
            && folder["vectors_pending"] == 0
            && folder["index"]["chunks"].as_u64() > Some(0)
        {
            assert_eq!(folder["index"]["vectors"], folder["index"]["chunks"], "{folder}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the vectors were not filled: {folder}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let shown = client.received.iter().filter(|m| m["method"] == "window/showMessage").count();
    assert_eq!(shown, 1, "the outage is told once");
    assert!(client.shutdown().success());
}
