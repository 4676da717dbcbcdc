//! Bearer-token authentication shared by the HTTP and gRPC APIs.

use std::fmt;

use crate::Config;
use anyhow::Result;

/// The accepted bearer tokens, kept as SHA-256 digests and compared in constant time.
#[derive(Clone, Default)]
pub struct TokenSet {
    digests: Vec<[u8; 32]>,
}

impl fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenSet({} tokens)", self.digests.len())
    }
}

impl TokenSet {
    /// The tokens the configuration accepts: `auth.tokens` plus those in `$auth.tokens_env`.
    pub fn from_config(config: &Config) -> Result<Self> {
        Ok(Self::new(&config.api_tokens()?))
    }

    /// A set holding `tokens`; empty: authentication is off.
    pub fn new(tokens: &[String]) -> Self {
        Self {
            digests: tokens.iter().map(|t| digest(t.as_bytes())).collect(),
        }
    }

    /// Whether callers must present a token.
    pub fn is_enabled(&self) -> bool {
        !self.digests.is_empty()
    }

    /// Whether `presented` is one of the tokens. Digests of equal length are compared with
    /// `subtle`, and every stored digest is compared, so timing reveals neither the token's
    /// length nor which one matched.
    pub fn verify(&self, presented: &str) -> bool {
        use subtle::ConstantTimeEq;
        let d = digest(presented.as_bytes());
        self.digests
            .iter()
            .fold(subtle::Choice::from(0), |acc, stored| {
                acc | stored.ct_eq(&d)
            })
            .into()
    }

    /// Whether an `Authorization` header value (`Bearer <token>`) is accepted; always true
    /// when authentication is off.
    pub fn check_header(&self, header: Option<&[u8]>) -> bool {
        if !self.is_enabled() {
            return true;
        }
        let Some(value) = header.and_then(|h| std::str::from_utf8(h).ok()) else {
            return false;
        };
        let Some((scheme, token)) = value.split_once(' ') else {
            return false;
        };
        scheme.eq_ignore_ascii_case("bearer") && self.verify(token.trim())
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

#[cfg(test)]
mod token_tests {
    use super::*;

    #[test]
    fn tokens_are_checked() {
        let off = TokenSet::new(&[]);
        assert!(off.check_header(None));
        let set = TokenSet::new(&["0123456789abcdef".into(), "fedcba9876543210".into()]);
        assert!(set.check_header(Some(b"Bearer 0123456789abcdef")));
        assert!(set.check_header(Some(b"bearer fedcba9876543210")));
        assert!(!set.check_header(None));
        assert!(!set.check_header(Some(b"Bearer 0123456789abcdeg")));
        assert!(!set.check_header(Some(b"0123456789abcdef")));
        assert!(!set.check_header(Some(b"Basic 0123456789abcdef")));
        assert!(!set.check_header(Some(b"Bearer \xff\xfe")));
        assert!(!format!("{set:?}").contains("0123"));
    }
}
