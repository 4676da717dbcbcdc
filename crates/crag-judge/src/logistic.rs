//! L2-regularised logistic regression over standardised features, fitted by Newton's method
//! (iteratively reweighted least squares) with step halving: deterministic, exact to the
//! tolerance, no randomness.

use serde::{Deserialize, Serialize};

use crate::error::{EvaluationError, Result};

/// Standard deviations below this count as zero: the feature was constant in training.
const MIN_STD: f64 = 1e-12;

/// Options of [`fit_logistic`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitOptions {
    /// Strength of the L2 penalty `l2 / 2 * |w|^2` on the weights of the standardised
    /// features (the bias is not penalised); must be positive, which also keeps the fit finite
    /// on separable data.
    pub l2: f64,
    /// Newton steps at most.
    pub max_iterations: usize,
    /// The fit stops when no coefficient moves by more than this.
    pub tolerance: f64,
}

impl Default for FitOptions {
    fn default() -> Self {
        Self {
            l2: 1.0,
            max_iterations: 100,
            tolerance: 1e-9,
        }
    }
}

/// One feature of a [`LogisticModel`]: how it is standardised and its weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureWeight {
    /// Feature name.
    pub name: String,
    /// Mean of the feature in training (present values only); absent values are replaced by it.
    pub mean: f64,
    /// Population standard deviation in training; 0 when the feature was constant there, in
    /// which case it carries no information and its weight is 0.
    pub std: f64,
    /// Weight of the standardised feature `(x - mean) / std`.
    pub weight: f64,
}

/// A logistic model over named features:
/// `p = sigmoid(bias + sum_j weight_j * (x_j - mean_j) / std_j)`, an absent `x_j` counting as
/// `mean_j` (no contribution).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogisticModel {
    /// Intercept.
    pub bias: f64,
    /// The features, in the order the feature extractor produces them.
    pub features: Vec<FeatureWeight>,
}

impl LogisticModel {
    /// Checks that the model's features are exactly `expected`, in order, and that every number
    /// is finite (standard deviations non-negative). `what` names the model in errors.
    pub fn check(&self, what: &str, expected: &[&str]) -> Result<()> {
        let names: Vec<&str> = self.features.iter().map(|f| f.name.as_str()).collect();
        if names != expected {
            let missing: Vec<&str> = expected
                .iter()
                .copied()
                .filter(|e| !names.contains(e))
                .collect();
            let unknown: Vec<&str> = names
                .iter()
                .copied()
                .filter(|n| !expected.contains(n))
                .collect();
            return Err(EvaluationError::InvalidCalibration(format!(
                "{what}: features differ from what this version computes (missing: [{}]; \
                 unknown: [{}]; expected, in order: [{}]); fit it again with `crag calibrate`",
                missing.join(", "),
                unknown.join(", "),
                expected.join(", ")
            )));
        }
        if !self.bias.is_finite() {
            return Err(EvaluationError::InvalidCalibration(format!(
                "{what}: bias is not finite"
            )));
        }
        for f in &self.features {
            if !f.mean.is_finite() || !f.weight.is_finite() || !f.std.is_finite() || f.std < 0.0 {
                return Err(EvaluationError::InvalidCalibration(format!(
                    "{what}: feature `{}` has a non-finite mean, weight or std, or a negative std",
                    f.name
                )));
            }
        }
        Ok(())
    }

    /// Returns each feature's contribution to the logit, `weight * (x - mean) / std` (0 for an
    /// absent value or a feature that was constant in training).
    pub fn contributions(&self, row: &[Option<f64>]) -> Vec<f64> {
        self.features
            .iter()
            .zip(standardize(&self.features, row))
            .map(|(f, z)| f.weight * z)
            .collect()
    }

    /// Returns the logit (log-odds) of `row`.
    pub fn logit(&self, row: &[Option<f64>]) -> f64 {
        self.bias + self.contributions(row).iter().sum::<f64>()
    }

    /// Returns the probability of the positive class for `row`.
    pub fn probability(&self, row: &[Option<f64>]) -> f64 {
        sigmoid(self.logit(row))
    }
}

/// The logistic function, without overflow.
pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// `ln(1 + e^x)` without overflow.
fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// Standardises `row` against `features`: `(x - mean) / std`, 0 when absent, non-finite or
/// constant in training. Values beyond the row's length count as absent.
fn standardize(features: &[FeatureWeight], row: &[Option<f64>]) -> Vec<f64> {
    features
        .iter()
        .enumerate()
        .map(|(j, f)| match row.get(j).copied().flatten() {
            Some(x) if x.is_finite() && f.std > MIN_STD => (x - f.mean) / f.std,
            _ => 0.0,
        })
        .collect()
}

