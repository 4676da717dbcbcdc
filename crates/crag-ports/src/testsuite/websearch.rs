//! The web-search contract.

use std::collections::HashSet;

use crate::{ErrorKind, WebSearch};

/// Runs the web-search contract against a provider that has at least three results for
/// `query`: results carry an http(s) URL and a title, no URL twice; the limit is a cap and a
/// smaller limit gives a prefix of the larger answer (best first); an empty query or a zero
/// limit is invalid input.
pub async fn web_search_suite(search: &dyn WebSearch, query: &str) {
    assert!(!search.name().is_empty(), "a provider has a name");
    let all = search.search(query, 10).await.expect("search");
    assert!(
        all.len() >= 3,
        "the provider has results for {query:?}: {all:?}"
    );
    assert!(all.len() <= 10, "the limit caps the results");
    let mut urls = HashSet::new();
    for r in &all {
        assert!(
            r.url.starts_with("http://") || r.url.starts_with("https://"),
            "an http(s) URL: {r:?}"
        );
        assert!(!r.title.trim().is_empty(), "a title: {r:?}");
        assert!(urls.insert(r.url.clone()), "no URL twice: {r:?}");
    }
    let two = search.search(query, 2).await.expect("search with limit 2");
    assert_eq!(two.as_slice(), &all[..2], "a smaller limit gives a prefix");
    for (q, limit) in [("", 5), (" \n\t", 5), (query, 0)] {
        let err = search
            .search(q, limit)
            .await
            .expect_err("an empty query or a zero limit is refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{q:?} {limit}");
    }
}
