//! The chunk store's files checked against their checksums when an index opens, and a
//! record of those found intact, by their file status (size, modification and change
//! times, inode), so that the next open reads again only the files that changed since:
//! tantivy never rewrites a segment file, so a file with the same status holds the same
//! bytes, unless something below the file system changed them (a disk fault, which its
//! checksum is then no longer checked for at every open). Git trusts its index the same
//! way. Any change made through the file system (a truncation, a rewrite, a copy put in
//! place) moves the change time, which no program can set, and the file is read whole.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::files::{self, IndexLayout};
use super::{IndexError, store_err};

/// A file's status: size, modification time, change time and inode.
pub(super) type Status = (u64, i128, i128, u64);

/// The files found intact, by name.
#[derive(Debug, Default, Serialize, Deserialize)]
struct CheckedFiles {
    files: BTreeMap<String, Status>,
}

impl CheckedFiles {
    fn load(path: &Path) -> CheckedFiles {
        files::read_json::<CheckedFiles>(path).ok().flatten().unwrap_or_default()
    }

    /// Writes the record over `before` when it differs (best effort: a folder that cannot be
    /// written only costs the next open the same reads).
    fn save_over(&self, before: &CheckedFiles, path: &Path) {
        if self.files != before.files
            && let Err(e) = files::write_json(path, self)
        {
            tracing::debug!("the record of checked store files is not written: {e}");
        }
    }
}

pub(super) fn status(path: &Path) -> Option<Status> {
    let m = std::fs::metadata(path).ok()?;
    let time = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
    Some((m.len(), time(m.mtime(), m.mtime_nsec()), time(m.ctime(), m.ctime_nsec()), m.ino()))
}

/// The files of every segment of the last commit, by path within the store.
fn segment_files(store: &tantivy::Index) -> tantivy::Result<Vec<std::path::PathBuf>> {
    use tantivy::index::SegmentComponent as C;
    let metas = store.load_metas()?;
    let managed = store.directory().list_managed_files();
    let mut out = Vec::new();
    for segment in &metas.segments {
        let mut components = vec![C::Postings, C::Terms, C::Store, C::FastFields, C::FieldNorms];
        if segment.has_deletes() {
            components.push(C::Delete);
        }
        // Positions are written only for fields that keep them; the managed list says
        // whether this segment has a file for them.
        if managed.contains(&segment.relative_path(C::Positions)) {
            components.push(C::Positions);
        }
        out.extend(components.into_iter().map(|c| segment.relative_path(c)));
    }
    Ok(out)
}

/// Records the files of the commit a writer has just made as intact: it wrote them itself,
/// so the next open need not read them back. Files of earlier commits keep their entries
/// only while they are still part of the store.
pub(super) fn record_own_commit(store: &tantivy::Index, layout: &IndexLayout) {
    let Ok(current) = segment_files(store) else { return };
    let dir = layout.tantivy();
    let record_path = layout.store_checked();
    let known = CheckedFiles::load(&record_path);
    let mut intact = CheckedFiles::default();
    for path in current {
        let name = path.display().to_string();
        let entry = known.files.get(&name).copied().or_else(|| status(&dir.join(&path)));
        if let Some(entry) = entry {
            intact.files.insert(name, entry);
        }
    }
    intact.save_over(&known, &record_path);
}

/// Checks every file of every segment of the last commit against the checksum in its
/// footer (reading it whole), except those recorded as intact with the status they have
/// now, so that a truncated, emptied, zeroed, missing or altered file is found at open
/// rather than in the middle of a search. The record is then brought up to date.
pub(super) fn check_store(store: &tantivy::Index, layout: &IndexLayout) -> Result<(), IndexError> {
    let dir = layout.tantivy();
    let damaged = |what: String| IndexError::Store {
        path: dir.display().to_string(),
        source: tantivy::TantivyError::InvalidArgument(what),
    };
    let record_path = layout.store_checked();
    let known = CheckedFiles::load(&record_path);
    let mut intact = CheckedFiles::default();
    for path in segment_files(store).map_err(store_err(&dir))? {
        let name = path.display().to_string();
        let now = status(&dir.join(&path));
        if now.is_some() && known.files.get(&name) == now.as_ref() {
            intact.files.insert(name, now.unwrap_or_default());
            continue;
        }
        match store.directory().validate_checksum(&path) {
            Ok(true) => {}
            Ok(false) => return Err(damaged(format!("{} fails its checksum", path.display()))),
            Err(e) => return Err(damaged(format!("{}: {e}", path.display()))),
        }
        if let Some(now) = now {
            intact.files.insert(name, now);
        }
    }
    intact.save_over(&known, &record_path);
    Ok(())
}
