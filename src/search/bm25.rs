//! The BM25F query: analysed query terms over the text, title, headings, path, snippet and
//! front matter fields, with field boosts and one IDF per term across fields. The front
//! matter values in the header (tags, aliases: other names for the document) weigh as
//! the title does.

use crate::index::{IndexError, Snapshot, TextField, WeightedTerm};

/// BM25 field weights (the text field weighs 1).
#[derive(Debug, Clone, Copy)]
pub struct FieldBoosts {
    pub title: f32,
    pub headings: f32,
    pub path: f32,
    pub snippet: f32,
}

/// The ids and BM25 scores of the best `limit` chunks for analysed `terms` (see
/// [`crate::index::tokenizer::query_terms`]), among the chunks that have every front
/// matter filter term in `within`.
pub fn bm25(
    snapshot: &Snapshot,
    terms: &[String],
    boosts: FieldBoosts,
    limit: usize,
    within: &[String],
) -> Result<Vec<(u64, f32)>, IndexError> {
    if terms.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let fields = [
        (TextField::Text, 1.0),
        (TextField::Title, boosts.title),
        (TextField::Headings, boosts.headings),
        (TextField::Path, boosts.path),
        (TextField::Snippet, boosts.snippet),
        (TextField::Metadata, boosts.title),
    ];
    let total = snapshot.num_docs() as f32;
    let idf = |df: u64| (1.0 + (total - df as f32 + 0.5) / (df as f32 + 0.5)).ln();
    let mut query = Vec::new();
    for term in terms {
        let field_terms: Vec<(TextField, f32, u64)> = fields
            .iter()
            .filter(|(_, boost)| *boost > 0.0)
            .map(|&(field, boost)| (field, boost, snapshot.doc_freq(field, term)))
            .collect();
        // One IDF per term, as BM25F has it: tantivy weighs each field by the term's
        // rarity in that field, so a word common in text ("request") but rare among
        // titles and paths would earn a large bonus in every short field that has it.
        // Scaling each field to the term's document-level IDF (approximated by its
        // largest document frequency over the fields) removes that bonus.
        let shared_df = field_terms.iter().map(|(_, _, df)| *df).max().unwrap_or(0);
        for (field, boost, df) in field_terms {
            if df == 0 {
                continue;
            }
            let weight = boost * idf(shared_df) / idf(df).max(f32::EPSILON);
            query.push(WeightedTerm { field, term: term.clone(), weight });
        }
    }
    snapshot.search_terms(&query, limit, within)
}
