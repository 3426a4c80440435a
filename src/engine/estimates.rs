//! The snippet estimate of each file with chunks waiting, as last counted: kept for every
//! view of an engine ([`EstimateMemo`]) and in the index folder (`snippet-estimates.bin`),
//! so that a new process counts only the files that changed since.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};

use crate::index::files::write_atomic;
use crate::index::manifest::FileEntry;
use crate::index::{BytesReader, BytesWriter, framed, unframed};
use crate::snippets::SnippetConfig;
use crate::snippets::estimate::{COUNT_VERSION, Estimate};
use crate::snippets::prompt::PROMPT_VERSION;

/// The file's name in the index folder.
pub(super) const FILE_NAME: &str = "snippet-estimates.bin";

/// The file's first bytes: its name and the version of its layout.
const MAGIC: &[u8; 8] = b"sitest01";

/// What a file's estimate was counted for: a hash of its path, content hash and each
/// chunk's id and whether it waits for a snippet, in order. Chunk ids are never reused and
/// a file's chunks follow from its content and the settings that chunk it, so an unchanged
/// key under unchanged settings ([`EstimateMemo::new`]) means unchanged requests.
pub(super) fn file_key(path: &str, entry: &FileEntry) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(path.as_bytes());
    h.update(&[0]);
    h.update(&entry.content_hash.to_le_bytes());
    for chunk in &entry.chunks {
        h.update(&chunk.id.to_le_bytes());
        h.update(&[u8::from(chunk.snippet_pending)]);
    }
    h.digest()
}

/// The snippet estimate of each file with chunks waiting, by [`file_key`], as a count last
/// found it: a file counts again only when its content or which of its chunks wait changed.
/// The index folder keeps a copy ([`FILE_NAME`]) for the next process, read by the first
/// count of this one and written whole by each count that counted a file.
pub(super) struct EstimateMemo {
    /// A hash of everything besides a file's own key that its estimate depends on; the
    /// folder's copy is read only when it was written under the same.
    settings: u64,
    files: Mutex<HashMap<u64, Estimate>>,
    /// Held by the one count that runs; true once the folder's copy was read.
    pub(super) counting: Mutex<bool>,
    /// Files counted (not read back) so far.
    pub(super) files_counted: AtomicUsize,
}

impl EstimateMemo {
    /// A memo for estimates counted under `pipeline` (the settings that chunk files) and the
    /// snippet settings `snippets`: their mode, document budget and reply bound, the prompts'
    /// wording, the count's own rules and the program's version. The model is not part of
    /// it: every model's tokens are counted alike, and a change of model makes the chunks
    /// wait anew, which changes their files' keys.
    pub(super) fn new(pipeline: &str, snippets: Option<&SnippetConfig>) -> EstimateMemo {
        let settings = snippets.map_or(0, |s| {
            let described = format!(
                "{}|{pipeline}|{}|{}|{}|p{PROMPT_VERSION}|c{COUNT_VERSION}",
                env!("CARGO_PKG_VERSION"),
                s.mode,
                s.document_budget,
                s.max_tokens
            );
            xxhash_rust::xxh3::xxh3_64(described.as_bytes())
        });
        EstimateMemo {
            settings,
            files: Mutex::default(),
            counting: Mutex::new(false),
            files_counted: AtomicUsize::new(0),
        }
    }

    fn files(&self) -> MutexGuard<'_, HashMap<u64, Estimate>> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The total of the files `wanted` (by key), if each is counted for what it is now.
    pub(super) fn total(&self, wanted: &[u64]) -> Option<Estimate> {
        let files = self.files();
        wanted.iter().map(|key| files.get(key).copied()).sum()
    }

