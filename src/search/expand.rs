//! Context enrichment at query time: each hit widened to its neighbouring chunks (`window`),
//! or to its whole section when enough of that section's chunks are hits (`merge`).
//!
//! Expansion works on the ranked hits of one search and the stored chunks of their files.
//! Every expanded hit keeps its best chunk (the range an editor jumps to) and gains an
//! [`Expansion`]: the exact slice of the document from its first chunk's first byte to its
//! last chunk's last byte. Consecutive chunks of a split section share some tokens, so the
//! slice is put together from the chunks' byte ranges, never by concatenating their texts;
//! the bytes between two chunks (blank lines, a heading with no body) come from the file
//! itself when it is still the version that was indexed.
//!
//! Results never hold the same text twice: expansions whose byte ranges overlap become one
//! result at the better rank.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Hit;
use crate::index::{ChunkRecord, IndexError, Snapshot};
use crate::workspace::Legacy;

/// How hits are widened before they are returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expand {
    /// Each hit is its chunk alone.
    #[default]
    None,
    /// Each hit comes with its neighbouring chunks, those of its own section first.
    Window,
    /// Hits that make up enough of a section are replaced by the whole section, up the
    /// heading tree.
    Merge,
}

impl fmt::Display for Expand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expand::None => "none",
            Expand::Window => "window",
            Expand::Merge => "merge",
        })
    }
}

/// How far hits are widened.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExpandSettings {
    pub expand: Expand,
    /// `window`: neighbours on each side of a hit.
    pub window: usize,
    /// `merge`: the share of a section's chunks that must be hits for the section to
    /// replace them.
    pub merge_share: f32,
}

/// What a hit was widened to: a contiguous run of chunks of its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    pub start_line: u32,
    pub end_line: u32,
    pub start_byte: u64,
    pub end_byte: u64,
    /// The section that was merged (`merge`), or the headings that all chunks of the run
    /// share (`window`).
    pub heading_path: Vec<String>,
    /// Ordinals of the first and last chunk of the run.
    pub first_ordinal: u32,
    pub last_ordinal: u32,
    /// Ordinals of the hits the run holds, best first.
    pub hit_ordinals: Vec<u32>,
    /// The document's text from `start_byte` to `end_byte`.
    pub text: String,
}

/// How many ranked hits to fetch so that `limit` results are left after expansion merges
/// some of them.
pub fn pool_size(limit: usize) -> usize {
    limit.saturating_mul(3).max(limit.saturating_add(10))
}

/// The stored chunks and the indexed text of the files that hits come from, loaded once
/// per file.
pub struct FileSource<'a> {
    snapshot: &'a Snapshot,
    root: &'a Path,
    /// The encoding of files neither UTF-8 nor UTF-16, as the index read them.
    legacy: Legacy,
    records: HashMap<String, Vec<ChunkRecord>>,
    texts: HashMap<String, Option<String>>,
}

impl<'a> FileSource<'a> {
    /// Files of the workspace at `root` as indexed in `snapshot`.
    pub fn new(snapshot: &'a Snapshot, root: &'a Path, legacy: Legacy) -> FileSource<'a> {
        FileSource { snapshot, root, legacy, records: HashMap::new(), texts: HashMap::new() }
    }

    fn records(&mut self, path: &str) -> Result<&[ChunkRecord], IndexError> {
        if !self.records.contains_key(path) {
            let records = self.snapshot.file_records(path)?;
            self.records.insert(path.to_string(), records);
        }
        Ok(self.records.get(path).map(Vec::as_slice).unwrap_or_default())
    }

    /// The file's text as it was indexed, or `None` when it has changed since (or cannot be
    /// read): its bytes must hash to the value the manifest recorded.
    fn text(&mut self, path: &str) -> Option<&str> {
        if !self.texts.contains_key(path) {
            let indexed = self.snapshot.manifest().files.get(path).map(|e| e.content_hash);
            let text = std::fs::read(self.root.join(path)).ok().and_then(|bytes| {
                let decoded = crate::workspace::decode(&bytes, self.legacy).ok()?;
                (Some(decoded.content_hash) == indexed).then_some(decoded.text)
            });
            self.texts.insert(path.to_string(), text);
        }
        self.texts.get(path).and_then(Option::as_deref)
    }
}

/// A run of chunks of one file that stands for one or more hits.
#[derive(Debug, Clone)]
struct Group {
    path: String,
    /// Positions of the first and last chunk in the file's records; `None` for a hit whose
    /// chunk is not among them, which stays alone.
    run: Option<(usize, usize)>,
    start_byte: u64,
    end_byte: u64,
    /// Positions in the hit list of the hits it holds, best first.
    hits: Vec<usize>,
    /// The merged section's heading path, for `merge`.
    section: Option<Vec<String>>,
}

