//! The manifest on disk: a compact binary form, checked by its checksum, and the JSON form
//! that older indexes wrote, still read so that such an index opens without a rebuild.
//!
//! A manifest is read by every process that opens the index and written whole at every
//! commit; at a million chunks its JSON form was some 60 MB. The binary form holds the same
//! fields in about a quarter of the space (16 MB) and is read without parsing text: `MAGIC`,
//! the body's length (u64) and its xxh3 (u64), then the body. Integers are little-endian;
//! `varint` ones are LEB128. The body holds the commit's fields, then each file (path,
//! size, mtime, content hash, flags, warnings) with its chunks: each chunk's id as the
//! zigzag difference from the id before it (chunk ids mostly count up), its snippet flag (a
//! byte), then its embedded-text hash. The list of skipped files, small and rarely changed,
//! is kept as JSON inside the body.
//!
//! A commit that changed a few files appends them to the manifest's journal instead
//! (`manifest_log.rs`), in the same form.

use std::collections::BTreeMap;

use super::manifest::{ChunkRef, FileEntry, Manifest, VectorFileRecord};

const MAGIC: &[u8; 8] = b"SITMAN01";
const HEADER_LEN: usize = 24;

const FILE_LOSSY: u8 = 1;
const FILE_RACY: u8 = 2;

/// Encodes a manifest in the binary form.
pub fn encode(manifest: &Manifest) -> Vec<u8> {
    let mut body = Writer(Vec::with_capacity(64 + manifest.files.len() * 64));
    write_fields(&mut body, manifest);
    body.str(&serde_json::to_string(&manifest.skipped).unwrap_or_else(|_| "[]".to_string()));
    body.varint(manifest.files.len() as u64);
    let mut previous_id = 0u64;
    for (path, entry) in &manifest.files {
        write_entry(&mut body, path, entry, &mut previous_id);
    }
    framed(MAGIC, &body.0)
}

/// `magic`, the body's length and checksum, then the body.
pub(crate) fn framed(magic: &[u8; 8], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(magic);
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(body).to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// The checksum an encoded manifest's header holds, which names that manifest (its
/// journal is kept for it alone).
pub fn checksum_of(bytes: &[u8]) -> Option<u64> {
    bytes.get(16..HEADER_LEN).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
}

/// The fields a commit sets, besides the files and the skipped files.
pub(super) fn write_fields(body: &mut Writer, manifest: &Manifest) {
    body.u64(manifest.generation);
    body.u64(manifest.next_chunk_id);
    body.u64(manifest.committed_at);
    body.u8(u8::from(manifest.vectors_pending));
    match manifest.fill_rate {
        Some(rate) => {
            body.u8(1);
            body.0.extend_from_slice(&rate.to_le_bytes());
        }
        None => body.u8(0),
    }
    body.str(&manifest.snippet_identity);
    match &manifest.quick {
        Some(q) => {
            body.u8(1);
            body.str(&q.model);
            body.varint(q.dimensions as u64);
            body.u64(q.rows);
            body.u64(q.checksum);
        }
        None => body.u8(0),
    }
}

/// One file: path, size, mtime, content hash, flags, warnings, then each chunk's id (as
/// the zigzag difference from `previous_id`, which it advances), snippet flag and
/// embedded-text hash.
pub(super) fn write_entry(body: &mut Writer, path: &str, entry: &FileEntry, previous_id: &mut u64) {
    body.str(path);
    body.varint(entry.size);
    body.u64(entry.mtime_ns);
    body.u64(entry.content_hash);
    let flags = if entry.lossy { FILE_LOSSY } else { 0 } | if entry.racy { FILE_RACY } else { 0 };
    body.u8(flags);
    body.varint(entry.warnings.len() as u64);
    for warning in &entry.warnings {
        body.str(warning);
    }
    body.varint(entry.chunks.len() as u64);
    for chunk in &entry.chunks {
        body.varint(zigzag(chunk.id.wrapping_sub(*previous_id) as i64));
        body.u8(u8::from(chunk.snippet_pending));
        body.u64(chunk.embed_hash);
        *previous_id = chunk.id;
    }
}

/// Decodes a manifest written by [`encode`]; `Err` says why the bytes cannot be one (cut
/// short, altered, or not a manifest).
pub fn decode(bytes: &[u8]) -> Result<Manifest, String> {
    let body = unframed(MAGIC, bytes)?;
    let mut r = Reader { bytes: body, at: 0 };
    let mut manifest = Manifest::default();
    read_fields(&mut r, &mut manifest)?;
    manifest.skipped = serde_json::from_str(r.str()?).map_err(|e| format!("skipped files: {e}"))?;
    let file_count = r.count()?;
    let mut files = Vec::with_capacity(file_count);
    let mut previous_id = 0u64;
    for _ in 0..file_count {
        files.push(read_entry(&mut r, &mut previous_id)?);
    }
    if r.at != body.len() {
        return Err(format!("{} bytes past the last file", body.len() - r.at));
    }
    if files.windows(2).any(|w| w[0].0 >= w[1].0) {
        return Err("files out of order".to_string());
    }
    // Written in order, so the map is built in one pass from the sorted list.
    manifest.files = files.into_iter().collect::<BTreeMap<_, _>>();
    Ok(manifest)
}

/// The body of bytes written by [`framed`], checked against its length and checksum.
pub(crate) fn unframed<'a>(magic: &[u8; 8], bytes: &'a [u8]) -> Result<&'a [u8], String> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != magic {
        return Err("not a manifest of this version".to_string());
    }
    let len = u64::from_le_bytes(bytes[8..16].try_into().unwrap_or_default());
    let checksum = u64::from_le_bytes(bytes[16..24].try_into().unwrap_or_default());
    let body = &bytes[HEADER_LEN..];
    if body.len() as u64 != len {
        return Err(format!("holds {} bytes where its header says {len}", body.len()));
    }
    if xxhash_rust::xxh3::xxh3_64(body) != checksum {
        return Err("the bytes do not match the checksum they were written with".to_string());
    }
    Ok(body)
}