    /// Starts the one count that runs, waiting for another one when `wait`, else `None`
    /// while one runs. The first count of the memo reads the folder's copy in `index_dir`.
    pub(super) fn start_count(&self, wait: bool, index_dir: &Path) -> Option<MutexGuard<'_, bool>> {
        let mut read = if wait {
            self.counting.lock().unwrap_or_else(PoisonError::into_inner)
        } else {
            match self.counting.try_lock() {
                Ok(guard) => guard,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => return None,
            }
        };
        if !*read {
            *read = true;
            let stored = load(&index_dir.join(FILE_NAME), self.settings);
            let mut files = self.files();
            for (key, estimate) in stored {
                files.entry(key).or_insert(estimate);
            }
        }
        Some(read)
    }

    /// Which of `wanted` (their places) are not counted for what they are now. Another
    /// count may have covered some files since [`Self::total`]; none can while this one runs.
    pub(super) fn missing(&self, wanted: &[u64]) -> Vec<usize> {
        let files = self.files();
        (0..wanted.len()).filter(|&i| !files.contains_key(&wanted[i])).collect()
    }

    /// Keeps the files `wanted` (those just `counted`, by key, and the others as they were)
    /// and drops the rest; the total of their estimates. When a file was counted, the kept
    /// estimates are written to `index_dir` for the next process (best effort: a folder
    /// that cannot be written only costs the next process the same count). Only the count
    /// that runs calls it, and it counted every file that was not current.
    pub(super) fn replace(
        &self,
        wanted: &[u64],
        counted: HashMap<u64, Estimate>,
        index_dir: &Path,
    ) -> Estimate {
        let mut files = self.files();
        let wrote_any = !counted.is_empty();
        files.extend(counted);
        let kept: HashMap<u64, Estimate> =
            wanted.iter().filter_map(|key| files.get(key).map(|e| (*key, *e))).collect();
        *files = kept;
        let total = files.values().copied().sum();
        if wrote_any {
            let bytes = encode(self.settings, &files);
            drop(files);
            if let Err(e) = write_atomic(&index_dir.join(FILE_NAME), &bytes) {
                tracing::debug!("the snippet estimates are not kept in the index folder: {e}");
            }
        }
        total
    }
}

/// The file's bytes, [`framed`] under [`MAGIC`]: the settings hash, the number of files,
/// then each file's key and its estimate's calls, input, cached input and output tokens.
fn encode(settings: u64, files: &HashMap<u64, Estimate>) -> Vec<u8> {
    let mut body = BytesWriter(Vec::with_capacity(16 + files.len() * 16));
    body.u64(settings);
    body.varint(files.len() as u64);
    for (key, e) in files {
        body.u64(*key);
        for n in [e.calls, e.input_tokens, e.cached_input_tokens, e.output_tokens] {
            body.varint(n);
        }
    }
    framed(MAGIC, &body.0)
}

/// The estimates of a file written under `settings`; none when it is missing, damaged, of
/// another layout or of other settings (they are counted again, and the file written anew).
fn load(path: &Path, settings: u64) -> HashMap<u64, Estimate> {
    match std::fs::read(path) {
        Ok(bytes) => decode(&bytes, settings).unwrap_or_else(|why| {
            tracing::debug!("{}: {why}; the snippet estimates are counted again", path.display());
            HashMap::new()
        }),
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::debug!("{}: {e}; the snippet estimates are counted again", path.display());
            }
            HashMap::new()
        }
    }
}

fn decode(bytes: &[u8], settings: u64) -> Result<HashMap<u64, Estimate>, String> {
    let body = unframed(MAGIC, bytes).map_err(|_| "damaged or of another version".to_string())?;
    let mut r = BytesReader { bytes: body, at: 0 };
    if r.u64()? != settings {
        return Err("counted under other settings".to_string());
    }
    let len = r.count()?;
    // Each file takes at least 12 bytes: memory is not reserved for more.
    let mut files = HashMap::with_capacity(len.min(r.bytes.len() / 12));
    for _ in 0..len {
        let key = r.u64()?;
        let estimate = Estimate {
            calls: r.varint()?,
            input_tokens: r.varint()?,
            cached_input_tokens: r.varint()?,
            output_tokens: r.varint()?,
        };
        files.insert(key, estimate);
    }
    if r.at != r.bytes.len() {
        return Err("holds more than its count of files".to_string());
    }
    Ok(files)
}

#[cfg(test)]
pub(super) mod tests {
    use std::os::unix::fs::MetadataExt;
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::config::Config;
    use crate::engine::snippets::chunk_input;
    use crate::engine::{Engine, OpenMode, View};
    use crate::providers::EmbeddingConfig;
    use crate::providers::static_model::StaticEmbedder;
    use crate::snippets::estimate;
    use crate::snippets::prompt::{ChunkInput, SnippetMode};
    use crate::snippets::{ChatProvider, SnippetConfig};

    pub(in crate::engine) const FILES: [(&str, &str); 3] = [
        ("ops/backup.md", "# Backups\n\nNightly dumps.\n\n## Retention\n\nKept for thirty days.\n"),
        ("ops/deploy.md", "# Deploy\n\nPush the tag, then watch the canary for ten minutes.\n"),
        ("notes.txt", "Buy flour and yeast before the weekend.\n"),
    ];