impl Group {
    fn overlaps(&self, other: &Group) -> bool {
        self.run.is_some()
            && other.run.is_some()
            && self.path == other.path
            && self.start_byte < other.end_byte
            && other.start_byte < self.end_byte
    }
}

/// Widens ranked hits (best first, usually [`pool_size`] of them) and returns at most
/// `limit` results, best first. Each result is the best hit of its run with
/// [`Hit::expanded`] set. With [`Expand::None`] the first `limit` hits come back unchanged.
///
/// The hits considered are the first `limit`; when merging leaves fewer than `limit`
/// results, the next hits are taken in, until there are enough or the hits run out.
pub fn expand(
    hits: Vec<Hit>,
    limit: usize,
    settings: &ExpandSettings,
    files: &mut FileSource<'_>,
) -> Result<Vec<Hit>, IndexError> {
    if settings.expand == Expand::None {
        return Ok(hits.into_iter().take(limit).collect());
    }
    let mut taken = limit.min(hits.len());
    loop {
        let groups = group(&hits[..taken], settings, files)?;
        if groups.len() >= limit || taken == hits.len() {
            return groups.into_iter().take(limit).map(|g| result(&hits, g, files)).collect();
        }
        taken = (taken + limit - groups.len()).min(hits.len());
    }
}

/// The runs of chunks that the hits become, in the order of their best hits.
fn group(
    hits: &[Hit],
    settings: &ExpandSettings,
    files: &mut FileSource<'_>,
) -> Result<Vec<Group>, IndexError> {
    // For `merge`, the sections merged in each file, decided over all hits at once.
    let mut sections: HashMap<&str, Vec<Section>> = HashMap::new();
    if settings.expand == Expand::Merge {
        let mut by_file: HashMap<&str, Vec<usize>> = HashMap::new();
        for h in hits {
            let records = files.records(&h.chunk.path)?;
            if let Some(at) = position(records, &h.chunk) {
                by_file.entry(h.chunk.path.as_str()).or_default().push(at);
            }
        }
        for (path, at) in by_file {
            let records = files.records(path)?;
            sections.insert(path, merged_sections(records, &at, settings.merge_share));
        }
    }
    let mut groups: Vec<Group> = Vec::new();
    for (i, h) in hits.iter().enumerate() {
        let records = files.records(&h.chunk.path)?;
        let (first, last, section) = match position(records, &h.chunk) {
            // A hit whose file changed under this snapshot's records stays alone.
            None => {
                groups.push(Group {
                    path: h.chunk.path.clone(),
                    run: None,
                    start_byte: h.chunk.start_byte,
                    end_byte: h.chunk.end_byte,
                    hits: vec![i],
                    section: None,
                });
                continue;
            }
            Some(at) => match settings.expand {
                Expand::Window => {
                    let (first, last) = window(records, at, settings.window);
                    (first, last, None)
                }
                _ => sections
                    .get(h.chunk.path.as_str())
                    .and_then(|s| s.iter().find(|s| (s.first..=s.last).contains(&at)))
                    .map_or((at, at, None), |s| (s.first, s.last, Some(s.heading_path.clone()))),
            },
        };
        let new = Group {
            path: h.chunk.path.clone(),
            run: Some((first, last)),
            start_byte: records[first].start_byte,
            end_byte: records[last].end_byte,
            hits: vec![i],
            section,
        };
        absorb(&mut groups, new);
    }
    Ok(groups)
}

/// Where a hit's chunk sits among its file's records.
fn position(records: &[ChunkRecord], chunk: &ChunkRecord) -> Option<usize> {
    records.iter().position(|r| r.id == chunk.id)
}

/// Adds a group, joining it with every group it overlaps; the joined group takes the place
/// of the best-ranked one among them.
fn absorb(groups: &mut Vec<Group>, mut new: Group) {
    let mut place: Option<usize> = None;
    // The union may reach groups that the new one alone did not: look again after each join.
    while let Some(i) = groups.iter().position(|g| g.overlaps(&new)) {
        new = join(groups.remove(i), new);
        place = Some(place.map_or(i, |p| p.min(i)));
    }
    groups.insert(place.unwrap_or(groups.len()), new);
}

