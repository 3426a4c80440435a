//! Fusion of the retrieval arms' ranked candidates into one ranking.

use std::collections::HashMap;

/// One arm's ranked candidates.
#[derive(Debug, Clone)]
pub struct Ranked {
    pub weight: f32,
    /// Chunk ids with the arm's own score, best first.
    pub ids: Vec<(u64, f32)>,
}

/// A fused candidate: its id, fused score and 1-based rank in each arm.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    pub id: u64,
    pub score: f32,
    pub ranks: Vec<Option<u32>>,
}

/// Weighted reciprocal-rank fusion: score(d) = Σ weight / (k + rank(d)). Ties keep the
/// order of first appearance (arm order, then rank), so results are deterministic.
pub fn fuse(arms: &[Ranked], k: f32) -> Vec<Fused> {
    let mut by_id: HashMap<u64, usize> = HashMap::new();
    let mut fused: Vec<Fused> = Vec::new();
    for (a, arm) in arms.iter().enumerate() {
        for (r, (id, _)) in arm.ids.iter().enumerate() {
            let rank = r as u32 + 1;
            let i = *by_id.entry(*id).or_insert_with(|| {
                fused.push(Fused { id: *id, score: 0.0, ranks: vec![None; arms.len()] });
                fused.len() - 1
            });
            if fused[i].ranks[a].is_none() {
                fused[i].ranks[a] = Some(rank);
                fused[i].score += arm.weight / (k + rank as f32);
            }
        }
    }
    // A stable sort keeps first-appearance order among equal scores.
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(weight: f32, ids: &[u64]) -> Ranked {
        Ranked { weight, ids: ids.iter().map(|&i| (i, 0.0)).collect() }
    }

    #[test]
    fn fusion_rewards_agreement_between_arms() {
        let fused = fuse(&[arm(1.0, &[1, 2, 3]), arm(1.0, &[3, 4, 1])], 60.0);
        let order: Vec<u64> = fused.iter().map(|f| f.id).collect();
        assert_eq!(order, [1, 3, 2, 4]);
        assert_eq!(fused[0].ranks, [Some(1), Some(3)]);
        assert_eq!(fused[2].ranks, [Some(2), None]);
        let expected = 1.0 / 61.0 + 1.0 / 63.0;
        assert!((fused[0].score - expected).abs() < 1e-7);
    }

    #[test]
    fn weights_tip_the_balance() {
        let fused = fuse(&[arm(3.0, &[1, 2]), arm(1.0, &[2, 1])], 60.0);
        assert_eq!(fused[0].id, 1);
        let fused = fuse(&[arm(1.0, &[1, 2]), arm(3.0, &[2, 1])], 60.0);
        assert_eq!(fused[0].id, 2);
    }

    #[test]
    fn small_k_favours_top_ranks() {
        // With k = 0 the first of one arm beats the second of both.
        let fused = fuse(&[arm(1.0, &[1, 2]), arm(1.0, &[3, 2])], 0.0);
        assert_eq!(fused[0].id, 1);
        let fused = fuse(&[arm(1.0, &[1, 2]), arm(1.0, &[3, 2])], 60.0);
        assert_eq!(fused[0].id, 2);
    }

    #[test]
    fn an_empty_arm_changes_nothing() {
        let fused = fuse(&[arm(1.0, &[]), arm(1.0, &[5, 6])], 60.0);
        assert_eq!(fused.iter().map(|f| f.id).collect::<Vec<_>>(), [5, 6]);
        assert_eq!(fused[0].ranks, [None, Some(1)]);
    }
}