    /// A workspace of [`FILES`] and a folder for its index.
    pub(in crate::engine) fn folders() -> (tempfile::TempDir, tempfile::TempDir) {
        let (root, index) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for (rel, text) in FILES {
            let path = root.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        (root, index)
    }

    pub(in crate::engine) fn snippets(mode: SnippetMode) -> SnippetConfig {
        SnippetConfig {
            base_url: "http://127.0.0.1:9/v1".to_string(),
            mode,
            ..SnippetConfig::new(ChatProvider::OpenAi, "small-chat")
        }
    }

    /// An engine of `root` whose snippets wait (nothing is sent until a run); a writer
    /// brings the index up to date first.
    pub(in crate::engine) fn open(
        root: &Path,
        index: &Path,
        snippets: SnippetConfig,
        mode: OpenMode,
    ) -> Engine {
        let mut config =
            Config { index_dir: Some(index.join("idx")), snippets: Some(snippets), ..Config::default() };
        config.set_embedding(EmbeddingConfig::Static { model_path: None });
        let embedder = Arc::new(StaticEmbedder::builtin().unwrap());
        let mut engine = Engine::open_with(root, config, Vec::new(), embedder, mode).unwrap();
        if mode == OpenMode::Write {
            engine.reconcile(&mut |_| {}).unwrap();
        }
        engine
    }

    fn kept(index: &Path) -> PathBuf {
        index.join("idx").join(FILE_NAME)
    }

    pub(in crate::engine) fn files_counted(engine: &Engine) -> usize {
        engine.setup.estimates.files_counted.load(Ordering::Relaxed)
    }

    /// Every waiting chunk's request built and counted together, in the manifest's order.
    pub(in crate::engine) fn counted_afresh(view: &View) -> Estimate {
        let setup = view.setup.snippets.as_ref().unwrap();
        let mut requests = Vec::new();
        for (path, entry) in &view.snapshot.manifest().files {
            let records = view.snapshot.file_records(path).unwrap();
            let inputs: Vec<ChunkInput> = records.iter().map(chunk_input).collect();
            for (i, c) in entry.chunks.iter().enumerate() {
                if c.snippet_pending {
                    requests.push(setup.request(&inputs, i));
                }
            }
        }
        estimate::estimate(&requests)
    }

    /// The status's estimate, as a one-off `situate status` shows it.
    fn status_estimate(engine: &Engine) -> Estimate {
        engine.view().status_with_estimate().unwrap().snippets.unwrap().estimate.unwrap()
    }

    #[test]
    fn a_new_engine_on_the_same_index_counts_no_unchanged_file_again() {
        let (root, index) = folders();
        let writer = open(root.path(), index.path(), snippets(SnippetMode::Document), OpenMode::Write);
        let first = status_estimate(&writer);
        assert_eq!(files_counted(&writer), FILES.len());
        assert_eq!(first, counted_afresh(&writer.view()));
        let written = std::fs::metadata(kept(index.path())).unwrap();

        // A second process while the first writes (a CLI beside an editor's server).
        let reader = open(root.path(), index.path(), snippets(SnippetMode::Document), OpenMode::ReadOnly);
        assert_eq!(status_estimate(&reader), first);
        assert_eq!(files_counted(&reader), 0, "every file's estimate is read from the index folder");
        let after = std::fs::metadata(kept(index.path())).unwrap();
        assert_eq!(
            (after.ino(), after.mtime_nsec()),
            (written.ino(), written.mtime_nsec()),
            "nothing counted, nothing written"
        );
        drop((writer, reader));

        // And after it, as the next writer.
        let next = open(root.path(), index.path(), snippets(SnippetMode::Document), OpenMode::Write);
        assert_eq!(next.snippet_estimate().unwrap(), first);
        assert_eq!(files_counted(&next), 0);
    }

    #[test]
    fn a_new_engine_counts_the_edited_file_alone_and_keeps_only_the_files_waiting() {
        for mode in [SnippetMode::Section, SnippetMode::Document] {
            let (root, index) = folders();
            let first = open(root.path(), index.path(), snippets(mode), OpenMode::Write);
            status_estimate(&first);
            drop(first);

            let (rel, text) = FILES[0];
            std::fs::write(root.path().join(rel), format!("{text}\n## Restore\n\nFrom the last dump.\n"))
                .unwrap();
            std::fs::remove_file(root.path().join(FILES[2].0)).unwrap();
            let next = open(root.path(), index.path(), snippets(mode), OpenMode::Write);
            let estimate = status_estimate(&next);
            assert_eq!(files_counted(&next), 1, "{mode}: only the edited file");
            assert_eq!(estimate, counted_afresh(&next.view()), "{mode}");
            assert_eq!(estimate.calls, 4, "{mode}: three chunks of the edited file, one of the other");
            let stored = load(&kept(index.path()), next.setup.estimates.settings);
            assert_eq!(stored.len(), 2, "{mode}: the removed file's estimate is dropped");
            assert_eq!(stored.values().copied().sum::<Estimate>(), estimate, "{mode}");
        }
    }

    #[test]
    fn a_change_of_settings_that_moves_the_estimate_counts_again() {
        let (root, index) = folders();
        let first = open(root.path(), index.path(), snippets(SnippetMode::Section), OpenMode::Write);
        status_estimate(&first);
        drop(first);
        let changes = [
            SnippetConfig { document_budget: 20, ..snippets(SnippetMode::Document) },
            snippets(SnippetMode::Document),
            SnippetConfig { max_tokens: 40, ..snippets(SnippetMode::Document) },
        ];
        for (i, changed) in changes.into_iter().enumerate() {
            let engine = open(root.path(), index.path(), changed, OpenMode::Write);
            assert_eq!(status_estimate(&engine), counted_afresh(&engine.view()), "change {i}");
            assert_eq!(files_counted(&engine), FILES.len(), "change {i}");
        }
        // Every model's tokens are counted alike: another model counts nothing again.
        let other_model =
            SnippetConfig { model: "other-chat".to_string(), ..snippets(SnippetMode::Document) };
        let other = SnippetConfig { max_tokens: 40, ..other_model };
        let engine = open(root.path(), index.path(), other, OpenMode::Write);
        assert_eq!(status_estimate(&engine), counted_afresh(&engine.view()));
        assert_eq!(files_counted(&engine), 0);
    }

    #[test]
    fn a_damaged_or_foreign_file_is_counted_again_without_a_word() {
        let (root, index) = folders();
        let first = open(root.path(), index.path(), snippets(SnippetMode::Document), OpenMode::Write);
        let counted = status_estimate(&first);
        drop(first);
        let healthy = std::fs::read(kept(index.path())).unwrap();
        let mut other_version = healthy.clone();
        other_version[MAGIC.len() - 3] = b'9';
        let mut flipped = healthy.clone();
        flipped[MAGIC.len() + 20] ^= 1;
        let mut zeroed = healthy.clone();
        zeroed[MAGIC.len()..].fill(0);
        let damaged: [(&str, Vec<u8>); 7] = [
            ("cut in half", healthy[..healthy.len() / 2].to_vec()),
            ("emptied", Vec::new()),
            ("zeroed", zeroed),
            ("a bit flipped", flipped),
            ("garbage appended", [healthy.as_slice(), &[0xff; 1500]].concat()),
            ("of another version", other_version),
            ("a folder in its place", Vec::new()),
        ];
        for (what, bytes) in damaged {
            let path = kept(index.path());
            if what.starts_with("a folder") {
                std::fs::remove_file(&path).unwrap();
                std::fs::create_dir(&path).unwrap();
            } else {
                std::fs::write(&path, &bytes).unwrap();
            }
            let engine = open(root.path(), index.path(), snippets(SnippetMode::Document), OpenMode::ReadOnly);
            let status = engine.view().status_with_estimate().unwrap();
            assert!(status.notes.is_empty(), "{what}: {:?}", status.notes);
            assert_eq!(status.snippets.unwrap().estimate, Some(counted), "{what}");
            assert_eq!(files_counted(&engine), FILES.len(), "{what}");
            if path.is_dir() {
                std::fs::remove_dir(&path).unwrap();
                continue;
            }
            // Written whole again, and read by the next process.
            let next = open(root.path(), index.path(), snippets(SnippetMode::Document), OpenMode::ReadOnly);
            assert_eq!(status_estimate(&next), counted, "{what}");
            assert_eq!(files_counted(&next), 0, "{what}");
        }
    }

    #[test]
    fn the_file_reads_back_what_was_written() {
        let files: HashMap<u64, Estimate> = [
            (7, Estimate { calls: 3, input_tokens: 1 << 40, cached_input_tokens: 0, output_tokens: 180 }),
            (u64::MAX, Estimate { calls: 1, input_tokens: 127, cached_input_tokens: 128, output_tokens: 60 }),
        ]
        .into();
        let bytes = encode(42, &files);
        assert_eq!(decode(&bytes, 42).unwrap(), files);
        assert_eq!(decode(&bytes, 43), Err("counted under other settings".to_string()));
        // The frame (magic, length, checksum), the settings, the count, two files.
        assert_eq!(bytes.len(), MAGIC.len() + 8 + 8 + 8 + 1 + 2 * 8 + (1 + 6 + 1 + 2) + (1 + 1 + 2 + 1));
    }
}