/// The union of two overlapping runs of the same file.
fn join(a: Group, b: Group) -> Group {
    let section = match (a.section, b.section) {
        (Some(x), Some(y)) => Some(common_prefix(&x, &y)),
        (x, y) => x.or(y),
    };
    let mut hits = a.hits;
    hits.extend(b.hits);
    hits.sort_unstable();
    let run = match (a.run, b.run) {
        (Some((f1, l1)), Some((f2, l2))) => Some((f1.min(f2), l1.max(l2))),
        (x, y) => x.or(y),
    };
    Group {
        path: a.path,
        run,
        start_byte: a.start_byte.min(b.start_byte),
        end_byte: a.end_byte.max(b.end_byte),
        hits,
        section,
    }
}

/// The window around the chunk at `at`: up to `n` neighbours on each side. A side cut
/// short by the file's edge or by the end of the hit's section gives its share to the other
/// side, so a window holds `2n + 1` chunks whenever the file has them. Neighbours of the
/// same section (same heading path) come first; then the nearest ones of other sections.
fn window(records: &[ChunkRecord], at: usize, n: usize) -> (usize, usize) {
    let same = |i: usize| records[i].heading_path == records[at].heading_path;
    let (mut first, mut last) = (at, at);
    let mut budget = n.saturating_mul(2);
    while budget > 0 {
        let before = first.checked_sub(1);
        let after = (last + 1 < records.len()).then_some(last + 1);
        // Preference: same section, then nearer to the hit, then before.
        let key = |i: Option<usize>| i.map(|i| (!same(i), i.abs_diff(at)));
        let pick = match (key(before), key(after)) {
            (None, None) => break,
            (Some(_), None) => before,
            (None, Some(_)) => after,
            (Some(b), Some(a)) => {
                if b <= a {
                    before
                } else {
                    after
                }
            }
        };
        match pick {
            Some(i) if i < first => first = i,
            Some(i) => last = i,
            None => break,
        }
        budget -= 1;
    }
    (first, last)
}

/// A section merged whole: positions of its first and last chunk, and its heading path.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Section {
    first: usize,
    last: usize,
    heading_path: Vec<String>,
}

/// The sections of one file to return whole: a section (every chunk whose heading path
/// starts with a given prefix, in one contiguous run; the whole file for the empty prefix)
/// is merged when at least `share` of its chunks are hits or lie in merged subsections.
/// Deeper sections are decided first, so merges climb the heading tree. Returns the
/// outermost merged sections, in document order.
fn merged_sections(records: &[ChunkRecord], hit_at: &[usize], share: f32) -> Vec<Section> {
    let mut covered = vec![false; records.len()];
    for &i in hit_at {
        covered[i] = true;
    }
    let depth = records.iter().map(|r| r.heading_path.len()).max().unwrap_or(0);
    let mut merged: Vec<Section> = Vec::new();
    for d in (0..=depth).rev() {
        let mut i = 0;
        while i < records.len() {
            if records[i].heading_path.len() < d {
                i += 1;
                continue;
            }
            let prefix = &records[i].heading_path[..d];
            let mut end = i;
            while end + 1 < records.len()
                && records[end + 1].heading_path.len() >= d
                && records[end + 1].heading_path[..d] == *prefix
            {
                end += 1;
            }
            let run = end - i + 1;
            let hits = covered[i..=end].iter().filter(|c| **c).count();
            // A run that a deeper section already spans keeps that section's more precise
            // heading path.
            let known = merged.iter().any(|s| s.first == i && s.last == end);
            if run > 1 && hits > 0 && !known && hits as f32 >= share * run as f32 {
                covered[i..=end].iter_mut().for_each(|c| *c = true);
                merged.retain(|s| s.last < i || s.first > end);
                merged.push(Section { first: i, last: end, heading_path: prefix.to_vec() });
            }
            i = end + 1;
        }
    }
    merged.sort_by_key(|s| s.first);
    merged
}

/// The best hit of a group with its expansion.
fn result(hits: &[Hit], g: Group, files: &mut FileSource<'_>) -> Result<Hit, IndexError> {
    let mut best = hits[g.hits[0]].clone();
    let hit_ordinals = g.hits.iter().map(|&i| hits[i].chunk.ordinal).collect();
    let Some((first, last)) = g.run else {
        let c = &best.chunk;
        best.expanded = Some(Expansion {
            start_line: c.start_line,
            end_line: c.end_line,
            start_byte: c.start_byte,
            end_byte: c.end_byte,
            heading_path: c.heading_path.clone(),
            first_ordinal: c.ordinal,
            last_ordinal: c.ordinal,
            hit_ordinals,
            text: c.text.clone(),
        });
        return Ok(best);
    };
    let records = files.records(&g.path)?.to_vec();
    let run = &records[first..=last];
    let text = slice_text(run, files.text(&g.path));
    let heading_path = g.section.unwrap_or_else(|| {
        run.iter().skip(1).fold(run[0].heading_path.clone(), |p, r| common_prefix(&p, &r.heading_path))
    });
    best.expanded = Some(Expansion {
        start_line: run[0].start_line,
        end_line: run.iter().map(|r| r.end_line).max().unwrap_or(run[0].end_line),
        start_byte: run[0].start_byte,
        end_byte: run.iter().map(|r| r.end_byte).max().unwrap_or(run[0].end_byte),
        heading_path,
        first_ordinal: run[0].ordinal,
        last_ordinal: run[run.len() - 1].ordinal,
        hit_ordinals,
        text,
    });
    Ok(best)
}