/// Fits `P(label) = sigmoid(bias + w . z)` on `rows` (one value per name of `names`, `None`
/// where absent), with `z` the features standardised by their training mean and standard
/// deviation (absent values take the mean). Minimises the negative log-likelihood plus
/// `l2 / 2 * |w|^2` by Newton steps with step halving; the result depends on the data only.
///
/// Fails when there are no rows, a row has the wrong length or a non-finite value, only one
/// class is present, or `l2` is not positive.
pub fn fit_logistic(
    names: &[&str],
    rows: &[Vec<Option<f64>>],
    labels: &[bool],
    options: &FitOptions,
) -> Result<LogisticModel> {
    let positives = check_samples(names, rows, labels, options)?;
    let d = names.len();
    let mut features = standardisation(names, rows);
    // Design matrix with a leading column of ones for the bias.
    let design: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| {
            let mut z = Vec::with_capacity(d + 1);
            z.push(1.0);
            z.extend(standardize(&features, r));
            z
        })
        .collect();
    let y: Vec<f64> = labels.iter().map(|&l| f64::from(u8::from(l))).collect();

    let prior = positives as f64 / labels.len() as f64;
    let mut theta = vec![0.0; d + 1];
    theta[0] = (prior / (1.0 - prior)).ln();
    let mut loss = objective(&design, &y, &theta, options.l2);
    for _ in 0..options.max_iterations {
        let (gradient, hessian) = derivatives(&design, &y, &theta, options.l2);
        let Some(step) = solve(hessian, &gradient) else {
            break;
        };
        let mut scale = 1.0;
        let mut accepted = false;
        for _ in 0..40 {
            let candidate: Vec<f64> = theta
                .iter()
                .zip(&step)
                .map(|(t, s)| t - scale * s)
                .collect();
            let candidate_loss = objective(&design, &y, &candidate, options.l2);
            if candidate_loss <= loss {
                let moved = theta
                    .iter()
                    .zip(&candidate)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max);
                theta = candidate;
                loss = candidate_loss;
                accepted = moved > options.tolerance;
                break;
            }
            scale /= 2.0;
        }
        if !accepted {
            break;
        }
    }
    for (f, w) in features.iter_mut().zip(&theta[1..]) {
        f.weight = if f.std > 0.0 { *w } else { 0.0 };
    }
    Ok(LogisticModel {
        bias: theta[0],
        features,
    })
}

/// Checks [`fit_logistic`]'s input (see its errors); returns the number of positive labels.
fn check_samples(
    names: &[&str],
    rows: &[Vec<Option<f64>>],
    labels: &[bool],
    options: &FitOptions,
) -> Result<usize> {
    if rows.len() != labels.len() {
        return Err(EvaluationError::Fit(format!(
            "{} rows but {} labels",
            rows.len(),
            labels.len()
        )));
    }
    let positives = labels.iter().filter(|&&l| l).count();
    if positives == 0 || positives == labels.len() {
        return Err(EvaluationError::Fit(format!(
            "both classes are needed; {positives} of {} samples are positive",
            labels.len()
        )));
    }
    if !(options.l2.is_finite() && options.l2 > 0.0) {
        return Err(EvaluationError::Fit(format!(
            "l2 must be a positive number, got {}",
            options.l2
        )));
    }
    let d = names.len();
    for (i, row) in rows.iter().enumerate() {
        if row.len() != d {
            return Err(EvaluationError::Fit(format!(
                "sample {i} has {} features, expected {d}",
                row.len()
            )));
        }
        if let Some(j) = row.iter().position(|x| x.is_some_and(|x| !x.is_finite())) {
            return Err(EvaluationError::Fit(format!(
                "sample {i}: feature `{}` is not finite",
                names[j]
            )));
        }
    }
    Ok(positives)
}

/// Each feature's training mean and standard deviation over the rows where it is present (a
/// deviation under `MIN_STD` counts as 0), with a zero weight.
fn standardisation(names: &[&str], rows: &[Vec<Option<f64>>]) -> Vec<FeatureWeight> {
    (0..names.len())
        .map(|j| {
            let present: Vec<f64> = rows.iter().filter_map(|r| r[j]).collect();
            let (mean, std) = if present.is_empty() {
                (0.0, 0.0)
            } else {
                let n = present.len() as f64;
                let mean = present.iter().sum::<f64>() / n;
                let var = present.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
                (mean, var.sqrt())
            };
            FeatureWeight {
                name: names[j].to_owned(),
                mean,
                std: if std > MIN_STD { std } else { 0.0 },
                weight: 0.0,
            }
        })
        .collect()
}

/// Negative log-likelihood plus the L2 penalty on the weights (not the bias).
fn objective(design: &[Vec<f64>], y: &[f64], theta: &[f64], l2: f64) -> f64 {
    let nll: f64 = design
        .iter()
        .zip(y)
        .map(|(z, &y)| {
            let eta = dot(z, theta);
            softplus(eta) - y * eta
        })
        .sum();
    nll + 0.5 * l2 * theta[1..].iter().map(|w| w * w).sum::<f64>()
}

/// Gradient and Hessian of [`objective`].
fn derivatives(
    design: &[Vec<f64>],
    y: &[f64],
    theta: &[f64],
    l2: f64,
) -> (Vec<f64>, Vec<Vec<f64>>) {
    let k = theta.len();
    let mut gradient = vec![0.0; k];
    let mut hessian = vec![vec![0.0; k]; k];
    for (z, &y) in design.iter().zip(y) {
        let p = sigmoid(dot(z, theta));
        let w = p * (1.0 - p);
        for ((g, row), &za) in gradient.iter_mut().zip(hessian.iter_mut()).zip(z) {
            *g += (p - y) * za;
            for (h, &zb) in row.iter_mut().zip(z) {
                *h += w * za * zb;
            }
        }
    }
    for (a, (g, row)) in gradient
        .iter_mut()
        .zip(hessian.iter_mut())
        .enumerate()
        .skip(1)
    {
        *g += l2 * theta[a];
        row[a] += l2;
    }
    (gradient, hessian)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Solves `a x = b` by Gaussian elimination with partial pivoting; `None` when `a` is
/// singular.
fn solve(mut a: Vec<Vec<f64>>, b: &[f64]) -> Option<Vec<f64>> {
    let n = b.len();
    let mut b = b.to_vec();
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-300 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        for row in col + 1..n {
            let (top, bottom) = a.split_at_mut(row);
            let (pivot_row, target) = (&top[col], &mut bottom[0]);
            let factor = target[col] / pivot_row[col];
            if factor != 0.0 {
                for (t, p) in target[col..].iter_mut().zip(&pivot_row[col..]) {
                    *t -= factor * p;
                }
                b[row] -= factor * b[col];
            }
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let rest: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - rest) / a[row][row];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests;
