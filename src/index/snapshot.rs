//! [`Snapshot`]: one commit of the index, read from any thread while the writer goes on.

use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use tantivy::collector::{DocSetCollector, TopDocs};
use tantivy::query::{Bm25StatisticsProvider, BooleanQuery, BoostQuery, Occur, Query, RangeQuery, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocAddress, DocSet, Searcher, TERMINATED, TantivyDocument, Term};

use super::manifest::Manifest;
use super::record::{ChunkRecord, StoredFileMeta, record_of, u64_of};
use super::schema::Fields;
use super::vector_file::VectorSet;
use super::{IndexError, TextField, VectorSearch, WeightedTerm, store_err};

/// Chunk ids with their scores, best first.
pub type ScoredIds = Vec<(u64, f32)>;

/// Which chunks a search may return: those of documents that have every one of the front
/// matter filter terms `metadata` (see [`super::metadata`]), under one of `paths` (folders
/// or files, relative to the workspace; none means anywhere). Searches apply it inside each
/// arm, so that a filter never passes over matches that the unfiltered ranking would have
/// pushed out of the candidates.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope<'a> {
    pub metadata: &'a [String],
    pub paths: &'a [String],
}

impl Scope<'_> {
    /// Whether the scope is the whole index.
    pub fn is_everything(&self) -> bool {
        self.metadata.is_empty() && !self.limits_paths()
    }

    /// Whether some path is asked for, and none is the whole workspace (`""` or `/`).
    fn limits_paths(&self) -> bool {
        !self.paths.is_empty() && self.paths.iter().all(|p| !p.trim_end_matches('/').is_empty())
    }

    /// The query matching the chunks in the scope, or `None` for the whole index.
    fn query(&self, fields: &Fields) -> Option<Box<dyn Query>> {
        if self.is_everything() {
            return None;
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = self
            .metadata
            .iter()
            .map(|t| {
                let term = Term::from_field_text(fields.metadata_terms, t);
                (Occur::Must, Box::new(TermQuery::new(term, IndexRecordOption::Basic)) as Box<dyn Query>)
            })
            .collect();
        if self.limits_paths() {
            let mut under: Vec<(Occur, Box<dyn Query>)> = Vec::new();
            for path in self.paths {
                let path = path.trim_end_matches('/');
                // The file itself, and every path that starts with the folder and a slash
                // (`0` is the character after `/`).
                let file = Term::from_field_text(fields.path, path);
                under.push((Occur::Should, Box::new(TermQuery::new(file, IndexRecordOption::Basic))));
                let from = Term::from_field_text(fields.path, &format!("{path}/"));
                let to = Term::from_field_text(fields.path, &format!("{path}0"));
                under.push((
                    Occur::Should,
                    Box::new(RangeQuery::new(Bound::Included(from), Bound::Excluded(to))),
                ));
            }
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(under))));
        }
        Some(Box::new(BooleanQuery::new(clauses)))
    }
}

/// One commit of the index, readable from any thread while the writer goes on: the chunk
/// store as of that commit, its manifest, and its vectors.
#[derive(Clone)]
pub struct Snapshot {
    pub(super) searcher: Searcher,
    pub(super) fields: Fields,
    pub(super) model: Arc<VectorSet>,
    pub(super) quick: Arc<VectorSet>,
    pub(super) manifest: Arc<Manifest>,
    pub(super) store_dir: PathBuf,
    /// Tokens per field over the live chunks, counted once per commit on first use.
    pub(super) tokens: Arc<Mutex<HashMap<Field, u64>>>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("generation", &self.manifest.generation).finish()
    }
}

impl Snapshot {
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The stored vector of a chunk (int8 precision).
    pub fn vector_of(&self, id: u64) -> Result<Option<Vec<f32>>, IndexError> {
        self.model.vector_of(id)
    }

    /// Chunks with a vector of the index's model.
    pub fn vector_count(&self) -> usize {
        self.model.len()
    }

    /// Chunks in this commit.
    pub fn num_docs(&self) -> u64 {
        self.searcher.num_docs()
    }

    /// In how many live chunks an analysed term occurs in a searched field.
    pub fn doc_freq(&self, field: TextField, term: &str) -> u64 {
        self.live_stats().doc_freq(&Term::from_field_text(self.fields.searched(field), term)).unwrap_or(0)
    }

    /// In how many live chunks a filter term occurs (a `key=value` term of their front
    /// matter, or the marker of a language analysed as English).
    pub fn filter_doc_freq(&self, term: &str) -> u64 {
        self.live_stats().doc_freq(&Term::from_field_text(self.fields.metadata_terms, term)).unwrap_or(0)
    }

