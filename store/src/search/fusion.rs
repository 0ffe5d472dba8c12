//! How hybrid search merges its full-text and vector arms.

use std::collections::HashMap;
use std::hash::Hash;

/// Reciprocal rank fusion's constant: a hit ranked r-th in an arm adds 1 / (K + r).
const RRF_K: f32 = 60.0;

/// How hybrid search merges its full-text and vector arms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fusion {
    /// Reciprocal rank fusion: a hit ranked r-th (from 1) in an arm adds 1 / (60 + r).
    Rrf,
    /// Each arm's scores scaled to [0, 1] over its pool (min-max), then averaged; a hit
    /// missing from an arm gets 0 there.
    MinMax,
}

/// The fusion hybrid search uses: min-max found known items more often than reciprocal rank
/// fusion on both corpora `hybrid_bench` ran (docs/benchmarks.md).
pub const HYBRID_FUSION: Fusion = Fusion::MinMax;

/// Fuse ranked lists of (key, score), each best first, into one: best first, ties by key.
pub fn fuse<K: Clone + Eq + Hash + Ord>(fusion: Fusion, arms: &[&[(K, f32)]]) -> Vec<(K, f32)> {
    let mut score: HashMap<K, f32> = HashMap::new();
    for arm in arms {
        let (lo, hi) = arm
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), r| {
                (lo.min(r.1), hi.max(r.1))
            });
        for (rank, (key, s)) in arm.iter().enumerate() {
            let add = match fusion {
                Fusion::Rrf => 1.0 / (RRF_K + rank as f32 + 1.0),
                Fusion::MinMax if hi > lo => (s - lo) / (hi - lo) / arms.len() as f32,
                Fusion::MinMax => 1.0 / arms.len() as f32,
            };
            *score.entry(key.clone()).or_default() += add;
        }
    }
    let mut out: Vec<(K, f32)> = score.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}
