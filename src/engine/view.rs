//! [`View`]: one commit of an engine's index with the settings and model that made it;
//! what searches, hovers and status read from any thread.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tantivy::tokenizer::TokenStream;

use super::estimates;
use super::snippets::chunk_input;
use super::{EngineError, LanguageChunks, Setup, SnippetStatus, Stale, Status, TeamReport, relative_to};
use crate::analysis::{self, Language};
use crate::config::Config;
use crate::index::manifest::FileEntry;
use crate::index::{ChunkRecord, Snapshot, TextField};
use crate::providers::{Embedder, EmbedderIdentity};
use crate::search::preview::Previewer;
use crate::search::{self, Expand, Hit, SearchConfig, SearchRequest, expand};
use crate::snippets::estimate::{self, Estimate};
use crate::snippets::prompt::ChunkInput;
use crate::team::Target;
use crate::team::tally::Tally;
use crate::workspace;

/// How a file on disk compares with what a view indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Indexed as it is on disk.
    Current,
    /// Indexed, and changed on disk since.
    Changed,
    /// On disk, not indexed.
    Unindexed,
    /// Indexed, and gone from disk since.
    Removed,
    /// Neither on disk nor indexed.
    Absent,
}

/// A read-only view of one commit of an engine's index, with the settings and model that
/// made it: what searches, hovers and status read. Cheap to clone and to send to another
/// thread; it never waits on the writer, which goes on indexing meanwhile.
#[derive(Clone)]
pub struct View {
    pub(super) setup: Arc<Setup>,
    pub(super) snapshot: Snapshot,
    pub(super) index_dir: PathBuf,
    pub(super) read_only: bool,
    pub(super) other_writer: bool,
    pub(super) notes: Vec<String>,
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View").field("root", &self.setup.root).field("snapshot", &self.snapshot).finish()
    }
}

impl View {
    pub fn root(&self) -> &Path {
        &self.setup.root
    }

    pub fn config(&self) -> &Config {
        &self.setup.config
    }

    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Runs a search; each hit comes with the lines that show why it matched.
    pub fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, EngineError> {
        let mut hits = self.search_with(&self.setup.config.search, request)?;
        self.add_previews(&request.query, &mut hits);
        Ok(hits)
    }

    /// Runs a search with other ranking settings than the configured ones (an evaluation
    /// compares settings this way), widening the hits as `request.expand` asks. Hits have
    /// no previews: an evaluation only ranks them.
    pub fn search_with(
        &self,
        config: &SearchConfig,
        request: &SearchRequest,
    ) -> Result<Vec<Hit>, EngineError> {
        let embedder = self.setup.embedder.as_ref();
        let quick = self.setup.quick.as_deref();
        if request.expand == Expand::None {
            return Ok(search::search(&self.snapshot, embedder, quick, config, request)?);
        }
        let limit = request.limit.clamp(1, search::MAX_LIMIT);
        let pool = SearchRequest { limit: expand::pool_size(limit), ..request.clone() };
        let hits = search::search(&self.snapshot, embedder, quick, config, &pool)?;
        let mut files =
            expand::FileSource::new(&self.snapshot, &self.setup.root, self.setup.config.walk.encoding);
        let settings = config.expand_settings(request.expand);
        Ok(expand::expand(hits, limit, &settings, &mut files)?)
    }

    /// Gives each hit the lines that show why it matched `query`. Lines no query term
    /// matches are compared by meaning with the fast model: the quick one when the index's
    /// own is slow.
    fn add_previews(&self, query: &str, hits: &mut [Hit]) {
        let parts = search::compound_parts(&self.snapshot, query, &[]).into_iter().map(|(t, _)| t).collect();
        self.add_previews_by(Previewer::new(query, Some(self.fast())).with_parts(parts), hits);
    }

    /// Gives each hit the preview `previewer` makes of it.
    fn add_previews_by(&self, mut previewer: Previewer, hits: &mut [Hit]) {
        for hit in hits {
            hit.preview = previewer.preview(&hit.chunk);
        }
    }

