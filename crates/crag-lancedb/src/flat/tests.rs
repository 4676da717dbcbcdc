use super::*;

fn built(dimension: usize, read: Vec<(ChunkId, DocumentId, Vec<f32>)>) -> Matrix {
    let mut matrix = Matrix::with_capacity(1, dimension, read.len());
    for (id, document, vector) in read {
        matrix.push(id, document, &vector);
    }
    matrix.coded(MemoryPartitioning {
        from_rows: 0,
        probes: 0,
    })
}

fn matrix(rows: &[(&str, [f32; 3])]) -> Matrix {
    let read = rows
        .iter()
        .map(|(id, v)| {
            let document = DocumentId::new(format!("doc-{id}")).unwrap();
            (ChunkId::new(*id).unwrap(), document, v.to_vec())
        })
        .collect();
    built(3, read)
}

#[test]
fn stored_vectors_are_given_back_as_stored() {
    let m = matrix(&[("a", [2.0, 0.0, 0.0]), ("b", [1.0, 1.0, 0.0])]);
    let ask = ["b", "missing", "a"].map(|id| ChunkId::new(id).unwrap());
    let found = m.vectors(&ask);
    assert_eq!(
        found,
        vec![
            (ask[0].clone(), vec![1.0, 1.0, 0.0]),
            (ask[2].clone(), vec![2.0, 0.0, 0.0]),
        ]
    );
}

/// `rows` rows of `dimension` values around 8 centres (as embeddings of related texts
/// are), two rows per document, coded under `partitioning`; and the centres.
fn clustered(
    rows: usize,
    dimension: usize,
    partitioning: MemoryPartitioning,
) -> (Matrix, Vec<Vec<f32>>) {
    let values = crate::codes::tests::values;
    let centres: Vec<Vec<f32>> = values(8 * dimension, 3)
        .chunks(dimension)
        .map(<[f32]>::to_vec)
        .collect();
    let noise = values(rows * dimension, 5);
    let mut matrix = Matrix::with_capacity(1, dimension, rows);
    for i in 0..rows {
        let at = i * dimension;
        let v: Vec<f32> = centres[i % 8]
            .iter()
            .zip(&noise[at..at + dimension])
            .map(|(c, n)| c + 0.3 * n)
            .collect();
        let id = ChunkId::new(format!("c{i}")).unwrap();
        matrix.push(id, DocumentId::new(format!("d{}", i / 2)).unwrap(), &v);
    }
    (matrix.coded(partitioning), centres)
}

const WHOLE: MemoryPartitioning = MemoryPartitioning {
    from_rows: 0,
    probes: 0,
};

/// Unit queries near the first centre.
fn queries_near(centre: &[f32], count: usize) -> Vec<Vec<f32>> {
    let dimension = centre.len();
    crate::codes::tests::values(count * dimension, 9)
        .chunks(dimension)
        .map(|shift| {
            let raw: Vec<f32> = centre.iter().zip(shift).map(|(c, s)| c + 0.5 * s).collect();
            unit(&raw)
        })
        .collect()
}

/// The exact scan's best `k` of the rows `kept`.
fn exact_best(m: &Matrix, query: &[f32], k: usize, kept: impl Fn(usize) -> bool) -> Vec<ScoredId> {
    let scored = (0..m.rows())
        .filter(|i| kept(*i))
        .map(|i| (m.exact_score(query, i), i))
        .collect();
    m.best(scored, k)
}

#[test]
fn the_scan_of_codes_finds_what_the_exact_scan_finds() {
    let (rows, dimension) = (3_000, 32);
    let (m, centres) = clustered(rows, dimension, WHOLE);
    for query in queries_near(&centres[0], 20) {
        let k = 50;
        let want = exact_best(&m, &query, k, |_| true);
        assert_eq!(m.nearest(&query, k, None, 0), want);
        // The bounds leave few rows to score again.
        let candidates = m.candidates(&query, k, 0, |_| true).len();
        assert!(
            (k..rows / 4).contains(&candidates),
            "{candidates} candidates"
        );
    }
    let within: HashSet<DocumentId> = (0..300)
        .map(|d| DocumentId::new(format!("d{d}")).unwrap())
        .collect();
    let query = unit(&centres[1]);
    let kept = |i: usize| within.contains(&m.documents[i]);
    assert_eq!(
        m.nearest(&query, 50, Some(&within), 0),
        exact_best(&m, &query, 50, kept)
    );
}

