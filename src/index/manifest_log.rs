//! The manifest's journal (`manifest.log`): what each commit since the manifest was last
//! written whole changed in it, so that a commit of a few files writes a few hundred bytes
//! where the whole manifest of a million chunks is 16 MB.
//!
//! The journal starts with a header naming the manifest it continues (that manifest's
//! checksum); a journal of another manifest (one written whole since, by a run killed
//! before it emptied the journal) is not read. Each record holds a commit's fields, the
//! skipped files when they changed, the files added or changed (each in the manifest's
//! own form) and the paths of the files removed. Header and records are framed like the
//! manifest: a magic, the body's length and its xxh3. A record cut short or altered (a run
//! killed while it appended) ends the journal: what came before it stands, and the next
//! writer cuts it off before it appends. Once the journal outgrows a share of the
//! manifest, the next commit writes the manifest whole and starts an empty journal.

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::manifest::Manifest;
use super::manifest_file::{self, Reader, Writer};

const HEADER_MAGIC: &[u8; 8] = b"SITMLOG1";
const RECORD_MAGIC: &[u8; 8] = b"SITMREC1";
/// Magic, length and checksum before each body.
const FRAME_LEN: usize = 24;

/// The journal grows to at most this share of the manifest it continues (and at least to
/// [`MIN_LOG_BYTES`]) before the manifest is written whole again: every open reads both.
const LOG_SHARE: u64 = 8;
const MIN_LOG_BYTES: u64 = 64 * 1024;

/// What a writer knows of the journal on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogState {
    /// The checksum of the manifest the journal continues.
    base: u64,
    /// Bytes of the manifest file, for the journal's bound.
    base_bytes: u64,
    /// Bytes of the journal up to the end of its last whole record.
    len: u64,
}

impl LogState {
    /// The state of a journal just started for the manifest `encoded`.
    pub fn fresh(encoded: &[u8]) -> LogState {
        LogState {
            base: manifest_file::checksum_of(encoded).unwrap_or_default(),
            base_bytes: encoded.len() as u64,
            len: header(manifest_file::checksum_of(encoded).unwrap_or_default()).len() as u64,
        }
    }

    /// Whether a record of `bytes` still fits in the journal.
    pub fn has_room_for(&self, bytes: usize) -> bool {
        self.len + bytes as u64 <= (self.base_bytes / LOG_SHARE).max(MIN_LOG_BYTES)
    }
}

fn header(base: u64) -> Vec<u8> {
    manifest_file::framed(HEADER_MAGIC, &base.to_le_bytes())
}

/// Starts an empty journal for the manifest `encoded` (just written whole), replacing any
/// journal there was.
pub fn start(path: &Path, encoded: &[u8]) -> std::io::Result<LogState> {
    let state = LogState::fresh(encoded);
    super::files::write_atomic(path, &header(state.base))?;
    Ok(state)
}

/// Applies the journal at `path` to `manifest`, read from the file `encoded`. `Ok(None)`:
/// there is no journal for this manifest (none at all, or one of another manifest), so a
/// writer's next commit writes the manifest whole.
pub fn replay(path: &Path, encoded: &[u8], manifest: &mut Manifest) -> Result<Option<LogState>, String> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let Some(base) = manifest_file::checksum_of(encoded) else { return Ok(None) };
    let head = header(base);
    if !bytes.starts_with(&head) {
        tracing::debug!(journal = %path.display(), "the manifest's journal continues another manifest");
        return Ok(None);
    }
    let mut at = head.len();
    while let Some(body) = next_record(&bytes, at) {
        apply(body, manifest).map_err(|e| format!("{}: record at byte {at}: {e}", path.display()))?;
        at += FRAME_LEN + body.len();
    }
    if at < bytes.len() {
        tracing::info!(journal = %path.display(), "the manifest's journal ends in a record cut short: it is left out");
    }
    Ok(Some(LogState { base, base_bytes: encoded.len() as u64, len: at as u64 }))
}

