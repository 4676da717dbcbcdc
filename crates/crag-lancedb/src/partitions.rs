//! Partitions of a large in-memory copy: k-means centroids over its rows, so that a search
//! scans the codes of the few partitions nearest the query instead of every row (an IVF
//! index in memory, as LanceDB's is on disk).
//!
//! The centroids are trained by spherical k-means on a sample taken at a regular stride over
//! the rows (deterministic: the same rows make the same partitions), and every row is
//! assigned to its centroid of highest dot product; the codes are then laid out partition by
//! partition, so a probed partition is one contiguous run of code rows. Both steps score
//! blocks of rows against all centroids as one matrix product (`ndarray`'s blocked `sgemm`):
//! Lance's k-means scores one row at a time against every centroid, which took about 80 s
//! for a million rows and 1,000 partitions on the 2-core benchmark machine. What a partitioned
//! search returns is the exact scan's over the rows of the partitions it visits: a true
//! neighbour in a partition it skips is missed (docs/benchmarks.md has the recall).

use std::ops::Range;
use std::time::Instant;

use lance_linalg::distance::dot::Dot;
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2, Axis};

/// Rows of the training sample per partition.
const SAMPLE_PER_PARTITION: usize = 32;

/// Lloyd iterations of the training.
const TRAINING_ITERATIONS: u32 = 10;

/// Rows scored against every centroid in one matrix product.
const ASSIGN_BLOCK_ROWS: usize = 1_024;

/// When a copy is partitioned, and how many partitions a search visits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryPartitioning {
    /// Copies of at least this many rows are partitioned (0: never).
    pub from_rows: usize,
    /// Partitions a search visits (the nearest centroids first).
    pub probes: usize,
}

/// Default [`MemoryPartitioning::from_rows`].
pub const DEFAULT_PARTITION_FROM_ROWS: usize = 500_000;

/// Default [`MemoryPartitioning::probes`].
pub const DEFAULT_PARTITION_PROBES: usize = 128;

impl Default for MemoryPartitioning {
    fn default() -> Self {
        Self {
            from_rows: DEFAULT_PARTITION_FROM_ROWS,
            probes: DEFAULT_PARTITION_PROBES,
        }
    }
}

impl MemoryPartitioning {
    /// Whether a copy of `rows` rows is partitioned.
    pub(crate) fn applies(&self, rows: usize) -> bool {
        self.from_rows > 0 && rows >= self.from_rows && partition_count(rows) > 1
    }
}

/// Partitions for a copy of `rows` rows: the square root, as LanceDB chooses for its index.
pub(crate) fn partition_count(rows: usize) -> usize {
    (rows as f64).sqrt().round() as usize
}

/// The partitions of a copy: centroids, and its rows in partition order.
#[derive(Debug)]
pub(crate) struct Partitions {
    dimension: usize,
    /// Unit centroids, row-major.
    centroids: Vec<f32>,
    /// Where each partition's rows start in [`Partitions::order`], and where the last ends.
    starts: Vec<usize>,
    /// The copy's row held at each position of the partition order.
    order: Vec<u32>,
}

impl Partitions {
    /// Trains `count` partitions of the row-major `rows` of `dimension` values and assigns
    /// every row to one; an error when the rows are fewer than the partitions.
    pub(crate) fn train(rows: &[f32], dimension: usize, count: usize) -> Result<Self, String> {
        let n = rows.len() / dimension.max(1);
        if dimension == 0 || count == 0 || n < count || n > u32::MAX as usize {
            return Err(format!("cannot make {count} partitions of {n} rows"));
        }
        let started = Instant::now();
        let sample_rows = (count * SAMPLE_PER_PARTITION).min(n);
        let stride = n / sample_rows;
        let mut sample = Vec::with_capacity(sample_rows * dimension);
        for i in (0..n).step_by(stride).take(sample_rows) {
            sample.extend_from_slice(&rows[i * dimension..(i + 1) * dimension]);
        }
        let centroids = spherical_k_means(&sample, dimension, count)?;
        let trained = started.elapsed();
        let membership = nearest_centroids(rows, dimension, &centroids)?;
        tracing::debug!(
            rows = n,
            partitions = count,
            sample_rows,
            training_seconds = trained.as_secs_f64(),
            assigning_seconds = (started.elapsed() - trained).as_secs_f64(),
            "k-means partitions of the vector copy"
        );
        Ok(Self::from_membership(
            dimension,
            centroids,
            count,
            &membership,
        ))
    }

    /// The partitions of rows whose partition is `membership[row]` (each below `count`).
    fn from_membership(
        dimension: usize,
        centroids: Vec<f32>,
        count: usize,
        membership: &[u32],
    ) -> Self {
        let mut starts = vec![0usize; count + 1];
        for &p in membership {
            starts[p as usize + 1] += 1;
        }
        for p in 0..count {
            starts[p + 1] += starts[p];
        }
        let mut next = starts.clone();
        let mut order = vec![0u32; membership.len()];
        for (row, &p) in membership.iter().enumerate() {
            let p = p as usize;
            // `train` keeps the rows below `u32::MAX`.
            order[next[p]] = row as u32;
            next[p] += 1;
        }
        Self {
            dimension,
            centroids,
            starts,
            order,
        }
    }

