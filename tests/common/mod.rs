//! Shared pieces of the integration tests: fixture workspaces in temp folders and an
//! embedder wrapper that counts what it is asked to embed.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use situate::config::Config;
use situate::engine::Engine;
use situate::index::OpenMode;
use situate::providers::static_model::StaticEmbedder;
use situate::providers::{EmbedError, Embedder, EmbedderIdentity};

/// A workspace and an index folder, both temporary.
pub struct Fixture {
    pub workspace: tempfile::TempDir,
    pub index: tempfile::TempDir,
}

impl Fixture {
    /// A copy of `tests/data/workspace`, its files last modified an hour ago (files
    /// modified seconds before indexing are read again on the next run, on purpose).
    pub fn standard() -> Fixture {
        Fixture::copy_of("workspace")
    }

    /// A copy of `tests/data/NAME`: `notes` holds Obsidian-, MkDocs- and Hugo-style front
    /// matter.
    pub fn copy_of(name: &str) -> Fixture {
        let f = Fixture::empty();
        copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name), f.root());
        f
    }

    pub fn empty() -> Fixture {
        Fixture { workspace: tempfile::tempdir().unwrap(), index: tempfile::tempdir().unwrap() }
    }

    pub fn root(&self) -> &Path {
        self.workspace.path()
    }

    pub fn index_dir(&self) -> PathBuf {
        self.index.path().join("idx")
    }

    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) {
        let p = self.root().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
    }

    /// The default settings for the static model, which is what these tests embed with
    /// (the default model, e5, is tested through the binary and in `tests/e5.rs`).
    pub fn config(&self) -> Config {
        let mut config = Config { index_dir: Some(self.index_dir()), ..Config::default() };
        config.set_embedding(situate::providers::EmbeddingConfig::Static { model_path: None });
        config
    }

    /// An engine with the default configuration and the given embedder.
    pub fn engine_with(&self, config: Config, embedder: Arc<dyn Embedder>) -> Engine {
        Engine::open_with(self.root(), config, Vec::new(), embedder, OpenMode::Write).unwrap()
    }

    pub fn engine(&self, embedder: Arc<dyn Embedder>) -> Engine {
        self.engine_with(self.config(), embedder)
    }
}

/// Sets a file's mtime an hour back.
pub fn age(path: &Path) {
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(path).unwrap().set_modified(hour_ago).unwrap();
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            age(&target);
        }
    }
}

/// The built-in model, counting the texts it embeds; optionally under another identity
/// (to play a model change).
pub struct Counting {
    inner: StaticEmbedder,
    pub texts: AtomicUsize,
    model_name: Option<String>,
    /// Claims to be slow, so the engine fills its vectors in after committing texts.
    slow: bool,
}

impl Counting {
    pub fn new() -> Arc<Counting> {
        Arc::new(Counting {
            inner: StaticEmbedder::builtin().unwrap(),
            texts: AtomicUsize::new(0),
            model_name: None,
            slow: false,
        })
    }

    /// The same model, presented as a slow one (a transformer, a remote server).
    pub fn slow() -> Arc<Counting> {
        Arc::new(Counting {
            inner: StaticEmbedder::builtin().unwrap(),
            texts: AtomicUsize::new(0),
            model_name: None,
            slow: true,
        })
    }

    pub fn renamed(model: &str) -> Arc<Counting> {
        Arc::new(Counting {
            inner: StaticEmbedder::builtin().unwrap(),
            texts: AtomicUsize::new(0),
            model_name: Some(model.to_string()),
            slow: false,
        })
    }

    pub fn count(&self) -> usize {
        self.texts.load(Ordering::SeqCst)
    }
}

impl Embedder for Counting {
    fn identity(&self) -> EmbedderIdentity {
        let mut id = self.inner.identity();
        if let Some(m) = &self.model_name {
            id.model = m.clone();
        }
        id
    }

    fn embeds_fast(&self) -> bool {
        !self.slow
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        self.inner.embed(texts)
    }
}

/// An embedder that always fails, to check that a failed batch writes nothing.
pub struct Failing;

impl Embedder for Failing {
    fn identity(&self) -> EmbedderIdentity {
        StaticEmbedder::builtin().unwrap().identity()
    }

    fn embeds_fast(&self) -> bool {
        true
    }

    fn embed(&self, _texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Err(EmbedError::Failed("model server went away".into()))
    }
}