    /// The indexed chunks of a file (workspace-relative or absolute path), or only those
    /// whose line range holds `line`.
    pub fn chunks_at(&self, path: &str, line: Option<u32>) -> Result<Vec<ChunkRecord>, EngineError> {
        let rel = self.relative(path).ok_or_else(|| EngineError::NotIndexed { path: path.to_string() })?;
        if !self.snapshot.manifest().files.contains_key(&rel) {
            return Err(EngineError::NotIndexed { path: path.to_string() });
        }
        let records = self.snapshot.file_records(&rel)?;
        Ok(match line {
            None => records,
            Some(line) => {
                let holding: Vec<ChunkRecord> =
                    records.iter().filter(|r| r.start_line <= line && line <= r.end_line).cloned().collect();
                if holding.is_empty() {
                    // Between chunks (a blank line, a bare heading): the chunk that follows.
                    records.into_iter().find(|r| r.start_line > line).into_iter().collect()
                } else {
                    holding
                }
            }
        })
    }

    /// The chunks most related to `of`, leaving out itself and its neighbours (the chunks
    /// just before and after it in its file), and the chunks that are the least related of
    /// every arm's candidates.
    pub fn similar(&self, of: &ChunkRecord, limit: usize) -> Result<Vec<Hit>, EngineError> {
        let neighbour = |r: &ChunkRecord| r.path == of.path && r.ordinal.abs_diff(of.ordinal) <= 1;
        let mut hits = search::similar(&self.snapshot, &self.setup.config.search, of, limit, neighbour)?;
        // Each arm's scores are normalised between its best and worst candidates, so a
        // chunk that scores nothing is the last of each arm: in a folder of a few notes,
        // where the candidates are all its chunks, the one least related to `of`. It would
        // be listed as related with a score of 0.
        hits.retain(|h| h.score > 0.0);
        let terms = self.telling_terms(of);
        self.add_previews_by(
            Previewer::of_terms(terms, of.language(), &of.text, Some(self.fast())),
            &mut hits,
        );
        Ok(hits)
    }

    /// The fast model, which previews compare lines with: the quick one when the index's
    /// own is slow.
    fn fast(&self) -> &dyn Embedder {
        self.setup.quick.as_deref().unwrap_or(self.setup.embedder.as_ref())
    }

    /// The terms of `of` that tell it apart, which the previews of its related chunks
    /// mark: those that some other chunk holds too, but at most one chunk in fifty (or two
    /// chunks, in a small index). Words nearly every chunk holds (`using`, the name of a
    /// product) would mark every line of every related chunk, and a letter alone (the `e`
    /// of `e.g.`) tells nothing; nor does a pair of Chinese, Japanese or Korean letters,
    /// whose rarest are those that straddle two words.
    fn telling_terms(&self, of: &ChunkRecord) -> HashSet<String> {
        let most = (self.snapshot.num_docs() / 50).max(2);
        let mut analyzer = analysis::analyzer_for(of.language());
        let mut stream = analyzer.token_stream(&of.text);
        let mut terms = HashSet::new();
        while let Some(token) = stream.next() {
            let letters = token.text.chars().count();
            if letters > 1
                && !(letters == 2 && analysis::has_cjk(&token.text))
                && !terms.contains(&token.text)
                && (2..=most).contains(&self.snapshot.doc_freq(TextField::Text, &token.text))
            {
                terms.insert(token.text.clone());
            }
        }
        terms
    }

    /// How many chunks still wait for the index's model's vectors, and about how many
    /// seconds the rest will take at the last measured rate. Cheap: no file is read.
    pub fn vectors_pending(&self) -> (usize, Option<u64>) {
        let manifest = self.snapshot.manifest();
        let pending = if manifest.vectors_pending {
            manifest.chunk_count().saturating_sub(self.snapshot.vector_count())
        } else {
            0
        };
        let eta_secs = manifest
            .fill_rate
            .filter(|rate| *rate > 0.0 && pending > 0)
            .map(|rate| (pending as f32 / rate).ceil() as u64);
        (pending, eta_secs)
    }

    /// The index's embedding model.
    pub fn embedder(&self) -> EmbedderIdentity {
        self.setup.embedder.identity()
    }

