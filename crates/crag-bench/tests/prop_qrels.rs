//! Property test of the BEIR qrels reader (`read_qrels`): any TSV-like file is read or
//! refused with a message naming the file, never a panic; 10,000 cases.

use crag_bench::collection::read_qrels;
use proptest::prelude::*;

fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_-]{0,8}",
        any::<i64>().prop_map(|n| n.to_string()),
        Just("99999999999999999999999".to_owned()),
        Just("1.5".to_owned()),
        Just(String::new()),
        ".{0,10}",
    ]
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => ("[a-z0-9]{1,6}", "[a-z0-9]{1,6}", -3i64..4)
            .prop_map(|(q, d, g)| format!("{q}\t{d}\t{g}")),
        2 => prop::collection::vec(field(), 0..5).prop_map(|f| f.join("\t")),
        1 => Just("query-id\tcorpus-id\tscore".to_owned()),
        1 => ".{0,20}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 10_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_qrels_file_is_read_or_refused(lines in prop::collection::vec(line(), 0..8)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("test.tsv");
        std::fs::write(&path, lines.join("\n")).unwrap();
        match read_qrels(&path) {
            Ok(qrels) => {
                prop_assert!(!qrels.is_empty());
                let judged: usize = qrels.values().map(|j| j.len()).sum();
                prop_assert!(judged <= lines.len());
            }
            Err(e) => prop_assert!(format!("{e:#}").contains("test.tsv"), "{e:#}"),
        }
    }
}
