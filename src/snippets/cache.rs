//! The snippet cache: every snippet ever written for this index, by key, in an append-only
//! file (`snippets.jsonl` in the index folder) that outlives rebuilds of the index.
//!
//! Each line is one JSON record, appended and then fsynced before the index commit that
//! uses it, so a snippet in the index is always in the cache too. A line cut short by a
//! crash, or one that does not parse, is dropped when the file is opened (the file is cut
//! back to its last whole line): it costs one more call, never a wrong snippet.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError, RwLock};

use serde::{Deserialize, Serialize};

use super::Snippet;

/// The cache file's name in the index folder.
pub const FILE_NAME: &str = "snippets.jsonl";

/// One line of the file.
#[derive(Serialize, Deserialize)]
struct Line {
    /// The key, 32 hex digits.
    k: String,
    #[serde(flatten)]
    snippet: Snippet,
}

/// The cache of one index folder; shared between threads.
#[derive(Debug)]
pub struct SnippetCache {
    path: PathBuf,
    entries: RwLock<HashMap<u128, Snippet>>,
    file: Mutex<File>,
    /// Lines dropped when the file was opened.
    dropped: usize,
}

impl SnippetCache {
    /// Opens (or creates) the cache file in `dir`.
    pub fn open(dir: &Path) -> std::io::Result<SnippetCache> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(FILE_NAME);
        let mut file = OpenOptions::new().read(true).append(true).create(true).open(&path)?;
        let mut entries = HashMap::new();
        let mut dropped = 0;
        let mut whole = 0u64;
        {
            let mut reader = BufReader::new(&mut file);
            reader.seek(SeekFrom::Start(0))?;
            let mut buf = Vec::new();
            loop {
                buf.clear();
                let n = reader.read_until(b'\n', &mut buf)?;
                if n == 0 {
                    break;
                }
                if buf.last() != Some(&b'\n') {
                    // Cut short by a crash: not a whole line.
                    dropped += 1;
                    break;
                }
                whole += n as u64;
                let parsed = serde_json::from_slice::<Line>(&buf)
                    .ok()
                    .and_then(|l| u128::from_str_radix(&l.k, 16).ok().map(|k| (k, l.snippet)));
                match parsed {
                    Some((k, snippet)) => {
                        entries.insert(k, snippet);
                    }
                    None => dropped += 1,
                }
            }
        }
        if file.metadata()?.len() != whole {
            file.set_len(whole)?;
        }
        if dropped > 0 {
            tracing::warn!(cache = %path.display(), "{dropped} damaged snippet cache line(s) dropped");
        }
        Ok(SnippetCache { path, entries: RwLock::new(entries), file: Mutex::new(file), dropped })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Snippets held.
    pub fn len(&self) -> usize {
        self.entries.read().unwrap_or_else(PoisonError::into_inner).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Damaged lines dropped when the file was opened.
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    pub fn get(&self, key: u128) -> Option<Snippet> {
        self.entries.read().unwrap_or_else(PoisonError::into_inner).get(&key).cloned()
    }

    /// Adds a snippet (appended to the file; durable after [`SnippetCache::sync`]). A
    /// snippet the cache holds already under `key` is not written again.
    pub fn put(&self, key: u128, snippet: &Snippet) -> std::io::Result<()> {
        if self.entries.read().unwrap_or_else(PoisonError::into_inner).get(&key) == Some(snippet) {
            return Ok(());
        }
        let line = Line { k: format!("{key:032x}"), snippet: snippet.clone() };
        let mut bytes = serde_json::to_vec(&line).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        self.file.lock().unwrap_or_else(PoisonError::into_inner).write_all(&bytes)?;
        self.entries.write().unwrap_or_else(PoisonError::into_inner).insert(key, snippet.clone());
        Ok(())
    }

    /// Makes every snippet added so far durable.
    pub fn sync(&self) -> std::io::Result<()> {
        self.file.lock().unwrap_or_else(PoisonError::into_inner).sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snippet(text: &str) -> Snippet {
        Snippet { text: text.to_string(), model: "openai/m@h".to_string(), created_at: 7 }
    }

    #[test]
    fn snippets_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SnippetCache::open(dir.path()).unwrap();
        cache.put(1, &snippet("One.")).unwrap();
        cache.put(u128::MAX, &snippet("Two.")).unwrap();
        cache.sync().unwrap();
        drop(cache);
        let cache = SnippetCache::open(dir.path()).unwrap();
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get(u128::MAX), Some(snippet("Two.")));
        assert_eq!(cache.get(2), None);
    }

    #[test]
    fn a_snippet_held_already_is_not_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SnippetCache::open(dir.path()).unwrap();
        cache.put(1, &snippet("One.")).unwrap();
        cache.put(1, &snippet("One.")).unwrap();
        cache.put(1, &snippet("Won.")).unwrap();
        let lines = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap().lines().count();
        assert_eq!(lines, 2);
        assert_eq!(cache.get(1), Some(snippet("Won.")));
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SnippetCache::open(dir.path()).unwrap();
        cache.put(1, &snippet("One.")).unwrap();
        drop(cache);
        let path = dir.path().join(FILE_NAME);
        let whole = std::fs::metadata(&path).unwrap().len();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"k\":\"00000000000000000000000000000002\",\"text\":\"Tw").unwrap();
        drop(f);
        let cache = SnippetCache::open(dir.path()).unwrap();
        assert_eq!((cache.len(), cache.dropped()), (1, 1));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), whole);
        // New lines start on a line of their own.
        cache.put(3, &snippet("Three.")).unwrap();
        drop(cache);
        assert_eq!(SnippetCache::open(dir.path()).unwrap().len(), 2);
    }

    #[test]
    fn a_garbled_line_is_dropped_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(FILE_NAME),
            "not json\n{\"k\":\"0000000000000000000000000000000a\",\"text\":\"Ten.\",\"model\":\"m\",\"created_at\":1}\n",
        )
        .unwrap();
        let cache = SnippetCache::open(dir.path()).unwrap();
        assert_eq!((cache.len(), cache.dropped()), (1, 1));
        assert_eq!(cache.get(10).unwrap().text, "Ten.");
    }
}
