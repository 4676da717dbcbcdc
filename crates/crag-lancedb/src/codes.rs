//! Eight-bit codes of the in-memory copy's rows: the first pass of an exact scan.
//!
//! Each dimension's values are mapped linearly from their range over the rows onto 0..=255
//! (scalar quantisation, as LanceDB's SQ index does), a quarter of the `f32` rows' bytes.
//! A query is mapped the same way after folding in each dimension's step, so that the dot
//! product of two code rows (Lance's `u8` kernel: AVX-512 VNNI or AVX2 where the CPU has
//! them) plus two per-row terms estimates the `f32` dot product. The scan keeps the best
//! estimates, several times more rows than asked for, and scores those again exactly: the
//! result is the exact scan's unless a row the exact scan would return falls outside them.

use lance_linalg::distance::dot_u8::dot_u8_u64;

/// Codes per dimension.
const LEVELS: f32 = 255.0;

/// The code rows of a matrix and the mapping back to its values.
#[derive(Debug)]
pub(crate) struct Codes {
    dimension: usize,
    /// Per dimension, the lowest value over the rows.
    low: Vec<f32>,
    /// Per dimension, the value between two codes (0 when all rows hold one value).
    step: Vec<f32>,
    /// Row-major codes.
    codes: Vec<u8>,
    /// Per row, the sum of its codes.
    sums: Vec<f32>,
}

impl Codes {
    /// The codes of row-major `rows` of `dimension` values (a dimension of 0 holds no row).
    pub(crate) fn new(rows: &[f32], dimension: usize) -> Self {
        let mut low = vec![f32::INFINITY; dimension];
        let mut high = vec![f32::NEG_INFINITY; dimension];
        for row in rows.chunks_exact(dimension.max(1)) {
            for ((l, h), &x) in low.iter_mut().zip(high.iter_mut()).zip(row) {
                *l = l.min(x);
                *h = h.max(x);
            }
        }
        let step: Vec<f32> = low
            .iter()
            .zip(&high)
            .map(|(l, h)| if h > l { (h - l) / LEVELS } else { 0.0 })
            .collect();
        let mut codes = Vec::with_capacity(rows.len());
        let mut sums = Vec::with_capacity(rows.len() / dimension.max(1));
        for row in rows.chunks_exact(dimension.max(1)) {
            let start = codes.len();
            codes.extend(
                row.iter()
                    .zip(&low)
                    .zip(&step)
                    .map(|((x, l), s)| code(*x, *l, *s)),
            );
            sums.push(codes[start..].iter().map(|&c| f32::from(c)).sum());
        }
        Self {
            dimension,
            low,
            step,
            codes,
            sums,
        }
    }

    /// Estimates of `query`'s dot product with every row, in row order, written to `out`.
    pub(crate) fn dots_into(&self, query: &[f32], out: &mut Vec<f32>) {
        out.clear();
        if self.dimension == 0 || query.len() != self.dimension {
            out.resize(self.sums.len(), 0.0);
            return;
        }
        // q . x = sum(q * low) + sum(w * code) with w = q * step, and w is coded in turn.
        let base: f32 = query.iter().zip(&self.low).map(|(q, l)| q * l).sum();
        let weights: Vec<f32> = query.iter().zip(&self.step).map(|(q, s)| q * s).collect();
        let w_low = weights.iter().copied().fold(f32::INFINITY, f32::min);
        let w_high = weights.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let w_step = if w_high > w_low {
            (w_high - w_low) / LEVELS
        } else {
            0.0
        };
        let coded: Vec<u8> = weights.iter().map(|&w| code(w, w_low, w_step)).collect();
        out.extend(
            self.codes
                .chunks_exact(self.dimension)
                .zip(&self.sums)
                .map(|(row, &sum)| {
                    // Exact below 2^24, where every dimension under 258 lands.
                    let dot = dot_u8_u64(&coded, row) as f32;
                    base + w_low * sum + w_step * dot
                }),
        );
    }
}

/// The code of `x` on the scale from `low` in steps of `step`.
fn code(x: f32, low: f32, step: f32) -> u8 {
    if step > 0.0 {
        // Rounded and clamped to 0..=255, so the cast keeps the value.
        ((x - low) / step).round().clamp(0.0, LEVELS) as u8
    } else {
        0
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Deterministic values in [-0.5, 0.5).
    pub(crate) fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
            })
            .collect()
    }

    fn exact(query: &[f32], rows: &[f32], dimension: usize) -> Vec<f32> {
        rows.chunks_exact(dimension)
            .map(|r| r.iter().zip(query).map(|(a, b)| a * b).sum())
            .collect()
    }

    #[test]
    fn estimates_are_close_to_the_dot_products() {
        let dimension = 48;
        let rows = values(300 * dimension, 7);
        let codes = Codes::new(&rows, dimension);
        let query = values(dimension, 11);
        let mut estimates = Vec::new();
        codes.dots_into(&query, &mut estimates);
        let truth = exact(&query, &rows, dimension);
        assert_eq!(estimates.len(), truth.len());
        let largest = truth.iter().fold(0.0f32, |m, t| m.max(t.abs()));
        for (e, t) in estimates.iter().zip(&truth) {
            assert!((e - t).abs() < 0.02 * largest, "estimate {e} for {t}");
        }
    }

    #[test]
    fn constant_dimensions_and_a_constant_query_are_estimated_exactly() {
        // Every row holds 1.0 in the first dimension; the query weighs both dimensions alike.
        let rows = [1.0, 0.0, 1.0, 0.5, 1.0, 1.0];
        let codes = Codes::new(&rows, 2);
        let mut estimates = Vec::new();
        codes.dots_into(&[2.0, 0.0], &mut estimates);
        assert_eq!(estimates, [2.0, 2.0, 2.0]);
        codes.dots_into(&[1.0, 1.0], &mut estimates);
        for (e, t) in estimates.iter().zip([1.0, 1.5, 2.0]) {
            assert!((e - t).abs() < 5e-3, "estimate {e} for {t}");
        }
    }

    #[test]
    fn a_query_of_another_length_estimates_zeros() {
        let codes = Codes::new(&[1.0, 2.0, 3.0, 4.0], 2);
        let mut estimates = vec![9.0];
        codes.dots_into(&[1.0], &mut estimates);
        assert_eq!(estimates, [0.0, 0.0]);
    }
}
