//! Eight-bit codes of the in-memory copy's rows: the first pass of an exact scan.
//!
//! Each dimension's values are mapped linearly from their range over the rows onto 0..=255
//! (scalar quantisation, as LanceDB's SQ index does), a quarter of the `f32` rows' bytes.
//! A query is mapped the same way after folding in each dimension's step, so that the dot
//! product of two code rows (Lance's `u8` kernel: AVX-512 VNNI or AVX2 where the CPU has
//! them) plus two per-row terms estimates the `f32` dot product, and the rounding of both
//! codings bounds how far that estimate can be from it ([`ErrorBound`]). The scan scores
//! again exactly only the rows whose bounds reach the `k`-th best lower bound: what it
//! returns is the exact scan's.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use lance_linalg::distance::dot_u8::dot_u8_u64;

/// Codes per dimension.
const LEVELS: f32 = 255.0;

/// How far [`Codes::estimate`]'s estimates can be from the exact dot products, for one
/// query ([`Codes::bound`] of a row), with a little room for the rounding of `f32`
/// arithmetic.
///
/// A row value is `low + step * code + e`, and the query's weights `w = q * step` are coded
/// in turn, `w = w_low + w_step * code_w + f`. The estimate adds back `sum(f * mean code)`
/// over the dimensions, so what it misses is `sum(q * e) + sum(f * (code - mean code))`, at
/// most `|q| |e| + |f| |code - mean code|` (Cauchy-Schwarz): `|e|` and `|code - mean code|`
/// are kept for each row when it is coded, `|q|` and `|f|` are the query's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ErrorBound {
    query_norm: f32,
    weight_error_norm: f32,
    /// What casting the codes' `u64` dot product to `f32` can lose, times `w_step`.
    cast_room: f32,
}

/// Relative and absolute room added to an [`ErrorBound`] for `f32` rounding (the estimate's
/// and the exact score's sums of 384 products).
const ROUNDING_ROOM: (f32, f32) = (1e-3, 1e-5);

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
    /// Per dimension, its mean code over the rows.
    mean_codes: Vec<f32>,
    /// Per row, the norm of what its codes miss of its values (`|e|`).
    residual_norms: Vec<f32>,
    /// Per row, the norm of its codes less the mean codes.
    spread_norms: Vec<f32>,
}

impl Codes {
    /// The codes of row-major `rows` of `dimension` values (a dimension of 0 holds no row),
    /// in the order of `order` when given (code row `i` holds row `order[i]`, every row
    /// once), else in row order.
    pub(crate) fn new(rows: &[f32], dimension: usize, order: Option<&[u32]>) -> Self {
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
        let width = dimension.max(1);
        let mut codes = Vec::with_capacity(rows.len());
        let mut sums = Vec::with_capacity(rows.len() / width);
        let mut residual_norms = Vec::with_capacity(rows.len() / width);
        let count = rows.len() / width;
        let sequence: Box<dyn Iterator<Item = usize>> = match order {
            Some(order) => Box::new(order.iter().map(|&i| i as usize)),
            None => Box::new(0..count),
        };
        for row in sequence.map(|i| &rows[i * width..(i + 1) * width]) {
            let start = codes.len();
            codes.extend(
                row.iter()
                    .zip(&low)
                    .zip(&step)
                    .map(|((x, l), s)| code(*x, *l, *s)),
            );
            let coded = &codes[start..];
            sums.push(coded.iter().map(|&c| f32::from(c)).sum());
            let residual: f32 = row
                .iter()
                .zip(coded)
                .zip(low.iter().zip(&step))
                .map(|((x, &c), (l, s))| (x - (l + s * f32::from(c))).powi(2))
                .sum();
            residual_norms.push(residual.sqrt());
        }
        let count = sums.len().max(1) as f32;
        let mut mean_codes = vec![0.0f32; dimension];
        for row in codes.chunks_exact(width) {
            for (m, &c) in mean_codes.iter_mut().zip(row) {
                *m += f32::from(c);
            }
        }
        mean_codes.iter_mut().for_each(|m| *m /= count);
        let spread_norms = codes
            .chunks_exact(width)
            .map(|row| {
                row.iter()
                    .zip(&mean_codes)
                    .map(|(&c, m)| (f32::from(c) - m).powi(2))
                    .sum::<f32>()
                    .sqrt()
            })
            .collect();
        Self {
            dimension,
            low,
            step,
            codes,
            sums,
            mean_codes,
            residual_norms,
            spread_norms,
        }
    }