    fn live_stats(&self) -> LiveStats<'_> {
        LiveStats { searcher: &self.searcher, tokens: &self.tokens }
    }

    /// The chunks a search in `scope` may return.
    pub fn ids_in(&self, scope: &Scope) -> Result<HashSet<u64>, IndexError> {
        let Some(query) = scope.query(&self.fields) else {
            return Ok(self.manifest.chunk_ids().collect());
        };
        let addresses = self.searcher.search(&query, &DocSetCollector).map_err(store_err(&self.store_dir))?;
        // A folder can hold most of the index: each segment's ids are opened once.
        let mut by_segment: HashMap<u32, Vec<u32>> = HashMap::new();
        for a in addresses {
            by_segment.entry(a.segment_ord).or_default().push(a.doc_id);
        }
        let mut ids = HashSet::new();
        for (segment, docs) in by_segment {
            let reader = self.searcher.segment_reader(segment);
            let column = reader.fast_fields().u64("id").map_err(store_err(&self.store_dir))?;
            ids.extend(docs.into_iter().filter_map(|doc| column.first(doc)));
        }
        Ok(ids)
    }

    /// The vectors of `ids` (or the quick vectors standing in for them) nearest to `query`:
    /// a search within a filtered set (see [`VectorSet::nearest_among`]). Returns the best
    /// `limit` from each kind, the chunk's own vectors first.
    pub fn nearest_among(
        &self,
        query: &[f32],
        quick_query: Option<&[f32]>,
        ids: &HashSet<u64>,
        limit: usize,
    ) -> Result<(ScoredIds, ScoredIds), IndexError> {
        let own = self.model.nearest_among(query, limit, ids)?;
        let quick = match quick_query {
            Some(q) if !self.quick.is_empty() => {
                let pending: HashSet<u64> =
                    ids.iter().copied().filter(|id| !self.model.contains(*id)).collect();
                self.quick.nearest_among(q, limit, &pending)?
            }
            _ => Vec::new(),
        };
        Ok((own, quick))
    }

    /// Runs a disjunction of weighted term queries (BM25 per field, each scaled by its
    /// weight) and returns the ids and scores of the best `limit` chunks in `scope`.
    pub fn search_terms(
        &self,
        terms: &[WeightedTerm],
        limit: usize,
        scope: &Scope,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| {
                let term = Term::from_field_text(self.fields.searched(t.field), &t.term);
                let q = TermQuery::new(term, IndexRecordOption::WithFreqs);
                (Occur::Should, Box::new(BoostQuery::new(Box::new(q), t.weight)) as Box<dyn Query>)
            })
            .collect();
        let mut query = BooleanQuery::new(clauses);
        if let Some(filter) = scope.query(&self.fields) {
            // The filter must match and adds nothing to the score.
            query = BooleanQuery::new(vec![
                (Occur::Must, Box::new(query)),
                (Occur::Must, Box::new(BoostQuery::new(filter, 0.0))),
            ]);
        }
        let top = self
            .searcher
            .search_with_statistics_provider(
                &query,
                &TopDocs::with_limit(limit).order_by_score(),
                &self.live_stats(),
            )
            .map_err(store_err(&self.store_dir))?;
        let mut out = Vec::with_capacity(top.len());
        for (score, address) in top {
            if let Some(id) = self.id_at(address) {
                out.push((id, score));
            }
        }
        Ok(out)
    }

    /// The `limit` chunks nearest to `query`, with cosine similarities: exact up to
    /// [`super::EXACT_VECTOR_LIMIT`] vectors, as the quick tier's search.
    pub fn nearest(&self, query: &[f32], limit: usize) -> Result<Vec<(u64, f32)>, IndexError> {
        self.model.nearest(query, limit)
    }

    /// [`Snapshot::nearest`], searched as `how` says (to measure the approximate search
    /// against the exact one), with cosine similarities.
    pub fn nearest_with(
        &self,
        query: &[f32],
        limit: usize,
        how: VectorSearch,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        self.model.nearest_with(query, limit, how)
    }

    /// Chunks whose vectors are pending that have a quick vector standing in.
    pub fn quick_count(&self) -> usize {
        self.quick.len()
    }

    /// The quick vector standing in for a chunk's pending one.
    pub fn quick_vector_of(&self, id: u64) -> Result<Option<Vec<f32>>, IndexError> {
        self.quick.vector_of(id)
    }

    /// Among the chunks whose vectors are pending, the `limit` nearest to `query` (a vector
    /// of the quick model), with cosine similarities: exact up to
    /// [`super::EXACT_VECTOR_LIMIT`] of them. A quick vector file changed under the process
    /// is an error.
    pub fn nearest_quick(&self, query: &[f32], limit: usize) -> Result<Vec<(u64, f32)>, IndexError> {
        self.quick.nearest(query, limit)
    }

    /// [`Snapshot::nearest_quick`], searched as `how` says (to measure the approximate
    /// search against the exact one).
    pub fn nearest_quick_with(
        &self,
        query: &[f32],
        limit: usize,
        how: VectorSearch,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        self.quick.nearest_with(query, limit, how)
    }

    /// Bytes the quick vectors hold in memory (their rows stay on disk).
    pub fn quick_memory_bytes(&self) -> usize {
        self.quick.memory_bytes()
    }

    fn id_at(&self, address: DocAddress) -> Option<u64> {
        let segment = self.searcher.segment_reader(address.segment_ord);
        let ids = segment.fast_fields().u64("id").ok()?;
        ids.first(address.doc_id)
    }

    /// The stored chunks with these ids (those that exist in the snapshot).
    pub fn records(&self, ids: &[u64]) -> Result<HashMap<u64, ChunkRecord>, IndexError> {
        let mut out = HashMap::with_capacity(ids.len());
        for &id in ids {
            let q = TermQuery::new(Term::from_field_u64(self.fields.id, id), IndexRecordOption::Basic);
            let top = self
                .searcher
                .search(&q, &TopDocs::with_limit(1).order_by_score())
                .map_err(store_err(&self.store_dir))?;
            if let Some((_, address)) = top.first() {
                let doc: TantivyDocument = self.searcher.doc(*address).map_err(store_err(&self.store_dir))?;
                if let Some(r) = record_of(&self.fields, &doc) {
                    out.insert(id, r);
                }
            }
        }
        Ok(out)
    }

    /// All stored chunks of one file, in order.
    pub fn file_records(&self, path: &str) -> Result<Vec<ChunkRecord>, IndexError> {
        let q = TermQuery::new(Term::from_field_text(self.fields.path, path), IndexRecordOption::Basic);
        let limit = (self.searcher.num_docs() as usize).max(1);
        let top = self
            .searcher
            .search(&q, &TopDocs::with_limit(limit).order_by_score())
            .map_err(store_err(&self.store_dir))?;
        let mut out = Vec::with_capacity(top.len());
        for (_, address) in top {
            let doc: TantivyDocument = self.searcher.doc(address).map_err(store_err(&self.store_dir))?;
            out.extend(record_of(&self.fields, &doc));
        }
        out.sort_by_key(|r| r.ordinal);
        Ok(out)
    }

    /// Every chunk of this commit.
    pub fn all_records(&self) -> Result<Vec<ChunkRecord>, IndexError> {
        Ok(self.all_records_with_file_meta()?.into_iter().map(|(r, _)| r).collect())
    }

    /// Every chunk of this commit with its file's size, mtime and hash (to rebuild a manifest).
    pub(super) fn all_records_with_file_meta(
        &self,
    ) -> Result<Vec<(ChunkRecord, StoredFileMeta)>, IndexError> {
        let searcher = &self.searcher;
        let mut out = Vec::new();
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            for doc_id in segment.doc_ids_alive() {
                let doc: TantivyDocument =
                    searcher.doc(DocAddress::new(ord as u32, doc_id)).map_err(store_err(&self.store_dir))?;
                let f = &self.fields;
                let file = (u64_of(&doc, f.file_size), u64_of(&doc, f.file_mtime), u64_of(&doc, f.file_hash));
                out.extend(record_of(f, &doc).map(|r| (r, file)));
            }
        }
        Ok(out)
    }
}

