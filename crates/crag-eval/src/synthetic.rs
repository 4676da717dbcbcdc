//! Cheap, deterministic stand-in vectors for the scale benchmarks (never for quality).
//!
//! A million real embeddings take hours on a small machine, and the scale runs measure what a
//! query costs in the stores, not what the embedder makes of a text. [`SampledVectors`]
//! embeds the first `sample` texts it is given for real (a sample of the corpus itself) and
//! gives every later text one of those vectors, picked by a hash of the text, plus Gaussian
//! noise seeded by the same hash, normalised: vectors with the real model's geometry (its
//! clusters and anisotropy), about [`NEAR`] cosine from their sample, made in microseconds.
//! Everything else (chunking by the model's tokenizer, BM25, fusion, judging, the stores) is
//! real. Queries are embedded by the real model in the process that serves them.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use crag_ports::{Embedder, PortResult};
use tokio::sync::Mutex;

/// Standard deviation of each dimension's noise: with 384 dimensions the noise's norm is about
/// 0.59, so a synthetic vector's cosine with its sample is about [`NEAR`].
pub const NOISE: f32 = 0.03;

/// The cosine between a synthetic vector and the sample it was made from, about (384
/// dimensions, [`NOISE`]).
pub const NEAR: f32 = 0.86;

/// An [`Embedder`] that embeds a sample for real and perturbs it for the rest (see the
/// module's documentation). It reports the real model's id: the vectors live in its space.
pub struct SampledVectors {
    inner: Arc<dyn Embedder>,
    sample: usize,
    /// The real vectors of the first `sample` texts, in order.
    bank: Mutex<Vec<Vec<f32>>>,
}

impl SampledVectors {
    /// Wraps `inner`, embedding the first `sample` (at least one) texts with it.
    pub fn new(inner: Arc<dyn Embedder>, sample: usize) -> Self {
        Self {
            inner,
            sample: sample.max(1),
            bank: Mutex::new(Vec::new()),
        }
    }
}

impl fmt::Debug for SampledVectors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SampledVectors")
            .field("model", &self.inner.model_id())
            .field("sample", &self.sample)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Embedder for SampledVectors {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    fn max_tokens(&self) -> usize {
        self.inner.max_tokens()
    }

    fn token_spans(&self, text: &str) -> PortResult<Vec<Range<usize>>> {
        self.inner.token_spans(text)
    }

    fn count_tokens(&self, text: &str) -> PortResult<usize> {
        self.inner.count_tokens(text)
    }

    async fn embed(&self, texts: &[String]) -> PortResult<Vec<Vec<f32>>> {
        // Held for the whole call: batches take their turn, so the sample is the first texts
        // in ingestion order and the same corpus always gets the same vectors.
        let mut bank = self.bank.lock().await;
        let real = self.sample.saturating_sub(bank.len()).min(texts.len());
        let mut out = Vec::with_capacity(texts.len());
        if real > 0 {
            let vectors = self.inner.embed(&texts[..real]).await?;
            bank.extend(vectors.iter().cloned());
            out.extend(vectors);
        }
        out.extend(texts[real..].iter().map(|t| perturbed(&bank, t)));
        Ok(out)
    }
}

/// The bank's vector picked by `text`'s hash, plus noise seeded by it, normalised.
fn perturbed(bank: &[Vec<f32>], text: &str) -> Vec<f32> {
    let hash = fnv1a(text.as_bytes());
    let base = &bank[(hash % bank.len() as u64) as usize];
    let mut rng = SplitMix(hash);
    let mut v: Vec<f32> = base.iter().map(|x| x + NOISE * rng.gaussian()).collect();
    let norm = v
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt()
        .max(f32::MIN_POSITIVE);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// FNV-1a, 64 bits: stable across platforms and releases (the standard hasher is not).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// SplitMix64: a small seeded generator, enough for noise.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform draw in (0, 1].
    fn unit(&mut self) -> f32 {
        ((self.next() >> 40) as f32 + 1.0) / (1u64 << 24) as f32
    }

    /// A standard normal draw (Box-Muller).
    fn gaussian(&mut self) -> f32 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crag_ports::PortError;

    /// A real-looking embedder: a text's vector is a one-hot of its length, counted.
    #[derive(Debug, Default)]
    struct Counting(std::sync::atomic::AtomicUsize);

    #[async_trait]
    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            "counting"
        }
        fn dimension(&self) -> usize {
            384
        }
        fn max_tokens(&self) -> usize {
            256
        }
        fn token_spans(&self, _: &str) -> PortResult<Vec<Range<usize>>> {
            Err(PortError::invalid_input("not used"))
        }
        async fn embed(&self, texts: &[String]) -> PortResult<Vec<Vec<f32>>> {
            self.0
                .fetch_add(texts.len(), std::sync::atomic::Ordering::Relaxed);
            Ok(texts
                .iter()
                .map(|t| {
                    let mut v = vec![0.0; 384];
                    v[t.len() % 384] = 1.0;
                    v
                })
                .collect())
        }
    }

    fn texts(range: Range<usize>) -> Vec<String> {
        range.map(|i| format!("text number {i}")).collect()
    }

    #[tokio::test]
    async fn the_sample_is_real_and_the_rest_near_it_deterministically() {
        let inner = Arc::new(Counting::default());
        let sampled = SampledVectors::new(inner.clone(), 3);
        let first = sampled.embed(&texts(0..2)).await.unwrap();
        let second = sampled.embed(&texts(2..6)).await.unwrap();
        // Three texts embedded for real, across the two batches; the others are not.
        assert_eq!(inner.0.load(std::sync::atomic::Ordering::Relaxed), 3);
        assert_eq!(first[0][13], 1.0);
        assert_eq!(second[0].iter().filter(|x| **x == 1.0).count(), 1);
        let bank = sampled.bank.lock().await.clone();
        for v in &second[1..] {
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "{norm}");
            let best = bank
                .iter()
                .map(|b| b.iter().zip(v).map(|(x, y)| x * y).sum::<f32>())
                .fold(f32::MIN, f32::max);
            assert!(
                (0.75..0.95).contains(&best),
                "cosine with its sample {best}"
            );
        }
        // The same text gets the same vector, from another instance too.
        let again = SampledVectors::new(Arc::new(Counting::default()), 3);
        again.embed(&texts(0..3)).await.unwrap();
        assert_eq!(again.embed(&texts(3..6)).await.unwrap(), second[1..]);
        assert_eq!(sampled.model_id(), "counting");
    }
}