    /// `query` coded for estimates against these codes. A query of another length estimates
    /// zeros, unbounded.
    fn code_query(&self, query: &[f32]) -> CodedQuery {
        if self.dimension == 0 || query.len() != self.dimension {
            return CodedQuery {
                base: 0.0,
                w_low: 0.0,
                w_step: 0.0,
                coded: Vec::new(),
                bound: ErrorBound {
                    query_norm: f32::INFINITY,
                    weight_error_norm: f32::INFINITY,
                    cast_room: 0.0,
                },
            };
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
        // What the coded weights miss of the weights, and its part common to all rows.
        let weight_errors: Vec<f32> = weights
            .iter()
            .zip(&coded)
            .map(|(w, &c)| w - (w_low + w_step * f32::from(c)))
            .collect();
        let base = base
            + weight_errors
                .iter()
                .zip(&self.mean_codes)
                .map(|(f, m)| f * m)
                .sum::<f32>();
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        // The largest code dot product, and an `f32`'s relative rounding (2^-24).
        let largest = LEVELS * LEVELS * self.dimension as f32;
        CodedQuery {
            base,
            w_low,
            w_step,
            coded,
            bound: ErrorBound {
                query_norm: norm(query),
                weight_error_norm: norm(&weight_errors),
                cast_room: w_step * largest * f32::EPSILON / 2.0,
            },
        }
    }

    /// The estimate of code row `row`'s dot product with the coded query.
    fn estimate(&self, query: &CodedQuery, row: usize) -> f32 {
        if query.coded.is_empty() {
            return 0.0;
        }
        let codes = &self.codes[row * self.dimension..(row + 1) * self.dimension];
        // Exact below 2^24, where every dimension under 258 lands.
        let dot = dot_u8_u64(&query.coded, codes) as f32;
        query.base + query.w_low * self.sums[row] + query.w_step * dot
    }

    /// Estimates of `query`'s dot product with every code row, in code order, written to
    /// `out`; returns how far each can be from the exact one ([`Codes::bound`]). A query of
    /// another length estimates zeros, unbounded.
    #[cfg(test)]
    pub(crate) fn dots_into(&self, query: &[f32], out: &mut Vec<f32>) -> ErrorBound {
        let coded = self.code_query(query);
        out.clear();
        out.extend((0..self.sums.len()).map(|row| self.estimate(&coded, row)));
        coded.bound
    }

    /// The code rows among `rows` (ascending, `kept` ones) whose cosine with `query` can be
    /// among the `k` best, from the estimates and their bounds (`inverse_norms`: `1 / |row|`
    /// of each code row): the `k` highest lower bounds are reached by `k` rows, so a row whose
    /// upper bound is below the `k`-th of them cannot be among the best `k`, and every other
    /// row is a candidate.
    pub(crate) fn candidates(
        &self,
        query: &[f32],
        k: usize,
        inverse_norms: &[f32],
        rows: impl Iterator<Item = usize>,
        kept: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        let coded = self.code_query(query);
        // The `k` highest lower bounds so far, the lowest of them on top: a row whose upper
        // bound is below it is out, as that floor only rises. One pass, and no copy of every
        // row's bounds (a million rows: 16 MiB, then a selection over them).
        let mut highest: BinaryHeap<Reverse<Lower>> = BinaryHeap::with_capacity(k + 1);
        let mut found: Vec<(f32, usize)> = Vec::new();
        for i in rows {
            if !kept(i) {
                continue;
            }
            let inverse = inverse_norms[i];
            let dot = self.estimate(&coded, i);
            let (cosine, off) = (dot * inverse, self.bound(coded.bound, i) * inverse);
            let (lower, upper) = (cosine - off, cosine + off);
            if highest.len() < k {
                highest.push(Reverse(Lower(lower)));
            } else if let Some(mut floor) = highest.peek_mut() {
                if upper < floor.0 .0 {
                    continue;
                }
                if lower > floor.0 .0 {
                    *floor = Reverse(Lower(lower));
                }
            }
            found.push((upper, i));
        }
        if let Some(floor) = highest.peek().filter(|_| highest.len() == k) {
            let floor = floor.0 .0;
            found.retain(|r| r.0 >= floor);
        }
        found.into_iter().map(|(_, i)| i).collect()
    }

    /// How far row `row`'s estimate under `bound` can be from its exact dot product.
    pub(crate) fn bound(&self, bound: ErrorBound, row: usize) -> f32 {
        match (self.residual_norms.get(row), self.spread_norms.get(row)) {
            _ if !bound.query_norm.is_finite() => f32::INFINITY,
            (Some(residual), Some(spread)) => {
                let b = bound.query_norm * residual + bound.weight_error_norm * spread;
                b * (1.0 + ROUNDING_ROOM.0) + bound.cast_room + ROUNDING_ROOM.1
            }
            _ => f32::INFINITY,
        }
    }
}

/// A query coded for [`Codes::estimate`].
#[derive(Debug)]
struct CodedQuery {
    /// What every row's estimate starts from.
    base: f32,
    /// The lowest weight, times a row's sum of codes.
    w_low: f32,
    /// The weights' step, times a row's code dot product.
    w_step: f32,
    /// The coded weights (empty: a query of another length).
    coded: Vec<u8>,
    bound: ErrorBound,
}

/// A lower bound of a row's cosine, ordered by [`f32::total_cmp`] for a heap.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Lower(f32);

impl Eq for Lower {}

impl PartialOrd for Lower {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Lower {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
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
        let codes = Codes::new(&rows, dimension, None);
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
    fn every_estimate_is_within_its_bound_and_the_bound_is_tight_enough_to_prune() {
        let dimension = 384;
        let rows = values(500 * dimension, 13);
        let codes = Codes::new(&rows, dimension, None);
        let mut estimates = Vec::new();
        let mut widest = 0.0f32;
        for seed in [17, 19, 23] {
            let query = values(dimension, seed);
            let bound = codes.dots_into(&query, &mut estimates);
            let truth = exact(&query, &rows, dimension);
            for (row, (e, t)) in estimates.iter().zip(&truth).enumerate() {
                let b = codes.bound(bound, row);
                assert!(
                    (e - t).abs() <= b,
                    "row {row}: estimate {e}, exact {t}, bound {b}"
                );
                widest = widest.max(b);
            }
            // The spread of the exact products is far wider than the bound: it prunes.
            let (lo, hi) = truth
                .iter()
                .fold((f32::MAX, f32::MIN), |(l, h), &t| (l.min(t), h.max(t)));
            assert!(
                widest < (hi - lo) / 4.0,
                "bound {widest}, spread {}",
                hi - lo
            );
        }
    }

    #[test]
    fn constant_dimensions_and_a_constant_query_are_estimated_exactly() {
        // Every row holds 1.0 in the first dimension; the query weighs both dimensions alike.
        let rows = [1.0, 0.0, 1.0, 0.5, 1.0, 1.0];
        let codes = Codes::new(&rows, 2, None);
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
        let codes = Codes::new(&[1.0, 2.0, 3.0, 4.0], 2, None);
        let mut estimates = vec![9.0];
        let bound = codes.dots_into(&[1.0], &mut estimates);
        assert_eq!(estimates, [0.0, 0.0]);
        assert_eq!(codes.bound(bound, 0), f32::INFINITY);
    }
}