/// BM25 statistics over the live chunks only. Tantivy's own count the documents an edit
/// deleted until their segment is merged, so the same files would score differently after
/// an incremental update than after indexing from scratch. Token totals are summed from the
/// stored field norms (as tantivy scores each document), the same way whatever the index's
/// history; document frequencies count postings of live documents where a segment has
/// deletions, and take the term dictionary's count where it has none.
struct LiveStats<'a> {
    searcher: &'a Searcher,
    tokens: &'a Mutex<HashMap<Field, u64>>,
}

impl Bm25StatisticsProvider for LiveStats<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let mut cache = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(total) = cache.get(&field) {
            return Ok(*total);
        }
        let mut total = 0u64;
        for segment in self.searcher.segment_readers() {
            let norms = segment.get_fieldnorms_reader(field)?;
            total += segment.doc_ids_alive().map(|doc| u64::from(norms.fieldnorm(doc))).sum::<u64>();
        }
        cache.insert(field, total);
        Ok(total)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.searcher.num_docs())
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let mut total = 0u64;
        for segment in self.searcher.segment_readers() {
            let inverted = segment.inverted_index(term.field())?;
            let Some(alive) = segment.alive_bitset() else {
                total += u64::from(inverted.doc_freq(term)?);
                continue;
            };
            let Some(mut postings) = inverted.read_postings(term, IndexRecordOption::Basic)? else {
                continue;
            };
            let mut doc = postings.doc();
            while doc != TERMINATED {
                total += u64::from(alive.is_alive(doc));
                doc = postings.advance();
            }
        }
        Ok(total)
    }
}
