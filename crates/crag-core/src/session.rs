//! CGRAG sessions: what a conversation has already retrieved and already failed to find, and its
//! turns.

use std::fmt;
use std::str::FromStr;

use crate::error::{CoreError, Result};

/// A session id: 128 random bits, written as 32 lowercase hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(u128);

impl SessionId {
    /// The id of these 128 bits (the caller draws them at random).
    pub fn from_bits(bits: u128) -> Self {
        Self(bits)
    }

    /// The 128 bits.
    pub fn bits(self) -> u128 {
        self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl FromStr for SessionId {
    type Err = CoreError;

    /// Parses 32 hex digits (either case).
    fn from_str(raw: &str) -> Result<Self> {
        if raw.len() != 32 || !raw.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(CoreError::invalid(
                "session id",
                "expected 32 hexadecimal digits",
            ));
        }
        u128::from_str_radix(raw, 16)
            .map(Self)
            .map_err(|e| CoreError::invalid("session id", e.to_string()))
    }
}

/// A piece of context a session keeps for its follow-up questions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedNode {
    /// The chunk id.
    pub chunk_id: String,
    /// Path or URL.
    pub source: String,
    /// The text as it was returned.
    pub text: String,
}

/// A symbol whose definition and one-hop neighbourhood a session has fetched: a node of the
/// session's traversed subgraph, with the chunks its edges reached. A follow-up that needs the
/// symbol again takes these chunks instead of walking the symbol graph again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraversedSymbol {
    /// Its qualified path (`auth::Session::verify`), as the symbol index stores it.
    pub symbol: String,
    /// The chunks of its definitions.
    pub definition: Vec<String>,
    /// The chunks of its neighbours (callees, owning type, members, callers), in that order.
    pub neighbours: Vec<String>,
}

/// One question and its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatTurn {
    /// The question.
    pub question: String,
    /// The answer (`None` when no model wrote one).
    pub answer: Option<String>,
    /// The model that answered.
    pub model: Option<String>,
    /// Tokens of the model calls of the turn (estimated).
    pub tokens: u32,
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: i64,
}

/// A session as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Its id.
    pub id: SessionId,
    /// Cached context, most recently used first (at most the store's cap).
    pub nodes: Vec<CachedNode>,
    /// Gaps looked for in vain, as normalised keys, sorted.
    pub not_found: Vec<String>,
    /// The traversed subgraph: symbols whose neighbourhood was fetched, most recently
    /// traversed first (at most the store's cap).
    pub symbols: Vec<TraversedSymbol>,
    /// Turns, oldest first.
    pub turns: Vec<ChatTurn>,
    /// Created, in milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// Last used, in milliseconds since the Unix epoch.
    pub last_used_ms: i64,
}

/// What one request adds to a session, applied at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionUpdate {
    /// Context used by the request, most relevant first: each moves to the front of the cache
    /// (re-added ones too); the oldest beyond the cap leave it.
    pub nodes: Vec<CachedNode>,
    /// Gaps that found nothing.
    pub not_found: Vec<String>,
    /// Symbols whose neighbourhood the request fetched: they move to the front of the
    /// session's subgraph in their order (the first ends first), each replacing what the
    /// session held for it; the least recently traversed beyond the cap leave it.
    pub symbols: Vec<TraversedSymbol>,
    /// The request's turn.
    pub turn: Option<ChatTurn>,
}

/// A line of a session listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    /// Its id.
    pub id: SessionId,
    /// Cached nodes.
    pub nodes: usize,
    /// Turns.
    pub turns: usize,
    /// Created, in milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// Last used, in milliseconds since the Unix epoch.
    pub last_used_ms: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_as_32_hex_digits() {
        let id = SessionId::from_bits(0x0123_4567_89ab_cdef_0011_2233_4455_6677);
        assert_eq!(id.to_string(), "0123456789abcdef0011223344556677");
        assert_eq!(
            "0123456789ABCDEF0011223344556677"
                .parse::<SessionId>()
                .unwrap(),
            id
        );
        assert_eq!(SessionId::from_bits(1).to_string().len(), 32);
        for bad in [
            "",
            "xyz",
            "0123456789abcdef001122334455667",
            "+123456789abcdef0011223344556677",
            "0123456789abcdef00112233445566778",
        ] {
            assert!(bad.parse::<SessionId>().is_err(), "{bad}");
        }
    }
}
