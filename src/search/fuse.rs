//! Fusion of the retrieval arms' ranked candidates into one ranking: by their normalised
//! scores (the default), or by their ranks alone (weighted reciprocal-rank fusion).

use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;

/// How the arms' candidates are fused.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fusion {
    /// Σ weight · (score − min) / (max − min), each arm's scores min-max normalised over its
    /// own candidates. A confident hit of one arm keeps its lead unless the other arm is
    /// about as sure of something else, which rank fusion cannot tell.
    Score,
    /// Σ weight / (k + rank): scores are ignored, only ranks count.
    Rrf,
}

impl fmt::Display for Fusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fusion::Score => "score",
            Fusion::Rrf => "rrf",
        })
    }
}

/// One arm's ranked candidates.
#[derive(Debug, Clone)]
pub struct Ranked {
    pub weight: f32,
    /// Chunk ids with the arm's own score (higher is better), best first.
    pub ids: Vec<(u64, f32)>,
}

/// A fused candidate: its id, fused score and 1-based rank in each arm.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    pub id: u64,
    pub score: f32,
    pub ranks: Vec<Option<u32>>,
}

/// Fuses the arms with `method`; `rrf_k` is the `k` of rank fusion. Ties keep the order of
/// first appearance (arm order, then rank), so results are deterministic.
pub fn fuse(arms: &[Ranked], method: Fusion, rrf_k: f32) -> Vec<Fused> {
    let mut by_id: HashMap<u64, usize> = HashMap::new();
    let mut fused: Vec<Fused> = Vec::new();
    for (a, arm) in arms.iter().enumerate() {
        let contribution = contribution(arm, method, rrf_k);
        for (r, (id, score)) in arm.ids.iter().enumerate() {
            let i = *by_id.entry(*id).or_insert_with(|| {
                fused.push(Fused { id: *id, score: 0.0, ranks: vec![None; arms.len()] });
                fused.len() - 1
            });
            if fused[i].ranks[a].is_none() {
                fused[i].ranks[a] = Some(r as u32 + 1);
                fused[i].score += contribution(r, *score);
            }
        }
    }
    // A stable sort keeps first-appearance order among equal scores.
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused
}

/// The BM25 arm's weight for one query: `weight` scaled by `coverage`, the share of the
/// query (by IDF, words no chunk holds included) that its best candidate holds, to the
/// power `power`. A query none of whose words a chunk holds gives BM25 no say at all, and
/// one that its best candidate holds whole keeps the full weight; in between, min-max
/// normalisation would otherwise give a best candidate that matched only the query's
/// common words the same full marks as a keyword match, and let it push the other arm's
/// confident answer down. A power of 0 keeps the weight fixed.
pub fn bm25_weight(weight: f32, coverage: f32, power: f32) -> f32 {
    if power <= 0.0 {
        return weight;
    }
    let coverage = if coverage.is_finite() { coverage.clamp(0.0, 1.0) } else { 0.0 };
    weight * coverage.powf(power)
}