/// Reads what [`write_fields`] wrote into `manifest`.
pub(super) fn read_fields(r: &mut Reader<'_>, manifest: &mut Manifest) -> Result<(), String> {
    manifest.generation = r.u64()?;
    manifest.next_chunk_id = r.u64()?;
    manifest.committed_at = r.u64()?;
    manifest.vectors_pending = r.u8()? != 0;
    manifest.fill_rate = match r.u8()? {
        0 => None,
        _ => Some(f32::from_le_bytes(r.take(4)?.try_into().unwrap_or_default())),
    };
    manifest.snippet_identity = r.str()?.to_string();
    manifest.quick = match r.u8()? {
        0 => None,
        _ => Some(VectorFileRecord {
            model: r.str()?.to_string(),
            dimensions: r.varint()? as usize,
            rows: r.u64()?,
            checksum: r.u64()?,
        }),
    };
    Ok(())
}

/// Reads what [`write_entry`] wrote.
pub(super) fn read_entry(r: &mut Reader<'_>, previous_id: &mut u64) -> Result<(String, FileEntry), String> {
    let path = r.str()?.to_string();
    let size = r.varint()?;
    let mtime_ns = r.u64()?;
    let content_hash = r.u64()?;
    let flags = r.u8()?;
    let warnings = (0..r.count()?).map(|_| r.str().map(str::to_string)).collect::<Result<Vec<_>, _>>()?;
    let chunk_count = r.count()?;
    let mut chunks = Vec::with_capacity(chunk_count);
    for _ in 0..chunk_count {
        let id = previous_id.wrapping_add(unzigzag(r.varint()?) as u64);
        let snippet_pending = match r.u8()? {
            0 => false,
            1 => true,
            other => return Err(format!("chunk {id}: flag {other}")),
        };
        chunks.push(ChunkRef { id, embed_hash: r.u64()?, snippet_pending });
        *previous_id = id;
    }
    let entry = FileEntry {
        size,
        mtime_ns,
        content_hash,
        chunks,
        lossy: flags & FILE_LOSSY != 0,
        warnings,
        racy: flags & FILE_RACY != 0,
    };
    Ok((path, entry))
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    (n >> 1) as i64 ^ -((n & 1) as i64)
}