#[test]
fn a_partitioned_copy_scans_the_nearest_partitions_and_all_of_them_when_asked() {
    let (rows, dimension, k) = (3_000, 32, 10);
    let partitioning = MemoryPartitioning {
        from_rows: 2_000,
        probes: 12,
    };
    let (m, centres) = clustered(rows, dimension, partitioning);
    let partitions = m.partitions.as_ref().expect("partitioned").len();
    assert_eq!(partitions, 55, "the square root of the rows");
    let (mut found, mut wanted) = (0, 0);
    for query in queries_near(&centres[0], 20) {
        let want = exact_best(&m, &query, k, |_| true);
        // Every partition probed: the exact scan's answer.
        assert_eq!(m.nearest(&query, k, None, partitions), want);
        assert_eq!(m.nearest(&query, k, None, 0), want);
        // A few: fewer rows scanned, most of the true neighbours found.
        let probed = m.nearest(&query, k, None, partitioning.probes);
        assert_eq!(probed.len(), k);
        let scanned = m.candidates(&query, k, partitioning.probes, |_| true);
        assert!(scanned.len() < rows / 4, "{} candidates", scanned.len());
        found += probed.iter().filter(|h| want.contains(h)).count();
        wanted += want.len();
    }
    assert!(found * 10 >= wanted * 9, "recall {found} of {wanted}");
    // A search among some documents scans every partition: the exact answer.
    let within: HashSet<DocumentId> = (0..50)
        .map(|d| DocumentId::new(format!("d{d}")).unwrap())
        .collect();
    let query = unit(&centres[3]);
    let kept = |i: usize| within.contains(&m.documents[i]);
    assert_eq!(
        m.nearest(&query, k, Some(&within), 0),
        exact_best(&m, &query, k, kept)
    );
    // Below its threshold a copy is not partitioned.
    let (small, _) = clustered(1_000, dimension, partitioning);
    assert!(small.partitions.is_none());
}

#[test]
fn the_scan_ranks_by_cosine_and_settles_ties_by_id() {
    let m = matrix(&[
        ("d", [0.0, 1.0, 0.0]),
        ("b", [1.0, 1.0, 0.0]),
        ("c", [2.0, 0.0, 0.0]),
        ("a", [1.0, 0.0, 0.0]),
        ("e", [-1.0, 0.0, 0.0]),
    ]);
    let hits = m.nearest(&unit(&[1.0, 0.0, 0.0]), 3, None, 0);
    let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(
        ids,
        ["a", "c", "b"],
        "same direction first, equal scores by id"
    );
    assert!((hits[0].score - 1.0).abs() < 1e-6);
    let half = 1.0 - (1.0 - std::f32::consts::FRAC_1_SQRT_2) / 2.0;
    assert!((hits[2].score - half).abs() < 1e-6, "{}", hits[2].score);
    let all = m.nearest(&unit(&[1.0, 0.0, 0.0]), 10, None, 0);
    assert_eq!(all.len(), 5);
    assert_eq!(all[4].id.as_str(), "e");
    assert!(all[4].score.abs() < 1e-6, "opposite scores 0");
    assert!(m.nearest(&unit(&[1.0, 0.0, 0.0]), 0, None, 0).is_empty());
    let within: HashSet<DocumentId> = ["doc-e", "doc-b"]
        .map(|d| DocumentId::new(d).unwrap())
        .into();
    let kept = m.nearest(&unit(&[1.0, 0.0, 0.0]), 10, Some(&within), 0);
    let ids: Vec<&str> = kept.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(
        ids,
        ["b", "e"],
        "only the rows of the documents given, in order"
    );
}