/// What a candidate at 0-based `rank` with `score` adds to its fused score.
fn contribution(arm: &Ranked, method: Fusion, rrf_k: f32) -> impl Fn(usize, f32) -> f32 {
    let weight = arm.weight;
    let (min, max) = arm
        .ids
        .iter()
        .map(|(_, s)| *s)
        .filter(|s| s.is_finite())
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), s| (lo.min(s), hi.max(s)));
    let spread = max - min;
    move |rank, score| match method {
        Fusion::Rrf => weight / (rrf_k + rank as f32 + 1.0),
        // One candidate, or all alike: each is as good as the arm's best.
        Fusion::Score if !score.is_finite() => 0.0,
        Fusion::Score if spread <= f32::EPSILON * max.abs().max(1.0) => weight,
        Fusion::Score => weight * (score - min) / spread,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(weight: f32, ids: &[u64]) -> Ranked {
        // Scores fall with the rank, as an arm's do.
        Ranked { weight, ids: ids.iter().enumerate().map(|(r, &i)| (i, 1.0 / (r as f32 + 1.0))).collect() }
    }

    fn scored(weight: f32, ids: &[(u64, f32)]) -> Ranked {
        Ranked { weight, ids: ids.to_vec() }
    }

    fn order(fused: &[Fused]) -> Vec<u64> {
        fused.iter().map(|f| f.id).collect()
    }

    #[test]
    fn rank_fusion_rewards_agreement_between_arms() {
        let fused = fuse(&[arm(1.0, &[1, 2, 3]), arm(1.0, &[3, 4, 1])], Fusion::Rrf, 60.0);
        assert_eq!(order(&fused), [1, 3, 2, 4]);
        assert_eq!(fused[0].ranks, [Some(1), Some(3)]);
        assert_eq!(fused[2].ranks, [Some(2), None]);
        let expected = 1.0 / 61.0 + 1.0 / 63.0;
        assert!((fused[0].score - expected).abs() < 1e-7);
    }

    #[test]
    fn weights_tip_the_balance() {
        for method in [Fusion::Rrf, Fusion::Score] {
            let fused = fuse(&[arm(3.0, &[1, 2]), arm(1.0, &[2, 1])], method, 60.0);
            assert_eq!(fused[0].id, 1, "{method}");
            let fused = fuse(&[arm(1.0, &[1, 2]), arm(3.0, &[2, 1])], method, 60.0);
            assert_eq!(fused[0].id, 2, "{method}");
        }
    }

    #[test]
    fn small_k_favours_top_ranks() {
        // With k = 0 the first of one arm beats the second of both.
        let fused = fuse(&[arm(1.0, &[1, 2]), arm(1.0, &[3, 2])], Fusion::Rrf, 0.0);
        assert_eq!(fused[0].id, 1);
        let fused = fuse(&[arm(1.0, &[1, 2]), arm(1.0, &[3, 2])], Fusion::Rrf, 60.0);
        assert_eq!(fused[0].id, 2);
    }

    #[test]
    fn an_empty_arm_changes_nothing() {
        for method in [Fusion::Rrf, Fusion::Score] {
            let fused = fuse(&[arm(1.0, &[]), arm(1.0, &[5, 6])], method, 60.0);
            assert_eq!(order(&fused), [5, 6]);
            assert_eq!(fused[0].ranks, [None, Some(1)]);
        }
    }

    #[test]
    fn a_confident_hit_keeps_its_lead_over_a_flat_arm() {
        // BM25 is sure of 1, far ahead of the rest; the vector arm finds 1, 2 and 3 about
        // equally close, well above its tail, and happens to rank 1 fourth. Rank fusion
        // sees only that order and puts 2 first; score fusion sees that the vector arm
        // barely tells them apart and keeps BM25's confident pick.
        let words = scored(1.0, &[(1, 20.0), (2, 6.0), (3, 5.5), (4, 5.0)]);
        let vector = scored(1.0, &[(3, 0.80), (2, 0.79), (9, 0.785), (1, 0.78), (10, 0.40)]);
        let rrf = fuse(&[words.clone(), vector.clone()], Fusion::Rrf, 10.0);
        assert_ne!(rrf[0].id, 1);
        let score = fuse(&[words, vector], Fusion::Score, 10.0);
        assert_eq!(score[0].id, 1);
    }

    #[test]
    fn score_fusion_is_a_weighted_sum_of_min_max_normalised_scores() {
        let words = scored(1.0, &[(1, 10.0), (2, 6.0), (3, 2.0)]);
        let vector = scored(0.5, &[(2, 0.9), (4, 0.5)]);
        let fused = fuse(&[words, vector], Fusion::Score, 10.0);
        let score = |id| fused.iter().find(|f| f.id == id).unwrap().score;
        assert!((score(1) - 1.0).abs() < 1e-6);
        assert!((score(2) - (0.5 + 0.5)).abs() < 1e-6);
        assert!(score(3).abs() < 1e-6);
        assert!(score(4).abs() < 1e-6);
        // Equal scores keep the order of first appearance.
        assert_eq!(order(&fused), [1, 2, 3, 4]);
    }

    #[test]
    fn an_arm_of_equal_scores_gives_each_its_full_weight() {
        let fused =
            fuse(&[scored(1.0, &[(7, 3.0)]), scored(0.5, &[(8, 0.2), (9, 0.2)])], Fusion::Score, 10.0);
        assert_eq!(order(&fused), [7, 8, 9]);
        assert!((fused[1].score - 0.5).abs() < 1e-6);
    }

    /// A question whose words the notes lack: BM25's candidates match only a common word
    /// (its best holds 4 % of the query), and the vector arm is sure of chunk 1, which
    /// BM25 ranks last. BM25's weight falls to a fifth, so chunk 1 stays first; the same
    /// arms for a keyword query that BM25's best candidate holds whole keep BM25's pick.
    #[test]
    fn a_weak_bm25_arm_cannot_pull_the_vector_arms_best_hit_down() {
        let words = |coverage: f32| scored(bm25_weight(1.0, coverage, 0.5), &[(7, 3.1), (8, 2.0), (1, 1.2)]);
        let vector = scored(0.5, &[(1, 0.91), (8, 0.86), (7, 0.85), (9, 0.84)]);
        let weak = fuse(&[words(0.04), vector.clone()], Fusion::Score, 10.0);
        assert_eq!(order(&weak), [1, 7, 8, 9]);
        let strong = fuse(&[words(1.0), vector], Fusion::Score, 10.0);
        assert_eq!(strong[0].id, 7);
    }

    #[test]
    fn bm25_without_a_matched_word_leaves_the_vector_arms_order_as_it_is() {
        assert_eq!(bm25_weight(1.0, 0.0, 0.5), 0.0);
        let words = scored(bm25_weight(1.0, 0.0, 0.5), &[(4, 9.0), (5, 2.0)]);
        let vector = scored(0.5, &[(5, 0.9), (6, 0.8), (4, 0.7)]);
        assert_eq!(order(&fuse(&[words, vector], Fusion::Score, 10.0)), [5, 6, 4]);
    }

    #[test]
    fn the_bm25_weight_follows_the_coverage_and_is_fixed_at_power_0() {
        assert_eq!(bm25_weight(1.0, 1.0, 0.5), 1.0);
        assert!((bm25_weight(2.0, 0.25, 0.5) - 1.0).abs() < 1e-6);
        assert!((bm25_weight(1.0, 0.25, 1.0) - 0.25).abs() < 1e-6);
        for coverage in [0.0, 0.3, 1.0, f32::NAN] {
            assert_eq!(bm25_weight(0.7, coverage, 0.0), 0.7);
        }
        // A share outside 0 to 1, or not a number, is taken at its nearest sensible value.
        assert_eq!(bm25_weight(1.0, 1.5, 0.5), 1.0);
        assert_eq!(bm25_weight(1.0, f32::NAN, 0.5), 0.0);
    }

    #[test]
    fn fusion_is_deterministic() {
        let words = scored(bm25_weight(1.0, 0.3, 0.5), &[(1, 5.0), (2, 5.0), (3, 4.0), (4, 1.0)]);
        let vector = scored(0.5, &[(4, 0.9), (3, 0.9), (5, 0.8), (1, 0.7)]);
        let first = fuse(&[words.clone(), vector.clone()], Fusion::Score, 10.0);
        for _ in 0..20 {
            assert_eq!(fuse(&[words.clone(), vector.clone()], Fusion::Score, 10.0), first);
        }
    }

    #[test]
    fn scores_that_are_not_numbers_count_nothing() {
        let fused = fuse(&[scored(1.0, &[(1, f32::NAN), (2, 1.0), (3, 0.5), (4, 0.0)])], Fusion::Score, 10.0);
        assert_eq!(order(&fused), [2, 3, 1, 4]);
        assert_eq!(fused[2].score, 0.0);
    }
}
