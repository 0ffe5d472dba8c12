//! Stand-in sentence vectors: embedding millions of messages takes hours on this CPU, so the
//! benches that need vectors at scale draw them instead. 384-dim unit vectors around 512
//! random centres, so they cluster the way sentence embeddings do. Labelled as stand-ins
//! wherever a bench reports them.

use std::hash::{Hash, Hasher};

use crate::corpus::Rng;

/// multilingual-e5-small's width.
pub const DIMS: usize = 384;

pub struct StandIn {
    centres: Vec<Vec<f32>>,
}

fn unit(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= n);
}

impl StandIn {
    /// 512 centres drawn from `rng`.
    pub fn new(rng: &mut Rng) -> StandIn {
        let centres = (0..512)
            .map(|_| {
                let mut c: Vec<f32> = (0..DIMS).map(|_| rng.normal() as f32).collect();
                unit(&mut c);
                c
            })
            .collect();
        StandIn { centres }
    }

    /// A unit vector near one of the centres.
    pub fn draw(&self, rng: &mut Rng) -> Vec<f32> {
        let c = rng.pick(&self.centres);
        let mut v: Vec<f32> = c
            .iter()
            .map(|x| x + 0.6 * rng.normal() as f32 / (DIMS as f32).sqrt())
            .collect();
        unit(&mut v);
        v
    }

    /// The stand-in vector of `text`: the same text always gets the same vector.
    pub fn of_text(&self, text: &str) -> Vec<f32> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        self.draw(&mut Rng::new(h.finish()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_unit_and_texts_deterministic() {
        let s = StandIn::new(&mut Rng::new(1));
        let a = s.of_text("hello");
        assert_eq!(a.len(), DIMS);
        assert!((a.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-4);
        assert_eq!(a, s.of_text("hello"));
        assert_ne!(a, s.of_text("hello!"));
    }
}