    /// Files, chunks, model and health of the index.
    pub fn status(&self) -> Status {
        let manifest = self.snapshot.manifest();
        let chunks = manifest.chunk_count();
        let vectors = self.snapshot.vector_count();
        let (vectors_pending, vectors_eta_secs) = self.vectors_pending();
        Status {
            workspace: self.setup.root.display().to_string(),
            index_dir: self.index_dir.display().to_string(),
            read_only: self.read_only,
            other_writer: self.other_writer,
            files: manifest.files.len(),
            chunks,
            vectors,
            vectors_pending,
            vectors_eta_secs,
            embedder: self.setup.embedder.identity(),
            last_commit: manifest.committed_at,
            generation: manifest.generation,
            disk_bytes: crate::index::dir_bytes(&self.index_dir),
            skipped: manifest.skipped.clone(),
            lossy: manifest.files.iter().filter(|(_, f)| f.lossy).map(|(path, _)| path.clone()).collect(),
            config_problems: self.setup.config_problems.iter().map(ToString::to_string).collect(),
            notes: self.notes.clone(),
            snippets: self.setup.snippets.as_ref().map(|setup| {
                let pending = manifest.snippets_pending().count();
                SnippetStatus {
                    model: setup.model_label.clone(),
                    mode: setup.config.mode.to_string(),
                    done: manifest.chunk_count() - pending,
                    pending,
                    max_calls: setup.config.max_calls,
                    max_run_tokens: setup.config.max_run_tokens,
                    estimate: None,
                }
            }),
            team: self.team_report(),
            languages: self.languages(chunks),
        }
    }

    /// How many of the `chunks` each language's rules analyse, most first, from the marker
    /// term that a chunk in another language than English carries: in its text, or with its
    /// filter terms for a language analysed as English.
    fn languages(&self, chunks: usize) -> Vec<LanguageChunks> {
        let entry = |language: Language, chunks: usize| LanguageChunks {
            code: language.code(),
            name: language.name(),
            chunks,
        };
        let mut languages: Vec<LanguageChunks> = Language::all()
            .filter(|&l| l != Language::ENGLISH)
            .map(|l| {
                let marked = if l.analysed_as_english() {
                    self.snapshot.filter_doc_freq(&l.marker())
                } else {
                    self.snapshot.doc_freq(TextField::Text, &l.marker())
                };
                entry(l, marked as usize)
            })
            .filter(|l| l.chunks > 0)
            .collect();
        let others: usize = languages.iter().map(|l| l.chunks).sum();
        if chunks > others {
            languages.push(entry(Language::ENGLISH, chunks - others));
        }
        languages.sort_by(|a, b| b.chunks.cmp(&a.chunks).then(a.code.cmp(b.code)));
        languages
    }

    /// The team cache named by the settings, what this process saw of it, and its tally.
    fn team_report(&self) -> Option<TeamReport> {
        let config = self.setup.config.team.as_ref()?;
        let target = match &self.setup.team {
            Some(team) => team.shown().to_string(),
            None => Target::parse(&config.url, None).map(|t| t.shown).unwrap_or_else(|e| e.to_string()),
        };
        let model = super::team::model_key(self.setup.embedder.as_ref()).identity;
        Some(TeamReport {
            target,
            live: self.setup.team.as_ref().map(|t| t.status()),
            tally: Tally::load(&self.index_dir, &model),
        })
    }

    /// [`View::status`], with what writing the snippets still waiting would cost when some
    /// wait (counting it builds every request, so it is only done then).
    ///
    /// It does not wait for another view's count: while one runs, the status comes without
    /// an estimate, at once (the editor asks again in a few seconds), unless what is counted
    /// already covers this commit.
    pub fn status_with_estimate(&self) -> Result<Status, EngineError> {
        let mut status = self.status();
        if let Some(snippets) = status.snippets.as_mut()
            && snippets.pending > 0
        {
            snippets.estimate = self.estimate(false)?;
        }
        Ok(status)
    }

    /// What writing the snippets of the chunks still waiting would cost: the requests are
    /// built and their tokens counted, nothing is sent. Waits for another view's count.
    ///
    /// Each file's share is kept for every view of this engine and in the index folder for
    /// the next process ([`estimates::EstimateMemo`]): asked again on the same commit,
    /// nothing is counted; after a commit, or in a new process, only the files whose chunks
    /// or waiting chunks changed since are. The total is the same as counting every request
    /// afresh, since no two files share a document part (it names the file's path), so no
    /// request is served from the prompt cache across files.
    pub fn snippet_estimate(&self) -> Result<Estimate, EngineError> {
        Ok(self.estimate(true)?.unwrap_or_default())
    }

