//! The exact scan of a vector file's rows: each row's int8 bytes against the quantised query,
//! the best few kept. On a million rows this loop is most of a search's time, so it is
//! compiled twice, for the baseline processor and for AVX2, and the one the processor can
//! run is chosen once per search.

/// What a scan reads of a row: its int8 bytes, its scale, and its chunk id (read only for
/// the rows that make the list).
pub(super) trait ScanRows: Sync {
    fn bytes_at(&self, row: u32) -> &[i8];
    fn scale_at(&self, row: u32) -> f32;
    fn id_at(&self, row: u32) -> u64;
}

#[inline(always)]
pub(super) fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    // Integer sums may be reordered, so this loop is vectorised (with the widest
    // instructions of the function it is inlined into: see `Scan`).
    a.iter().zip(b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum()
}

/// How a scan compares rows with the query: the same loop, compiled for the baseline CPU
/// or, when the processor has them, for AVX2's wider integer instructions, chosen once per
/// search. On a million rows the scan is most of a search's time.
#[derive(Clone, Copy)]
pub(super) enum Scan {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Scan {
    pub(super) fn detect() -> Scan {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Scan::Avx2;
        }
        Scan::Portable
    }

    pub(super) fn best_of<S: ScanRows>(
        self,
        set: &S,
        rows: &[u32],
        query: &[i8],
        limit: usize,
    ) -> Vec<(u64, f32)> {
        match self {
            Scan::Portable => best_rows(set, rows, query, limit),
            // SAFETY: chosen only when the processor has AVX2.
            #[cfg(target_arch = "x86_64")]
            Scan::Avx2 => unsafe { best_rows_avx2(set, rows, query, limit) },
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn best_rows_avx2<S: ScanRows>(set: &S, rows: &[u32], query: &[i8], limit: usize) -> Vec<(u64, f32)> {
    best_rows(set, rows, query, limit)
}

/// The `limit` best of `rows` for the quantised `query`, by unscaled similarity.
#[inline(always)]
fn best_rows<S: ScanRows>(set: &S, rows: &[u32], query: &[i8], limit: usize) -> Vec<(u64, f32)> {
    let mut top = TopK::new(limit);
    for &row in rows {
        let score = dot_i8(set.bytes_at(row), query) as f32 * set.scale_at(row);
        if top.admits(score) {
            top.push((set.id_at(row), score));
        }
    }
    top.into_sorted()
}

/// The best `limit` scores seen, kept unsorted until the end. Ties go to the smaller id.
pub(super) struct TopK {
    limit: usize,
    items: Vec<(u64, f32)>,
    /// The worst item kept once the buffer was first cut back to `limit` items: nothing
    /// below it can enter.
    floor: Option<(u64, f32)>,
}

/// Better first: the higher score, then the smaller id.
fn better(a: &(u64, f32), b: &(u64, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

impl TopK {
    pub(super) fn new(limit: usize) -> Self {
        TopK { limit, items: Vec::with_capacity(limit * 2), floor: None }
    }

    /// Whether a score may enter (a tie with the floor is settled by id in `push`).
    pub(super) fn admits(&self, score: f32) -> bool {
        self.floor.is_none_or(|(_, floor)| score >= floor)
    }

    pub(super) fn push(&mut self, item: (u64, f32)) {
        if self.limit == 0 {
            return;
        }
        // Near-duplicate texts have equal vectors: hundreds of rows may tie with the floor,
        // and only those with a smaller id than the floor's belong above it.
        if self.floor.is_some_and(|floor| better(&item, &floor).is_ge()) {
            return;
        }
        self.items.push(item);
        if self.items.len() >= self.limit * 2 {
            // Only which items are the best `limit` matters until the end, not their order.
            let (_, worst_kept, _) = self.items.select_nth_unstable_by(self.limit - 1, better);
            self.floor = Some(*worst_kept);
            self.items.truncate(self.limit);
        }
    }

    pub(super) fn into_sorted(mut self) -> Vec<(u64, f32)> {
        self.items.sort_unstable_by(better);
        self.items.truncate(self.limit);
        self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_go_to_the_smaller_ids_however_many_there_are() {
        let mut top = TopK::new(3);
        for id in (0..1_000u64).rev().chain(1_000..2_000) {
            if top.admits(0.5) {
                top.push((id, 0.5));
            }
        }
        top.push((5_000, 0.9));
        top.push((6_000, 0.1));
        assert_eq!(top.into_sorted(), vec![(5_000, 0.9), (0, 0.5), (1, 0.5)]);
        let mut none = TopK::new(0);
        none.push((1, 1.0));
        assert!(none.into_sorted().is_empty());
    }
}
