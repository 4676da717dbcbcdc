use super::*;

#[test]
fn scores_map_cosine_distance_to_unit_range() {
    assert_eq!(score_of(0.0), 1.0);
    assert_eq!(score_of(1.0), 0.5);
    assert_eq!(score_of(2.0), 0.0);
    assert_eq!(score_of(-1e-6), 1.0);
    assert_eq!(score_of(2.5), 0.0);
    assert_eq!(score_of(f32::NAN), 0.0);
}

#[test]
fn predicate_quotes_ids() {
    let ids = [
        DocumentId::new("a.md").expect("id"),
        DocumentId::new("it's \\ \"odd\"").expect("id"),
    ];
    assert_eq!(
        document_predicate(&ids),
        "document_id IN ('a.md', 'it''s \\ \"odd\"')"
    );
}