/// The body of the whole, intact record at `at`, if there is one.
fn next_record(bytes: &[u8], at: usize) -> Option<&[u8]> {
    let frame = bytes.get(at..at + FRAME_LEN)?;
    let len = usize::try_from(u64::from_le_bytes(frame[8..16].try_into().ok()?)).ok()?;
    let record = bytes.get(at..at.checked_add(FRAME_LEN)?.checked_add(len)?)?;
    manifest_file::unframed(RECORD_MAGIC, record).ok()
}

/// What changed from `committed` to `current`, as a record; `None` when nothing did.
pub fn record(committed: &Manifest, current: &Manifest) -> Option<Vec<u8>> {
    let mut body = Writer(Vec::with_capacity(256));
    manifest_file::write_fields(&mut body, current);
    if committed.skipped == current.skipped {
        body.u8(0);
    } else {
        body.u8(1);
        body.str(&serde_json::to_string(&current.skipped).unwrap_or_else(|_| "[]".to_string()));
    }
    let mut changed = Vec::new();
    let mut removed = Vec::new();
    let mut before = committed.files.iter().peekable();
    let mut after = current.files.iter().peekable();
    loop {
        match (before.peek(), after.peek()) {
            (Some((old_path, old)), Some((new_path, new))) => match old_path.cmp(new_path) {
                std::cmp::Ordering::Less => {
                    removed.push(*old_path);
                    before.next();
                }
                std::cmp::Ordering::Greater => {
                    changed.push((*new_path, *new));
                    after.next();
                }
                std::cmp::Ordering::Equal => {
                    if old != new {
                        changed.push((*new_path, *new));
                    }
                    before.next();
                    after.next();
                }
            },
            (Some((old_path, _)), None) => {
                removed.push(*old_path);
                before.next();
            }
            (None, Some((new_path, new))) => {
                changed.push((*new_path, *new));
                after.next();
            }
            (None, None) => break,
        }
    }
    let fields_same = committed.generation == current.generation
        && committed.next_chunk_id == current.next_chunk_id
        && committed.committed_at == current.committed_at
        && committed.vectors_pending == current.vectors_pending
        && committed.fill_rate == current.fill_rate
        && committed.snippet_identity == current.snippet_identity
        && committed.quick == current.quick;
    if fields_same && committed.skipped == current.skipped && changed.is_empty() && removed.is_empty() {
        return None;
    }
    body.varint(changed.len() as u64);
    let mut previous_id = 0;
    for (path, entry) in changed {
        manifest_file::write_entry(&mut body, path, entry, &mut previous_id);
    }
    body.varint(removed.len() as u64);
    for path in removed {
        body.str(path);
    }
    Some(manifest_file::framed(RECORD_MAGIC, &body.0))
}

/// Applies one record's body to `manifest`.
fn apply(body: &[u8], manifest: &mut Manifest) -> Result<(), String> {
    let mut r = Reader { bytes: body, at: 0 };
    manifest_file::read_fields(&mut r, manifest)?;
    if r.u8()? != 0 {
        manifest.skipped = serde_json::from_str(r.str()?).map_err(|e| format!("skipped files: {e}"))?;
    }
    let mut previous_id = 0;
    for _ in 0..r.count()? {
        let (path, entry) = manifest_file::read_entry(&mut r, &mut previous_id)?;
        manifest.files.insert(path, entry);
    }
    for _ in 0..r.count()? {
        manifest.files.remove(r.str()?);
    }
    if r.at != body.len() {
        return Err(format!("{} bytes past its end", body.len() - r.at));
    }
    Ok(())
}