    /// The estimate of this commit; `None` when another count runs and `wait` is false.
    ///
    /// Only a count writes to the memo, one count at a time; the memo itself is locked only
    /// to read or replace it, never while counting, so a status whose files are all counted
    /// never waits for a count of another commit.
    fn estimate(&self, wait: bool) -> Result<Option<Estimate>, EngineError> {
        let Some(setup) = &self.setup.snippets else { return Ok(Some(Estimate::default())) };
        let memo = &self.setup.estimates;
        let waiting: Vec<(&String, &FileEntry)> = self
            .snapshot
            .manifest()
            .files
            .iter()
            .filter(|(_, entry)| entry.chunks.iter().any(|c| c.snippet_pending))
            .collect();
        let wanted: Vec<u64> = waiting.iter().map(|(path, entry)| estimates::file_key(path, entry)).collect();
        if let Some(total) = memo.total(&wanted) {
            return Ok(Some(total));
        }
        let Some(_counting) = memo.start_count(wait, &self.index_dir) else { return Ok(None) };
        let missing = memo.missing(&wanted);
        let mut counted = HashMap::with_capacity(missing.len());
        for i in missing {
            let (path, entry) = waiting[i];
            let records = self.snapshot.file_records(path)?;
            let inputs: Vec<ChunkInput> = records.iter().map(chunk_input).collect();
            let estimate = if inputs.is_empty() {
                Estimate::default()
            } else {
                let prompts = setup.prompts(&inputs);
                let pending =
                    entry.chunks.iter().enumerate().filter(|(_, c)| c.snippet_pending).map(|(i, _)| i);
                estimate::estimate_priced(pending.filter(|&i| i < inputs.len()).map(|i| prompts.priced(i)))
            };
            memo.files_counted.fetch_add(1, Ordering::Relaxed);
            counted.insert(wanted[i], estimate);
        }
        Ok(Some(memo.replace(&wanted, counted, &self.index_dir)))
    }

    /// How the file at `rel` (workspace-relative) on disk compares with what this view
    /// indexed, by size and modification time.
    pub fn freshness(&self, rel: &str) -> Freshness {
        match (workspace::stat(&self.setup.root, rel), self.snapshot.manifest().files.get(rel)) {
            (Ok(f), Some(e)) if e.size == f.size && e.mtime_ns == f.mtime_ns => Freshness::Current,
            (Ok(_), Some(_)) => Freshness::Changed,
            (Ok(_), None) => Freshness::Unindexed,
            (Err(_), Some(_)) => Freshness::Removed,
            (Err(_), None) => Freshness::Absent,
        }
    }

    /// Walks the workspace and compares each file with what this view indexed, as a
    /// reconcile would, without reading any file: what is stale in this commit.
    pub fn stale_files(&self) -> Stale {
        let walked = workspace::walk(&self.setup.root, &self.setup.config.walk, Some(&self.index_dir));
        let manifest = self.snapshot.manifest();
        let skipped: std::collections::HashSet<&str> =
            manifest.skipped.iter().map(|s| s.path.as_str()).collect();
        let mut stale = Stale::default();
        for file in &walked.files {
            match manifest.files.get(&file.rel_path) {
                Some(e) if e.size == file.size && e.mtime_ns == file.mtime_ns => {}
                Some(_) => stale.changed.push(file.rel_path.clone()),
                None if skipped.contains(file.rel_path.as_str()) => {}
                None => stale.unindexed.push(file.rel_path.clone()),
            }
        }
        let seen: std::collections::HashSet<&str> =
            walked.files.iter().map(|f| f.rel_path.as_str()).collect();
        stale.removed = manifest.files.keys().filter(|p| !seen.contains(p.as_str())).cloned().collect();
        stale
    }

    /// The workspace-relative paths of the indexed files, sorted.
    pub fn indexed_paths(&self) -> impl Iterator<Item = &str> {
        self.snapshot.manifest().files.keys().map(String::as_str)
    }

    /// Chunks of the indexed file at `rel` (0 when it is not indexed).
    pub fn chunk_count(&self, rel: &str) -> usize {
        self.snapshot.manifest().files.get(rel).map_or(0, |e| e.chunks.len())
    }

