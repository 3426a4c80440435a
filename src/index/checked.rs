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
type Status = (u64, i128, i128, u64);

/// The files found intact, by name.
#[derive(Debug, Default, Serialize, Deserialize)]
struct CheckedFiles {
    files: BTreeMap<String, Status>,
}

fn status(path: &Path) -> Option<Status> {
    let m = std::fs::metadata(path).ok()?;
    let time = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
    Some((m.len(), time(m.mtime(), m.mtime_nsec()), time(m.ctime(), m.ctime_nsec()), m.ino()))
}

/// Checks every file of every segment of the last commit against the checksum in its
/// footer (reading it whole), except those recorded as intact with the status they have
/// now, so that a truncated, emptied, zeroed, missing or altered file is found at open
/// rather than in the middle of a search. The record is then brought up to date (best
/// effort: a folder that cannot be written only costs the next open the same reads).
pub(super) fn check_store(store: &tantivy::Index, layout: &IndexLayout) -> Result<(), IndexError> {
    use tantivy::index::SegmentComponent as C;
    let dir = layout.tantivy();
    let damaged = |what: String| IndexError::Store {
        path: dir.display().to_string(),
        source: tantivy::TantivyError::InvalidArgument(what),
    };
    let record_path = layout.store_checked();
    let known = files::read_json::<CheckedFiles>(&record_path).ok().flatten().unwrap_or_default();
    let mut intact = CheckedFiles::default();
    let metas = store.load_metas().map_err(store_err(&dir))?;
    let managed = store.directory().list_managed_files();
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
        for component in components {
            let path = segment.relative_path(component);
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
    }
    if intact.files != known.files
        && let Err(e) = files::write_json(&record_path, &intact)
    {
        tracing::debug!("the record of checked store files is not written: {e}");
    }
    Ok(())
}
