//! Bearer-token authentication shared by the HTTP and gRPC APIs, and what each token may
//! see and do.

use std::fmt;

use crag_core::MetadataFilter;

use crate::Config;
use crag_config::Result;

/// Who is calling, as its token says: the collections and documents it sees, whether it may
/// write and manage collections. The default (authentication off, or a token of
/// `auth.tokens`) sees everything, writes and manages collections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// A metadata filter ANDed into every retrieval of the caller's requests.
    pub scope: Option<MetadataFilter>,
    /// Ingest and delete are refused.
    pub read_only: bool,
    /// The collections it may use (any other is answered as if it did not exist); `None`:
    /// every one.
    pub collections: Option<Vec<String>>,
    /// Whether it may create and delete (the collections it sees).
    pub admin: bool,
}

impl Default for Caller {
    fn default() -> Self {
        Self {
            scope: None,
            read_only: false,
            collections: None,
            admin: true,
        }
    }
}

impl Caller {
    /// Whether the caller may use the collection `name`.
    pub fn sees(&self, name: &str) -> bool {
        self.collections
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == name))
    }
}

/// The accepted bearer tokens, kept as SHA-256 digests and compared in constant time, each
/// with the [`Caller`] it makes.
#[derive(Clone, Default)]
pub struct TokenSet {
    digests: Vec<[u8; 32]>,
    callers: Vec<Caller>,
    /// Tokens are asked for even while none is accepted (tokens kept in a shared store,
    /// which may have none yet or not be reachable).
    required: bool,
}

impl fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenSet({} tokens)", self.digests.len())
    }
}

impl TokenSet {
    /// The tokens the configuration accepts: `auth.tokens`, those in `$auth.tokens_env`, and
    /// the scoped tokens of `[[auth.scoped]]` with their filters.
    pub fn from_config(config: &Config) -> Result<Self> {
        let mut set = Self::new(&config.api_tokens()?).with_scoped(config)?;
        set.required = config.auth.shared;
        Ok(set)
    }

    /// The set with the scoped tokens of `[[auth.scoped]]` added.
    pub fn with_scoped(self, config: &Config) -> Result<Self> {
        Ok(config
            .scoped_tokens()?
            .into_iter()
            .fold(self, |set, scoped| {
                let caller = Caller {
                    scope: scoped.filter,
                    read_only: !scoped.write,
                    collections: scoped.collections,
                    admin: scoped.admin,
                };
                set.with(&scoped.token, caller)
            }))
    }

    /// A set holding `tokens`, each seeing everything; empty: authentication is off.
    pub fn new(tokens: &[String]) -> Self {
        Self {
            digests: tokens.iter().map(|t| digest(t.as_bytes())).collect(),
            callers: vec![Caller::default(); tokens.len()],
            required: false,
        }
    }

    /// The set with `token` added, making `caller`.
    pub fn with(self, token: &str, caller: Caller) -> Self {
        self.with_digest(digest(token.as_bytes()), caller)
    }

    /// The set with the token whose SHA-256 digest is `digest` added, making `caller` (a
    /// token kept only as its digest).
    pub fn with_digest(mut self, digest: [u8; 32], caller: Caller) -> Self {
        self.digests.push(digest);
        self.callers.push(caller);
        self
    }

    /// Whether callers must present a token.
    pub fn is_enabled(&self) -> bool {
        self.required || !self.digests.is_empty()
    }

    /// The caller `presented` makes, if it is one of the tokens. Digests of equal length are
    /// compared with `subtle`, and every stored digest is compared, so timing reveals neither
    /// the token's length nor which one matched.
    pub fn identify(&self, presented: &str) -> Option<&Caller> {
        use subtle::{ConditionallySelectable, ConstantTimeEq};
        let d = digest(presented.as_bytes());
        let mut found = subtle::Choice::from(0);
        let mut at = 0u64;
        for (i, stored) in self.digests.iter().enumerate() {
            let same = stored.ct_eq(&d);
            at = u64::conditional_select(&at, &(i as u64), same);
            found |= same;
        }
        bool::from(found).then(|| &self.callers[usize::try_from(at).unwrap_or(0)])
    }

    /// Whether `presented` is one of the tokens.
    pub fn verify(&self, presented: &str) -> bool {
        self.identify(presented).is_some()
    }

    /// The caller an `Authorization` header value (`Bearer <token>`) makes; `None` when it is
    /// refused. With authentication off, everyone is the default caller.
    pub fn caller(&self, header: Option<&[u8]>) -> Option<Caller> {
        if !self.is_enabled() {
            return Some(Caller::default());
        }
        let value = header.and_then(|h| std::str::from_utf8(h).ok())?;
        let (scheme, token) = value.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        self.identify(token.trim()).cloned()
    }

    /// Whether an `Authorization` header value is accepted; always true when authentication
    /// is off.
    pub fn check_header(&self, header: Option<&[u8]>) -> bool {
        self.caller(header).is_some()
    }
}

/// The SHA-256 digest a token is kept and compared as.
pub fn digest(bytes: &[u8]) -> [u8; 32] {
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

    #[test]
    fn a_scoped_token_makes_its_caller() {
        let scope = MetadataFilter::from_json(&serde_json::json!({"team": "billing"})).unwrap();
        let billing = Caller {
            scope: Some(scope),
            read_only: true,
            collections: Some(vec!["billing".into()]),
            admin: false,
        };
        assert!(billing.sees("billing") && !billing.sees("default"));
        assert!(Caller::default().sees("anything"));
        let set =
            TokenSet::new(&["0123456789abcdef".into()]).with("billing-token-0123", billing.clone());
        assert_eq!(
            set.caller(Some(b"Bearer billing-token-0123")),
            Some(billing)
        );
        assert_eq!(
            set.caller(Some(b"Bearer 0123456789abcdef")),
            Some(Caller::default())
        );
        assert_eq!(set.caller(Some(b"Bearer billing-token-0124")), None);
        assert_eq!(TokenSet::default().caller(None), Some(Caller::default()));
    }

    #[test]
    fn a_required_set_refuses_everyone_until_it_holds_tokens() {
        let set = TokenSet {
            required: true,
            ..TokenSet::default()
        };
        assert!(set.is_enabled());
        assert_eq!(set.caller(None), None);
        assert_eq!(set.caller(Some(b"Bearer 0123456789abcdef")), None);
        let set = set.with_digest(digest(b"0123456789abcdef"), Caller::default());
        assert_eq!(
            set.caller(Some(b"Bearer 0123456789abcdef")),
            Some(Caller::default())
        );
    }
}