    /// The copy's rows in partition order: the row at each position.
    pub(crate) fn order(&self) -> &[u32] {
        &self.order
    }

    /// The copy's row at position `position` of the partition order.
    pub(crate) fn row(&self, position: usize) -> usize {
        self.order[position] as usize
    }

    /// How many partitions there are.
    pub(crate) fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// The positions (ranges of the partition order, ascending) of the `probes` partitions
    /// whose centroids are nearest the unit `query`, and of further ones in that order until
    /// they hold at least `rows` rows.
    pub(crate) fn nearest(&self, query: &[f32], probes: usize, rows: usize) -> Vec<Range<usize>> {
        let mut scores = vec![0.0f32; self.len()];
        if query.len() == self.dimension {
            f32::dot_batch_into(query, &self.centroids, self.dimension, &mut scores);
        }
        let mut ranked: Vec<usize> = (0..self.len()).collect();
        ranked.sort_unstable_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
        let mut chosen = Vec::new();
        let mut held = 0;
        for p in ranked {
            if chosen.len() >= probes && held >= rows {
                break;
            }
            let range = self.starts[p]..self.starts[p + 1];
            held += range.len();
            chosen.push(range);
        }
        chosen.sort_unstable_by_key(|r| r.start);
        chosen
    }
}

/// `count` unit centroids of the row-major `sample` by spherical k-means: the centroids start
/// as rows at a regular stride, then each of [`TRAINING_ITERATIONS`] assigns every row to its
/// centroid of highest dot product and moves each centroid to its rows' normalised sum (a
/// centroid left without rows stays where it was).
fn spherical_k_means(sample: &[f32], dimension: usize, count: usize) -> Result<Vec<f32>, String> {
    let n = sample.len() / dimension;
    let mut centroids = Vec::with_capacity(count * dimension);
    for j in 0..count {
        let at = j * n / count * dimension;
        centroids.extend_from_slice(&sample[at..at + dimension]);
    }
    centroids.chunks_exact_mut(dimension).for_each(normalise);
    for _ in 0..TRAINING_ITERATIONS {
        let membership = nearest_centroids(sample, dimension, &centroids)?;
        let mut sums = vec![0.0f32; count * dimension];
        let mut members = vec![0usize; count];
        for (row, &p) in sample.chunks_exact(dimension).zip(&membership) {
            let p = p as usize;
            members[p] += 1;
            for (s, x) in sums[p * dimension..(p + 1) * dimension].iter_mut().zip(row) {
                *s += x;
            }
        }
        for ((centroid, sum), &m) in centroids
            .chunks_exact_mut(dimension)
            .zip(sums.chunks_exact_mut(dimension))
            .zip(&members)
        {
            if m > 0 {
                normalise(sum);
                centroid.copy_from_slice(sum);
            }
        }
    }
    Ok(centroids)
}

