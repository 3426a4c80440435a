//! Editor settings laid over the settings file: objects merge key by key, `null` keeps the
//! file's value, and an empty list given for a table (some editors cannot tell them apart)
//! counts as an empty table.

/// The tables of the configuration: an empty array given for one of them (some editors
/// cannot tell an empty table from an empty list) means an empty table.
pub(super) const TABLES: [&str; 5] = ["chunk", "context", "search", "embedding", "snippets"];

/// Whether the editor's settings `over` set the dotted `key` (`search.mode`), or a table
/// that holds it: a problem with it is then the editor's to fix, not the file's.
pub(super) fn sets_key(over: &serde_json::Value, key: &str) -> bool {
    let mut value = over;
    for part in key.split('.') {
        match value.get(part) {
            Some(serde_json::Value::Null) | None => return false,
            Some(inner) if inner.is_object() => value = inner,
            Some(_) => return true,
        }
    }
    true
}

/// Lays `over` onto `base`: objects merge key by key, `null` changes nothing, anything else
/// replaces.
pub(super) fn merge_json(base: &mut serde_json::Value, over: &serde_json::Value) {
    match (base, over) {
        (_, serde_json::Value::Null) => {}
        (serde_json::Value::Object(_), serde_json::Value::Array(a)) if a.is_empty() => {}
        (serde_json::Value::Object(b), serde_json::Value::Object(o)) => {
            for (key, value) in o {
                if TABLES.contains(&key.as_str()) && value.as_array().is_some_and(Vec::is_empty) {
                    continue;
                }
                match b.get_mut(key) {
                    Some(existing) => merge_json(existing, value),
                    None if value.is_object() => {
                        let mut fresh = serde_json::Value::Object(serde_json::Map::new());
                        merge_json(&mut fresh, value);
                        b.insert(key.clone(), fresh);
                    }
                    None if !value.is_null() => {
                        b.insert(key.clone(), value.clone());
                    }
                    None => {}
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}
