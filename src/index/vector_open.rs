//! Opening a committed vector file (`quick.vec` or `vectors.vec`, laid out in
//! [`super::vector_file`]): checked against what its commit recorded, through its sidecar when
//! that is usable and the rows themselves when the file's status is not the one its writer
//! left, with rows that fail their checksums left out.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

use super::manifest::VectorFileRecord;
use super::vector_file::{BLOCK_ROWS, HEADER_LEN, Rows, VectorSet, header, row_len, split_row};
use super::vector_sidecar::{self, RowFacts, SharedFacts};

/// Why a quick file on disk cannot be used as it is; else the open file and its nonce.
fn check_file(path: &Path, record: &VectorFileRecord, dims: usize) -> Result<(File, u32), String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut head = [0u8; HEADER_LEN as usize];
    file.read_exact_at(&mut head, 0).map_err(|e| format!("{}: {e}", path.display()))?;
    let nonce = u32::from_le_bytes(head[12..16].try_into().unwrap_or_default());
    if head != header(dims, nonce) {
        return Err(format!("{}: not a vector file of {dims} dimensions", path.display()));
    }
    let need = HEADER_LEN + record.rows * row_len(dims) as u64;
    let have = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?.len();
    if have < need {
        return Err(format!("{}: holds {have} bytes, its commit {need}", path.display()));
    }
    Ok((file, nonce))
}

/// The committed quick file at `path`, checked against its record: the open file, the live
/// rows (the last of each id for which `wanted` holds), the kept rows (likewise, of the ids
/// for which `kept` holds and `wanted` does not), the signs of every row and the checksum
/// state, from its sidecar when that is usable, else from the file read through. `Err`
/// says why it cannot be used.
pub(super) fn load(
    path: &Path,
    record: &VectorFileRecord,
    dims: usize,
    wanted: &dyn Fn(u64) -> bool,
    kept: &dyn Fn(u64) -> bool,
) -> Result<Loaded, String> {
    let (file, nonce) = check_file(path, record, dims)?;
    let sidecar =
        vector_sidecar::read(&vector_sidecar::path_of(path), dims, nonce, record.rows, record.checksum);
    let mut damaged = Vec::new();
    let (sidecar, rebuilt) = match sidecar {
        Ok(sidecar) if vector_sidecar::recorded_intact(path) => (sidecar, None),
        Ok(sidecar) => {
            damaged = check_rows(&file, path, record, dims, &sidecar)?;
            (sidecar, None)
        }
        Err(why) => {
            tracing::debug!("{why}: the file is read through");
            let (sidecar, rows) = read_through(&file, path, record, dims)?;
            (sidecar, Some(rows))
        }
    };
    let mut live = Vec::new();
    let mut kept_rows = Vec::new();
    for (row, id) in sidecar.ids.iter().enumerate() {
        if damaged.binary_search(&(row as u32)).is_ok() {
            continue;
        }
        if wanted(*id) {
            live.push((*id, row as u32));
        } else if kept(*id) {
            kept_rows.push((*id, row as u32));
        }
    }
    let damaged = damaged.len();
    Ok(Loaded {
        file,
        nonce,
        hasher: sidecar.hasher,
        facts: sidecar.facts,
        live,
        kept: kept_rows,
        rebuilt,
        damaged,
    })
}

/// Reads the committed rows through and checks each against the id and checksum its
/// sidecar holds of it; returns the rows that do not match, in order. Only those rows'
/// vectors are lost: the rest of the file is as it was committed.
fn check_rows(
    file: &File,
    path: &Path,
    record: &VectorFileRecord,
    dims: usize,
    sidecar: &vector_sidecar::Sidecar,
) -> Result<Vec<u32>, String> {
    let mut damaged = Vec::new();
    let len = row_len(dims);
    for_each_block(file, path, record.rows, len, |first, bytes| {
        for (n, row) in bytes.chunks_exact(len).enumerate() {
            let at = first as usize + n;
            if split_row(row).0 != sidecar.ids[at] || !sidecar.facts.matches(at as u32, row) {
                damaged.push(at as u32);
            }
        }
    })?;
    Ok(damaged)
}