/// The document's text over a run of consecutive chunks: each chunk contributes what lies
/// past the previous chunk's end (overlapping tokens appear once), and the bytes between
/// two chunks come from the indexed file. When the file has changed since it was indexed,
/// such a gap is filled with as many line breaks as it spanned.
fn slice_text(run: &[ChunkRecord], file: Option<&str>) -> String {
    let mut text = String::new();
    let Some(first) = run.first() else { return text };
    let mut cursor = first.start_byte;
    let mut cursor_line = first.start_line;
    for r in run {
        if r.start_byte > cursor {
            match file.and_then(|f| f.get(cursor as usize..r.start_byte as usize)) {
                Some(gap) => text.push_str(gap),
                None => text.push_str(&"\n".repeat(r.start_line.saturating_sub(cursor_line).max(1) as usize)),
            }
            cursor = r.start_byte;
        }
        if r.end_byte > cursor {
            let skip = (cursor - r.start_byte) as usize;
            text.push_str(r.text.get(skip..).unwrap_or_default());
            cursor = r.end_byte;
            cursor_line = r.end_line;
        }
    }
    text
}

fn common_prefix(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().zip(b).take_while(|(x, y)| x == y).map(|(x, _)| x.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ordinal: u32, path: &[&str], start: u64, end: u64) -> ChunkRecord {
        ChunkRecord {
            id: u64::from(ordinal) + 1,
            path: "a.md".into(),
            ordinal,
            start_line: ordinal + 1,
            end_line: ordinal + 1,
            start_byte: start,
            end_byte: end,
            title: "A".into(),
            heading_path: path.iter().map(|s| s.to_string()).collect(),
            text: String::new(),
            context: String::new(),
            snippet: None,
            snippet_key: 0,
            token_count: 1,
            content_hash: 0,
            embed_hash: 0,
            metadata: Default::default(),
        }
    }

    #[test]
    fn a_window_fills_from_its_own_section_first() {
        let r = [
            record(0, &["A"], 0, 10),
            record(1, &["B"], 10, 20),
            record(2, &["B"], 20, 30),
            record(3, &["B"], 30, 40),
            record(4, &["C"], 40, 50),
        ];
        assert_eq!(window(&r, 1, 1), (1, 3), "the side in another section gives way");
        assert_eq!(window(&r, 2, 1), (1, 3));
        assert_eq!(window(&r, 0, 1), (0, 2), "file start: both neighbours after");
        assert_eq!(window(&r, 4, 1), (2, 4), "file end: both neighbours before");
        assert_eq!(window(&r, 2, 2), (0, 4), "section used up: nearest of other sections");
        assert_eq!(window(&r, 2, 0), (2, 2));
        assert_eq!(window(&r, 2, 9), (0, 4));
    }

    #[test]
    fn merging_climbs_the_heading_tree() {
        let r = [
            record(0, &["T"], 0, 10),
            record(1, &["T", "A"], 10, 20),
            record(2, &["T", "A"], 20, 30),
            record(3, &["T", "B"], 30, 40),
            record(4, &["T", "B"], 40, 50),
            record(5, &["T", "B", "x"], 50, 60),
        ];
        let section = |first, last, path: &[&str]| Section {
            first,
            last,
            heading_path: path.iter().map(|s| s.to_string()).collect(),
        };
        // One hit of two in A: A merges; T then has 2 of 6 covered.
        assert_eq!(merged_sections(&r, &[1], 0.5), [section(1, 2, &["T", "A"])]);
        assert_eq!(merged_sections(&r, &[1], 0.75), []);
        // A whole, and B through two of its three: T is covered entirely.
        // The whole file is also T's run: T's path is kept.
        assert_eq!(merged_sections(&r, &[1, 3, 5], 0.5), [section(0, 5, &["T"])]);
    }
}