    /// `path` relative to the workspace root, `/`-separated; `None` when outside it.
    pub fn relative(&self, path: &str) -> Option<String> {
        relative_to(&self.setup.root, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::estimates::tests::{FILES, counted_afresh, files_counted, folders, open, snippets};
    use crate::engine::{Engine, OpenMode};
    use crate::providers::EmbeddingConfig;
    use crate::providers::static_model::StaticEmbedder;
    use crate::snippets::prompt::SnippetMode;

    /// An engine over the estimate tests' files whose snippets wait (the server is never
    /// asked: nothing is sent until a run), and the folders it lives in.
    fn engine(mode: SnippetMode) -> (Engine, tempfile::TempDir, tempfile::TempDir) {
        let (root, index) = folders();
        let engine = open(root.path(), index.path(), snippets(mode), OpenMode::Write);
        (engine, root, index)
    }

    #[test]
    fn a_status_of_a_commit_already_estimated_counts_nothing_again() {
        let (engine, _root, _index) = engine(SnippetMode::Section);
        let first = engine.view().status_with_estimate().unwrap();
        assert_eq!(files_counted(&engine), FILES.len());
        for _ in 0..3 {
            // A new view of the same commit, as each poll of a server takes.
            let again = engine.view().status_with_estimate().unwrap();
            assert_eq!(again.snippets.unwrap().estimate, first.snippets.as_ref().unwrap().estimate);
        }
        assert_eq!(files_counted(&engine), FILES.len());
        let estimate = first.snippets.unwrap().estimate.unwrap();
        assert_eq!(estimate, counted_afresh(&engine.view()));
        assert_eq!(estimate.calls, 4);
    }

    #[test]
    fn after_a_commit_only_the_files_that_changed_are_counted_and_the_total_is_exact() {
        for mode in [SnippetMode::Section, SnippetMode::Document] {
            let (mut engine, root, _index) = engine(mode);
            assert_eq!(engine.snippet_estimate().unwrap(), counted_afresh(&engine.view()));
            let before = files_counted(&engine);

            let (rel, text) = FILES[0];
            std::fs::write(root.path().join(rel), format!("{text}\n## Restore\n\nFrom the last dump.\n"))
                .unwrap();
            std::fs::remove_file(root.path().join(FILES[2].0)).unwrap();
            engine.reconcile(&mut |_| {}).unwrap();
            let estimate = engine.snippet_estimate().unwrap();
            assert_eq!(files_counted(&engine), before + 1, "{mode}: only the edited file again");
            assert_eq!(estimate, counted_afresh(&engine.view()), "{mode}");
            assert_eq!(estimate.calls, 4, "{mode}: three chunks of the edited file, one of the other");
        }
    }

    #[test]
    fn a_status_does_not_wait_for_another_count() {
        let (mut engine, root, _index) = engine(SnippetMode::Document);
        let counted = engine.snippet_estimate().unwrap();
        {
            // Another view's count runs meanwhile.
            let _counting = engine.setup.estimates.counting.lock().unwrap();
            let status = engine.view().status_with_estimate().unwrap();
            assert_eq!(status.snippets.unwrap().estimate, Some(counted), "this commit is counted already");
        }
        std::fs::write(root.path().join(FILES[1].0), "# Deploy\n\nTag, then watch.\n").unwrap();
        engine.reconcile(&mut |_| {}).unwrap();
        let before = files_counted(&engine);
        {
            let _counting = engine.setup.estimates.counting.lock().unwrap();
            let status = engine.view().status_with_estimate().unwrap();
            let snippets = status.snippets.unwrap();
            assert!(snippets.pending > 0);
            assert_eq!(snippets.estimate, None, "a status during another count comes without an estimate");
        }
        assert_eq!(files_counted(&engine), before);
        let status = engine.view().status_with_estimate().unwrap();
        assert_eq!(status.snippets.unwrap().estimate, Some(counted_afresh(&engine.view())));
        assert_eq!(files_counted(&engine), before + 1);
    }

    #[test]
    fn without_snippets_there_is_nothing_to_count() {
        let (root, index) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(root.path().join("a.md"), "# A\n\nText.\n").unwrap();
        let mut config = Config { index_dir: Some(index.path().join("idx")), ..Config::default() };
        config.set_embedding(EmbeddingConfig::Static { model_path: None });
        let embedder = Arc::new(StaticEmbedder::builtin().unwrap());
        let mut engine =
            Engine::open_with(root.path(), config, Vec::new(), embedder, OpenMode::Write).unwrap();
        engine.reconcile(&mut |_| {}).unwrap();
        assert_eq!(engine.snippet_estimate().unwrap(), Estimate::default());
        assert_eq!(files_counted(&engine), 0);
    }
}
