//! Small numeric helpers shared by the evaluators, computed in `f64` and NaN-free on finite input.

/// Returns the mean and the population variance of `values`, or `None` when there are none.
pub(crate) fn mean_variance(values: &[f32]) -> Option<(f32, f32)> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    let variance = values
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n;
    Some((mean as f32, variance as f32))
}

/// Clamps `value` into [0, 1], mapping NaN to 0.
pub(crate) fn unit(value: f32) -> f32 {
    if value.is_nan() {
        0.0
    } else {
        value.clamp(0.0, 1.0)
    }
}

/// Returns at most `max_chars` characters of `text`, cut on a character boundary, and whether it
/// was cut.
pub(crate) fn char_prefix(text: &str, max_chars: usize) -> (&str, bool) {
    match text.char_indices().nth(max_chars) {
        Some((byte, _)) => (&text[..byte], true),
        None => (text, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_population_variance() {
        assert_eq!(mean_variance(&[]), None);
        let (mean, variance) = mean_variance(&[1.0, 0.0]).unwrap();
        assert!((mean - 0.5).abs() < 1e-6);
        assert!((variance - 0.25).abs() < 1e-6);
    }

    #[test]
    fn unit_handles_nan_and_infinities() {
        assert_eq!(unit(f32::NAN), 0.0);
        assert_eq!(unit(f32::INFINITY), 1.0);
        assert_eq!(unit(f32::NEG_INFINITY), 0.0);
        assert_eq!(unit(0.25), 0.25);
    }

    #[test]
    fn char_prefix_cuts_on_char_boundaries() {
        assert_eq!(char_prefix("héllo", 2), ("hé", true));
        assert_eq!(char_prefix("hé", 2), ("hé", false));
        assert_eq!(char_prefix("", 0), ("", false));
    }
}
