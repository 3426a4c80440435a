//! The BM25F query: analysed query terms over the text, title, headings, path, snippet and
//! front matter fields, with field boosts and one IDF per term across fields. The front
//! matter values in the header (tags, aliases: other names for the document) weigh as
//! the title does.

use std::collections::HashSet;

use crate::index::{IndexError, Scope, Snapshot, TextField, WeightedTerm};

/// BM25 field weights (the text field weighs 1).
#[derive(Debug, Clone, Copy)]
pub struct FieldBoosts {
    pub title: f32,
    pub headings: f32,
    pub path: f32,
    pub snippet: f32,
}

/// The ids and BM25 scores of the best `limit` chunks for analysed `terms` with their
/// weights in the query (see [`crate::analysis::weighted_query_terms_in`]), among the chunks
/// in `scope`.
pub fn bm25(
    snapshot: &Snapshot,
    terms: &[(String, f32)],
    boosts: FieldBoosts,
    limit: usize,
    scope: &Scope,
) -> Result<Vec<(u64, f32)>, IndexError> {
    if terms.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let idf = idf_of(snapshot);
    let mut query = Vec::new();
    for (term, share) in terms {
        let (field_terms, shared_df) = field_doc_freqs(snapshot, term, boosts);
        // One IDF per term, as BM25F has it: tantivy weighs each field by the term's
        // rarity in that field, so a word common in text ("request") but rare among
        // titles and paths would earn a large bonus in every short field that has it.
        // Scaling each field to the term's document-level IDF (approximated by its
        // largest document frequency over the fields) removes that bonus.
        for (field, boost, df) in field_terms {
            if df == 0 {
                continue;
            }
            let weight = share * boost * idf(shared_df) / idf(df).max(f32::EPSILON);
            query.push(WeightedTerm { field, term: term.clone(), weight });
        }
    }
    snapshot.search_terms(&query, limit, scope)
}

/// The searched fields with their boosts, those boosted above 0 only, and the document
/// frequency of `term` in each; then the term's document frequency as a whole, taken as its
/// largest over those fields.
fn field_doc_freqs(
    snapshot: &Snapshot,
    term: &str,
    boosts: FieldBoosts,
) -> (Vec<(TextField, f32, u64)>, u64) {
    let fields = [
        (TextField::Text, 1.0),
        (TextField::Title, boosts.title),
        (TextField::Headings, boosts.headings),
        (TextField::Path, boosts.path),
        (TextField::Snippet, boosts.snippet),
        (TextField::Metadata, boosts.title),
    ];
    let field_terms: Vec<(TextField, f32, u64)> = fields
        .into_iter()
        .filter(|(_, boost)| *boost > 0.0)
        .map(|(field, boost)| (field, boost, snapshot.doc_freq(field, term)))
        .collect();
    let shared = field_terms.iter().map(|(_, _, df)| *df).max().unwrap_or(0);
    (field_terms, shared)
}

/// BM25's inverse document frequency over the chunks of `snapshot`.
fn idf_of(snapshot: &Snapshot) -> impl Fn(u64) -> f32 {
    let total = snapshot.num_docs() as f32;
    move |df: u64| (1.0 + (total - df as f32 + 0.5) / (df as f32 + 0.5)).ln()
}

/// How much of the query a chunk holds: the IDF-weighted share of the query's analysed
/// `terms` found among the chunk's own analysed terms (`held`), from 0 to 1, with the IDF
/// that [`bm25`] gives each term under `boosts`, times the term's weight in the query. A
/// keyword query's best BM25 hit holds nearly all of it; a paraphrase's best hit often holds
/// only its common words.
///
/// A word that no chunk holds counts against every chunk, as the rarest word would: a query
/// whose words the workspace lacks (a question in another language than the notes, a
/// paraphrase in words the text never uses) is one that BM25 cannot answer, however much of
/// the rest of it a chunk holds.
pub fn coverage(
    snapshot: &Snapshot,
    terms: &[(String, f32)],
    boosts: FieldBoosts,
    held: &HashSet<String>,
) -> f32 {
    let idf = idf_of(snapshot);
    let (mut found, mut all) = (0.0, 0.0);
    for (term, share) in terms {
        let (_, df) = field_doc_freqs(snapshot, term, boosts);
        let w = idf(df) * share;
        all += w;
        if df > 0 && held.contains(term) {
            found += w;
        }
    }
    if all > 0.0 { found / all } else { 0.0 }
}
