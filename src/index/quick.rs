//! Quick vectors: while a slow model's vectors are pending, each waiting chunk gets a vector
//! from the quick built-in model, so that the vector arm of a search covers every chunk from
//! the first commit on. They live in memory only, for the chunks still waiting: a chunk's
//! quick vector goes as soon as its own vector arrives, and after a restart they are made
//! again, in a moment, from the stored texts of the chunks that still wait.

use std::collections::HashMap;

/// The quick vectors of the chunks whose vectors are pending, searched exactly.
#[derive(Debug, Default)]
pub struct QuickVectors {
    vectors: HashMap<u64, Vec<f32>>,
}

impl QuickVectors {
    pub fn insert(&mut self, id: u64, vector: Vec<f32>) {
        self.vectors.insert(id, vector);
    }

    pub fn remove(&mut self, id: u64) {
        self.vectors.remove(&id);
    }

    pub fn vectors_of(&self, id: u64) -> Option<Vec<f32>> {
        self.vectors.get(&id).cloned()
    }

    pub fn contains(&self, id: u64) -> bool {
        self.vectors.contains_key(&id)
    }

    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// The `limit` nearest vectors to `query` by cosine similarity (all vectors are unit
    /// length), best first; ties go to the smaller id, so the order never depends on the
    /// map's. An exact scan: it only ever covers the chunks still waiting.
    pub fn nearest(&self, query: &[f32], limit: usize) -> Vec<(u64, f32)> {
        let mut scored: Vec<(u64, f32)> = self
            .vectors
            .iter()
            .filter(|(_, v)| v.len() == query.len())
            .map(|(id, v)| (*id, v.iter().zip(query).map(|(a, b)| a * b).sum::<f32>()))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(limit);
        scored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_is_exact_and_ordered() {
        let mut q = QuickVectors::default();
        q.insert(1, vec![1.0, 0.0]);
        q.insert(2, vec![0.0, 1.0]);
        q.insert(3, vec![0.6, 0.8]);
        q.insert(4, vec![0.6, 0.8]);
        let top = q.nearest(&[0.0, 1.0], 3);
        assert_eq!(top.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [2, 3, 4]);
        assert!((top[1].1 - 0.8).abs() < 1e-6);
        q.remove(2);
        assert!(!q.contains(2));
        assert_eq!(q.nearest(&[0.0, 1.0], 1)[0].0, 3);
        // A vector of another dimension (a model change) is never compared.
        assert!(q.nearest(&[1.0, 0.0, 0.0], 5).is_empty());
    }
}
