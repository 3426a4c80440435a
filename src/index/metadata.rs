//! Front matter values as filter terms: a document with `tags: [Backup, ops/storage]` is
//! found by `tags=backup`, `tags=ops/storage` and `tags=ops`.

use std::collections::BTreeSet;

use crate::chunk::Metadata;

/// The filter term of one field and value: `key=value`, both trimmed and lowercased, the
/// value without a leading `#` (Obsidian writes tags with or without it).
pub fn term(key: &str, value: &str) -> String {
    let value = value.trim();
    let value = value.strip_prefix('#').unwrap_or(value);
    format!("{}={}", key.trim().to_lowercase(), value.trim().to_lowercase())
}

/// Every filter term of a document's fields: one per value, and one per parent of a nested
/// value (`ops/storage` is also found as `ops`, as nested tags are in Obsidian).
pub fn terms(metadata: &Metadata) -> Vec<String> {
    let mut out = BTreeSet::new();
    for (key, values) in metadata {
        // A note's inline tags are matched as its front matter's tags are.
        let key = if key == crate::chunk::INLINE_TAGS { "tags" } else { key.as_str() };
        for value in values {
            out.insert(term(key, value));
            let mut parent = value.as_str();
            while let Some((up, _)) = parent.rsplit_once('/') {
                if !up.trim().is_empty() {
                    out.insert(term(key, up));
                }
                parent = up;
            }
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_lowercased_without_hashes_and_with_parents() {
        let mut m = Metadata::new();
        m.insert("Tags".into(), vec!["#Backup".into(), "ops/storage/cold".into()]);
        m.insert("draft".into(), vec!["false".into()]);
        assert_eq!(
            terms(&m),
            ["draft=false", "tags=backup", "tags=ops", "tags=ops/storage", "tags=ops/storage/cold"]
        );
        assert_eq!(term(" Category ", " Ops "), "category=ops");
    }
}