/// Appends `record` to the journal, after its last whole record (cutting off what a killed
/// run left past it), and flushes it to disk.
pub fn append(path: &Path, state: &mut LogState, record: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
    if file.metadata()?.len() != state.len {
        file.set_len(state.len)?;
    }
    file.write_all_at(record, state.len)?;
    file.flush()?;
    file.sync_data()?;
    state.len += record.len() as u64;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::index::manifest::{ChunkRef, FileEntry};

    fn entry(id: u64, size: u64) -> FileEntry {
        FileEntry {
            size,
            mtime_ns: 9,
            content_hash: size + 1,
            chunks: vec![ChunkRef { id, embed_hash: id * 3, snippet_pending: false }],
            lossy: false,
            warnings: Vec::new(),
            racy: false,
        }
    }

    fn manifest(files: &[(&str, u64)]) -> Manifest {
        let files: BTreeMap<String, FileEntry> =
            files.iter().enumerate().map(|(i, (p, size))| (p.to_string(), entry(i as u64, *size))).collect();
        Manifest { generation: 1, next_chunk_id: files.len() as u64, files, ..Manifest::default() }
    }

    /// Reads the manifest file and its journal as an open does.
    fn read_back(dir: &Path) -> (Manifest, Option<LogState>) {
        let encoded = std::fs::read(dir.join("m.bin")).unwrap();
        let mut read = manifest_file::decode(&encoded).unwrap();
        let state = replay(&dir.join("m.log"), &encoded, &mut read).unwrap();
        (read, state)
    }

    #[test]
    fn commits_appended_to_the_journal_read_back_as_the_manifest_they_made() {
        let dir = tempfile::tempdir().unwrap();
        let base = manifest(&[("a.md", 1), ("b.md", 2), ("c.md", 3)]);
        let encoded = manifest_file::encode(&base);
        std::fs::write(dir.path().join("m.bin"), &encoded).unwrap();
        let mut state = start(&dir.path().join("m.log"), &encoded).unwrap();
        let mut current = base.clone();
        assert_eq!(record(&base, &current), None, "nothing changed, nothing to write");
        let mut steps = Vec::new();
        for step in 0..4u64 {
            let committed = current.clone();
            current.generation += 1;
            current.files.insert(format!("new{step}.md"), entry(100 + step, step));
            current.files.get_mut("b.md").unwrap().size += 10;
            if step == 2 {
                current.files.remove("a.md");
                current.skipped = vec![crate::workspace::Skipped {
                    path: "big.md".into(),
                    reason: crate::workspace::SkipReason::Binary,
                }];
            }
            append(&dir.path().join("m.log"), &mut state, &record(&committed, &current).unwrap()).unwrap();
            steps.push((current.clone(), std::fs::metadata(dir.path().join("m.log")).unwrap().len()));
        }
        let (read, read_state) = read_back(dir.path());
        assert_eq!(read, current);
        assert_eq!(read_state, Some(state.clone()));

        // A run killed while it appended leaves a record cut short: the commits before it
        // stand, and the next append cuts it off.
        let log = dir.path().join("m.log");
        let whole = std::fs::read(&log).unwrap();
        for cut in [steps[2].1 as usize + 1, steps[3].1 as usize - 1, steps[2].1 as usize + FRAME_LEN + 3] {
            std::fs::write(&log, &whole[..cut]).unwrap();
            let (read, read_state) = read_back(dir.path());
            assert_eq!(read, steps[2].0, "cut at {cut}");
            let mut read_state = read_state.unwrap();
            let mut later = read.clone();
            later.generation += 1;
            later.files.remove("c.md");
            append(&log, &mut read_state, &record(&read, &later).unwrap()).unwrap();
            assert_eq!(read_back(dir.path()).0, later, "cut at {cut}, then appended");
        }

        // An altered byte in a record ends the journal before that record.
        let mut altered = whole.clone();
        altered[steps[0].1 as usize + FRAME_LEN + 2] ^= 0x10;
        std::fs::write(&log, &altered).unwrap();
        assert_eq!(read_back(dir.path()).0, steps[0].0);

        // A journal of another manifest (one written whole since) is not read.
        std::fs::write(&log, &whole).unwrap();
        let other = manifest_file::encode(&manifest(&[("z.md", 5)]));
        std::fs::write(dir.path().join("m.bin"), &other).unwrap();
        let (read, state) = read_back(dir.path());
        assert_eq!((read, state), (manifest(&[("z.md", 5)]), None));
    }

    #[test]
    fn the_journal_is_bounded_by_a_share_of_the_manifest() {
        let small = LogState::fresh(&vec![0u8; 1000]);
        assert!(small.has_room_for(60 * 1024));
        assert!(!small.has_room_for(MIN_LOG_BYTES as usize));
        let large = LogState::fresh(&vec![0u8; 16 << 20]);
        assert!(large.has_room_for(1 << 20));
        assert!(!large.has_room_for(3 << 20));
    }
}