/// For each row of the row-major `rows`, its centroid of highest dot product (the first of
/// equals): blocks of rows times the centroids by a blocked matrix product (`ndarray`), the
/// rows split among the machine's cores.
fn nearest_centroids(
    rows: &[f32],
    dimension: usize,
    centroids: &[f32],
) -> Result<Vec<u32>, String> {
    let n = rows.len() / dimension;
    let count = centroids.len() / dimension;
    let centroids = ArrayView2::from_shape((count, dimension), centroids)
        .map_err(|e| format!("centroids: {e}"))?;
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .clamp(1, n.div_ceil(ASSIGN_BLOCK_ROWS).max(1));
    let per_thread = n.div_ceil(threads).max(1);
    let mut membership = vec![0u32; n];
    std::thread::scope(|scope| {
        let workers: Vec<_> = rows
            .chunks(per_thread * dimension)
            .zip(membership.chunks_mut(per_thread))
            .map(|(part, out)| {
                scope.spawn(move || -> Result<(), String> {
                    let mut scores = Array2::<f32>::zeros((ASSIGN_BLOCK_ROWS, count));
                    for (block, out) in part
                        .chunks(ASSIGN_BLOCK_ROWS * dimension)
                        .zip(out.chunks_mut(ASSIGN_BLOCK_ROWS))
                    {
                        let m = block.len() / dimension;
                        let block = ArrayView2::from_shape((m, dimension), block)
                            .map_err(|e| format!("rows: {e}"))?;
                        let (mut scores, _) = scores.view_mut().split_at(Axis(0), m);
                        general_mat_mul(1.0, &block, &centroids.t(), 0.0, &mut scores);
                        for (o, row) in out.iter_mut().zip(scores.rows()) {
                            *o = best(row.iter().copied());
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().map_err(|_| "a k-means worker failed".to_owned())?)
    })?;
    Ok(membership)
}

/// The position of the highest value (the first of equals; NaN never wins).
fn best(values: impl Iterator<Item = f32>) -> u32 {
    let mut top = (0u32, f32::NEG_INFINITY);
    for (i, v) in (0u32..).zip(values) {
        if v > top.1 {
            top = (i, v);
        }
    }
    top.0
}

/// `v` scaled to unit length in place (unchanged when all zeros).
fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::tests::values;

    /// `per` rows around each of `centres` unit-ish centres, interleaved.
    fn clustered(centres: usize, per: usize, dimension: usize) -> Vec<f32> {
        let middles = values(centres * dimension, 3);
        let noise = values(centres * per * dimension, 5);
        (0..centres * per)
            .flat_map(|i| {
                let c = &middles[(i % centres) * dimension..][..dimension];
                let n = &noise[i * dimension..][..dimension];
                c.iter()
                    .zip(n)
                    .map(|(c, n)| c + 0.05 * n)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn partitions_follow_the_clusters_and_every_row_is_placed_once() {
        let (centres, per, dimension) = (8, 100, 16);
        let rows = clustered(centres, per, dimension);
        let p = Partitions::train(&rows, dimension, 2 * centres).unwrap();
        assert_eq!(p.len(), 2 * centres);
        let mut seen: Vec<u32> = p.order().to_vec();
        seen.sort_unstable();
        assert_eq!(seen, (0..(centres * per) as u32).collect::<Vec<_>>());
        // k-means may merge two clusters from a poor start; nearly every row still shares
        // its partition with its own cluster's rows mostly.
        let mut placed_well = 0;
        for part in 0..p.len() {
            let mut counts = vec![0usize; centres];
            for at in p.starts[part]..p.starts[part + 1] {
                counts[p.row(at) % centres] += 1;
            }
            placed_well += counts.iter().max().copied().unwrap_or(0);
        }
        assert!(placed_well * 10 >= 8 * centres * per, "{placed_well} rows");
    }

    #[test]
    fn every_row_goes_to_its_centroid_of_highest_dot_product() {
        let dimension = 8;
        // More rows than one block, and not a multiple of it: the blocks' and the threads'
        // edges.
        let rows = values((2 * ASSIGN_BLOCK_ROWS + 37) * dimension, 21);
        let centroids = values(5 * dimension, 23);
        let assigned = nearest_centroids(&rows, dimension, &centroids).unwrap();
        assert_eq!(assigned.len(), rows.len() / dimension);
        for (row, &got) in rows.chunks_exact(dimension).zip(&assigned) {
            let dots: Vec<f32> = centroids
                .chunks_exact(dimension)
                .map(|c| c.iter().zip(row).map(|(a, b)| a * b).sum())
                .collect();
            let want = best(dots.iter().copied());
            // The matrix product sums in another order: equal to rounding.
            let (g, w) = (dots[got as usize], dots[want as usize]);
            assert!(
                got == want || (g - w).abs() < 1e-5,
                "{got} ({g}) for {want} ({w})"
            );
        }
    }

    #[test]
    fn the_nearest_partitions_come_first_and_hold_enough_rows() {
        let dimension = 2;
        let centroids = vec![1.0, 0.0, 0.0, 1.0, -1.0, 0.0];
        // Rows 0 and 3 in partition 0, row 1 in 1, row 2 in 2.
        let p = Partitions::from_membership(dimension, centroids, 3, &[0, 1, 2, 0]);
        assert_eq!(p.order(), [0, 3, 1, 2]);
        let one = |range: Range<usize>| vec![range];
        assert_eq!(p.nearest(&[0.0, 1.0], 1, 0), one(2..3));
        assert_eq!(p.nearest(&[0.9, 0.1], 1, 0), one(0..2));
        // Two rows wanted: partition 1 holds one, so the next nearest joins.
        assert_eq!(p.nearest(&[0.1, 0.9], 1, 2), [0..2, 2..3]);
        assert_eq!(p.nearest(&[0.0, 1.0], 5, 0).len(), 3);
    }

    #[test]
    fn too_few_rows_for_the_partitions_is_an_error() {
        assert!(Partitions::train(&values(3 * 4, 1), 4, 5).is_err());
        assert!(Partitions::train(&[], 0, 1).is_err());
    }

    #[test]
    fn large_copies_only_are_partitioned() {
        let p = MemoryPartitioning {
            from_rows: 1_000,
            probes: 4,
        };
        assert!(!p.applies(999));
        assert!(p.applies(1_000));
        let off = MemoryPartitioning { from_rows: 0, ..p };
        assert!(!off.applies(1_000_000));
        assert_eq!(partition_count(1_000_000), 1_000);
    }
}
