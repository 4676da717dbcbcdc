//! The fusion a caller may ask for one query (`fusion`, `keywordWeight`, `rrfK`): how that
//! query's retrievals combine the BM25 and vector legs, instead of `[retrieval] fusion`.

use crag_engine::{Fusion, DEFAULT_KEYWORD_WEIGHT, RRF_K};

use super::Invalid;

/// The largest RRF constant accepted (far past any useful value; keeps the sums finite).
const MAX_RRF_K: f64 = 1_000_000.0;

/// A query's fusion as the caller sent it; all unset: the configured fusion.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FusionParams {
    /// `convex` or `rrf`; unset: the method the other field implies, else the configured one.
    pub method: Option<String>,
    /// The BM25 leg's weight in the convex fusion, in [0, 1]; default 0.5.
    pub keyword_weight: Option<f64>,
    /// The RRF constant, above 0; default 60.
    pub rrf_k: Option<f64>,
}

impl FusionParams {
    /// The fusion asked for: `None` when nothing was, or an [`Invalid`] naming the field.
    pub fn resolve(&self) -> Result<Option<Fusion>, Invalid> {
        let method =
            match self.method.as_deref().map(str::trim) {
                Some(m) if !m.is_empty() => m,
                _ => match (self.keyword_weight, self.rrf_k) {
                    (None, None) => return Ok(None),
                    (Some(_), None) => "convex",
                    (None, Some(_)) => "rrf",
                    (Some(_), Some(_)) => return Err(Invalid(
                        "keywordWeight (convex fusion) and rrfK (rrf fusion) exclude each other"
                            .into(),
                    )),
                },
            };
        match method {
            "convex" => {
                if self.rrf_k.is_some() {
                    return Err(Invalid("rrfK applies to fusion \"rrf\" only".into()));
                }
                let w = self
                    .keyword_weight
                    .unwrap_or(f64::from(DEFAULT_KEYWORD_WEIGHT));
                if !(0.0..=1.0).contains(&w) {
                    return Err(Invalid(format!(
                        "keywordWeight must be within [0, 1], got {w}"
                    )));
                }
                Ok(Some(Fusion::Convex {
                    keyword_weight: w as f32,
                }))
            }
            "rrf" => {
                if self.keyword_weight.is_some() {
                    return Err(Invalid(
                        "keywordWeight applies to fusion \"convex\" only".into(),
                    ));
                }
                let k = self.rrf_k.unwrap_or(f64::from(RRF_K));
                if !(k > 0.0 && k <= MAX_RRF_K) {
                    return Err(Invalid(format!(
                        "rrfK must be above 0 and at most {MAX_RRF_K}, got {k}"
                    )));
                }
                Ok(Some(Fusion::Rrf { k: k as f32 }))
            }
            other => Err(Invalid(format!(
                "fusion must be \"convex\" or \"rrf\", got `{}`",
                other.escape_debug()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(method: Option<&str>, w: Option<f64>, k: Option<f64>) -> FusionParams {
        FusionParams {
            method: method.map(str::to_owned),
            keyword_weight: w,
            rrf_k: k,
        }
    }

    #[test]
    fn fusions_resolve_or_name_the_field() {
        assert_eq!(params(None, None, None).resolve().unwrap(), None);
        assert_eq!(params(Some(" "), None, None).resolve().unwrap(), None);
        assert_eq!(
            params(Some("convex"), None, None).resolve().unwrap(),
            Some(Fusion::Convex {
                keyword_weight: DEFAULT_KEYWORD_WEIGHT
            })
        );
        assert_eq!(
            params(None, Some(0.25), None).resolve().unwrap(),
            Some(Fusion::Convex {
                keyword_weight: 0.25
            })
        );
        assert_eq!(
            params(Some("rrf"), None, None).resolve().unwrap(),
            Some(Fusion::Rrf { k: RRF_K })
        );
        assert_eq!(
            params(None, None, Some(10.0)).resolve().unwrap(),
            Some(Fusion::Rrf { k: 10.0 })
        );
        for (p, field) in [
            (params(Some("max"), None, None), "fusion"),
            (params(None, Some(1.5), None), "keywordWeight"),
            (params(None, Some(f64::NAN), None), "keywordWeight"),
            (params(None, None, Some(0.0)), "rrfK"),
            (params(None, None, Some(f64::INFINITY)), "rrfK"),
            (params(Some("rrf"), Some(0.5), None), "keywordWeight"),
            (params(Some("convex"), None, Some(60.0)), "rrfK"),
            (params(None, Some(0.5), Some(60.0)), "keywordWeight"),
        ] {
            let e = p.resolve().unwrap_err();
            assert!(e.0.contains(field), "{p:?}: {e}");
        }
    }
}