/// Reads the first `rows` rows of `len` bytes a block at a time, handing each block to
/// `each` with the number of its first row.
fn for_each_block(
    file: &File,
    path: &Path,
    rows: u64,
    len: usize,
    mut each: impl FnMut(u64, &[u8]),
) -> Result<(), String> {
    let mut buffer = vec![0u8; BLOCK_ROWS as usize * len];
    let mut first = 0u64;
    while first < rows {
        let count = (rows - first).min(u64::from(BLOCK_ROWS)) as usize;
        let bytes = &mut buffer[..count * len];
        file.read_exact_at(bytes, HEADER_LEN + first * len as u64)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        each(first, bytes);
        first += count as u64;
    }
    Ok(())
}

/// The sidecar rows of a committed quick file, derived from its rows read through and
/// checked against the record's checksum: of those sidecar rows, or, as files written
/// before there were sidecars recorded it, of the rows themselves.
fn read_through(
    file: &File,
    path: &Path,
    record: &VectorFileRecord,
    dims: usize,
) -> Result<(vector_sidecar::Sidecar, Vec<u8>), String> {
    let len = row_len(dims);
    let mut of_rows = Xxh3::new();
    let mut hasher = Xxh3::new();
    let mut facts = RowFacts::new(dims);
    let mut ids = Vec::with_capacity(record.rows as usize);
    let mut sidecar_rows = Vec::with_capacity(record.rows as usize * vector_sidecar::row_len(dims));
    for_each_block(file, path, record.rows, len, |_, bytes| {
        of_rows.update(bytes);
        let start = sidecar_rows.len();
        for row in bytes.chunks_exact(len) {
            let (id, _, v) = split_row(row);
            facts.push(row, v);
            ids.push(id);
            facts.encode_last(&mut sidecar_rows, id);
        }
        hasher.update(&sidecar_rows[start..]);
    })?;
    if hasher.digest() != record.checksum && of_rows.digest() != record.checksum {
        return Err(format!(
            "{}: the rows do not match the checksum they were committed with",
            path.display()
        ));
    }
    Ok((vector_sidecar::Sidecar { hasher, facts, ids }, sidecar_rows))
}

/// A committed quick file as [`load`] found it.
pub(super) struct Loaded {
    pub(super) file: File,
    /// The nonce the file and its sidecar share.
    pub(super) nonce: u32,
    /// The checksum state over the committed sidecar rows, to go on from.
    pub(super) hasher: Xxh3,
    pub(super) facts: RowFacts,
    /// The live rows as (id, row), in row order.
    pub(super) live: Vec<(u64, u32)>,
    /// The kept rows as (id, row), in row order.
    pub(super) kept: Vec<(u64, u32)>,
    /// The sidecar rows, when there was no usable sidecar and they were derived from the
    /// file: a writer writes them out.
    pub(super) rebuilt: Option<Vec<u8>>,
    /// Rows that do not match their checksums, left out of `live`.
    pub(super) damaged: usize,
}

/// Reads a committed quick file for a reader: the rows of the chunks for which `wanted`
/// holds.
pub fn open_set(
    path: &Path,
    record: &VectorFileRecord,
    dims: usize,
    wanted: &dyn Fn(u64) -> bool,
) -> Result<VectorSet, String> {
    let loaded = load(path, record, dims, wanted, &|_| false)?;
    let rows = if record.rows == 0 { Rows::Empty } else { Rows::File(loaded.file) };
    Ok(VectorSet::with_live(
        dims,
        rows,
        path.to_path_buf(),
        SharedFacts::new(loaded.facts),
        loaded.live.into_iter(),
    ))
}