pub(crate) struct Writer(pub(crate) Vec<u8>);

impl Writer {
    pub(super) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    pub(super) fn str(&mut self, s: &str) {
        self.varint(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
}

pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|end| *end <= self.bytes.len()).ok_or("cut short")?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }
    pub(super) fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap_or_default()))
    }
    pub(crate) fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("a number runs too long".to_string())
    }
    /// A count of items that follow, each at least one byte long: a count larger than the
    /// bytes left is damage, and must not reserve memory for it.
    pub(crate) fn count(&mut self) -> Result<usize, String> {
        let n = self.varint()?;
        if n > (self.bytes.len() - self.at) as u64 {
            return Err("a count runs past the end".to_string());
        }
        Ok(n as usize)
    }
    pub(super) fn str(&mut self) -> Result<&'a str, String> {
        let n = self.count()?;
        std::str::from_utf8(self.take(n)?).map_err(|_| "a name is not UTF-8".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::{SkipReason, Skipped};

    fn sample() -> Manifest {
        let mut files = BTreeMap::new();
        files.insert(
            "a/one.md".to_string(),
            FileEntry {
                size: 1234,
                mtime_ns: 1_700_000_000_123_456_789,
                content_hash: u64::MAX - 3,
                chunks: vec![
                    ChunkRef { id: 7, embed_hash: 11, snippet_pending: false },
                    ChunkRef { id: 8, embed_hash: 12, snippet_pending: true },
                    // Ids may go down within a file (a chunk kept from an older version).
                    ChunkRef { id: 2, embed_hash: 0, snippet_pending: false },
                ],
                lossy: true,
                warnings: vec!["front matter line 3: no colon".to_string()],
                racy: false,
            },
        );
        files.insert(
            "b/twö.txt".to_string(),
            FileEntry {
                size: 0,
                mtime_ns: 0,
                content_hash: 5,
                chunks: vec![ChunkRef { id: u64::MAX - 1, embed_hash: 1, snippet_pending: false }],
                lossy: false,
                warnings: Vec::new(),
                racy: true,
            },
        );
        Manifest {
            generation: 42,
            next_chunk_id: u64::MAX,
            committed_at: 1_700_000_000,
            files,
            skipped: vec![Skipped {
                path: "big.md".to_string(),
                reason: SkipReason::TooLarge { size: 9, limit: 4 },
            }],
            vectors_pending: true,
            fill_rate: Some(7.5),
            snippet_identity: "openai/gpt@1".to_string(),
            quick: Some(VectorFileRecord {
                model: "static/m".to_string(),
                dimensions: 256,
                rows: 3,
                checksum: 99,
            }),
        }
    }

    #[test]
    fn every_field_comes_back() {
        let manifest = sample();
        assert_eq!(decode(&encode(&manifest)).unwrap(), manifest);
        let empty = Manifest::default();
        assert_eq!(decode(&encode(&empty)).unwrap(), empty);
    }

    #[test]
    fn damage_anywhere_is_detected() {
        let bytes = encode(&sample());
        for at in 0..bytes.len() {
            let mut altered = bytes.clone();
            altered[at] ^= 0x20;
            assert!(decode(&altered).is_err(), "a flipped byte at {at} went unnoticed");
        }
        for len in 0..bytes.len() {
            assert!(decode(&bytes[..len]).is_err(), "cut to {len} bytes went unnoticed");
        }
        assert!(decode(b"{\"generation\": 1}").unwrap_err().contains("not a manifest"));
    }

    #[test]
    fn garbage_with_a_matching_checksum_is_refused_without_panicking() {
        // A body that passes the checksum but is not a manifest (a bug, not damage) must
        // still be an error.
        for body in [vec![0xffu8; 40], vec![0u8; 3], vec![0x80; 100]] {
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&(body.len() as u64).to_le_bytes());
            bytes.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&body).to_le_bytes());
            bytes.extend_from_slice(&body);
            assert!(decode(&bytes).is_err());
        }
    }
}
