//! Snippets through the team cache: looked up by their model and key before a call,
//! added after it; a row that is empty, too long or for another key is refused.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use super::store::{self, SnippetRow};
use super::{BATCH, MAX_SNIPPET_BYTES, SharedSnippet, Team};

impl Team {
    /// The cache's snippets for these keys (a snippet model's identity and each chunk's
    /// key), validated: not empty, not over [`MAX_SNIPPET_BYTES`], for the key asked for.
    pub fn pull_snippets(&self, model: &str, keys: &[u128]) -> Vec<Option<SharedSnippet>> {
        let mut out = vec![None; keys.len()];
        let asked: Vec<Vec<u8>> = keys.iter().map(|k| k.to_be_bytes().to_vec()).collect();
        let at: HashMap<Vec<u8>, usize> = asked.iter().cloned().enumerate().map(|(n, k)| (k, n)).collect();
        let mut rejected = Vec::new();
        for batch in asked.chunks(BATCH) {
            let (batch, model) = (batch.to_vec(), model.to_string());
            let Ok(rows) = self.run(move |c| async move { store::pull_snippets(&c, &model, &batch).await })
            else {
                break;
            };
            for row in rows {
                let fits = !row.text.trim().is_empty() && row.text.len() <= MAX_SNIPPET_BYTES;
                let tokens = row.input_tokens >= 0 && row.output_tokens >= 0;
                match at.get(&row.key) {
                    Some(n) if fits && tokens => {
                        out[*n] = Some(SharedSnippet {
                            text: row.text,
                            input_tokens: row.input_tokens as u32,
                            output_tokens: row.output_tokens as u32,
                        })
                    }
                    _ => rejected.push(row.key),
                }
            }
        }
        self.snippets_pulled.fetch_add(out.iter().filter(|s| s.is_some()).count() as u64, Ordering::Relaxed);
        if !rejected.is_empty() {
            self.rejected.fetch_add(rejected.len() as u64, Ordering::Relaxed);
            tracing::warn!(
                target = %self.target.shown,
                "{} snippets from the team cache failed validation (size or key) and are written here",
                rejected.len()
            );
            if self.writes() {
                let model = model.to_string();
                let _ = self.run(move |c| async move { store::drop_snippets(&c, &model, &rejected).await });
            }
        }
        out
    }

    /// Adds written snippets. Returns how many rows were new.
    pub fn push_snippets(&self, model: &str, items: &[(u128, SharedSnippet)]) -> u64 {
        if !self.writes() || items.is_empty() {
            return 0;
        }
        let mut added = 0;
        for batch in items.chunks(BATCH) {
            let rows: Vec<SnippetRow> = batch
                .iter()
                .filter(|(_, s)| s.text.len() <= MAX_SNIPPET_BYTES)
                .map(|(k, s)| SnippetRow {
                    key: k.to_be_bytes().to_vec(),
                    text: s.text.clone(),
                    input_tokens: s.input_tokens.min(i32::MAX as u32) as i32,
                    output_tokens: s.output_tokens.min(i32::MAX as u32) as i32,
                })
                .collect();
            let model = model.to_string();
            match self.run(move |c| async move { store::push_snippets(&c, &model, &rows).await }) {
                Ok(n) => added += n,
                Err(_) => break,
            }
        }
        self.snippets_pushed.fetch_add(added, Ordering::Relaxed);
        added
    }
}
