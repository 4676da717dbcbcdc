//! `kill -9` of `crag ingest` while it compacts the vector table: the data directory reopens,
//! both indexes hold every document at its last ingested version, and nothing needs repair.
//!
//! Each round rewrites two of the twelve documents of a small corpus and ingests it again.
//! The new versions replace old rows, so the vector table ends the ingestion with over a
//! tenth of its rows deleted and `optimize` compacts it (then prunes versions). The test reads the process's
//! log and sends SIGKILL as soon as it says "compacting table" of `chunks`, after a delay that
//! differs per round, so the kill lands at different points of the compaction and prune.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod support;
use support::{crag, stdout_json};

const DOCUMENTS: usize = 12;

/// Delay between the log line and the kill, per round.
const KILL_AFTER_MS: [u64; 5] = [0, 2, 10, 40, 120];

/// A word no other round or document uses, findable by BM25.
fn marker(round: usize, document: usize) -> String {
    const LETTERS: &[u8] = b"bcdfghjklmnpqrstvwxz";
    let mut x = round * 131 + document * 7 + 5;
    let mut word = String::from("zq");
    for _ in 0..5 {
        word.push(LETTERS[x % LETTERS.len()] as char);
        x = x / LETTERS.len() + 11;
    }
    word
}

/// The documents round `round` rewrites: all at first, then two a round, in turn. Two of
/// twelve rows replaced is over the tenth of deleted rows that makes `optimize` compact;
/// rewriting more at once could replace every row of a fragment, which LanceDB drops
/// instead of marking its rows deleted, leaving nothing to compact.
fn rewritten(round: usize) -> impl Iterator<Item = usize> {
    let turn = (round.max(1) - 1) * 2 % DOCUMENTS;
    (0..DOCUMENTS).filter(move |d| round == 0 || *d == turn || *d == turn + 1)
}

fn write_corpus(dir: &Path, round: usize) {
    for d in rewritten(round) {
        let text = format!(
            "# Note {d}\n\nRound {round} of the crash test writes {} into note {d}, with a few \
             more words about storage engines, compaction and manifests.\n",
            marker(round, d)
        );
        std::fs::write(dir.join(format!("note{d}.md")), text).expect("write document");
    }
}

/// Runs `crag ingest corpus` and kills it `delay` after it logs that compaction starts.
/// Returns whether the kill came before the process ended on its own.
fn ingest_and_kill_in_compaction(data: &Path, corpus: &Path, delay: Duration) -> bool {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crag"))
        .arg("--data-dir")
        .arg(data)
        .args(["ingest", corpus.to_str().expect("utf-8 path")])
        .env_remove("CRAG_VECTORS_URI")
        .env("CRAG_LOG", "warn,crag_lancedb=debug")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn crag ingest");
    let stderr = child.stderr.take().expect("stderr");
    let mut log = Vec::new();
    let mut saw_compaction = false;
    for line in BufReader::new(stderr).lines() {
        let line = line.expect("log line");
        let starts = line.contains("compacting table") && line.contains("chunks");
        log.push(line);
        if starts {
            saw_compaction = true;
            std::thread::sleep(delay);
            break;
        }
    }
    // SIGKILL: nothing of crag runs after it, as after `kill -9`.
    let killed = child.kill().is_ok();
    let status = child.wait().expect("wait for crag ingest");
    assert!(
        saw_compaction,
        "the ingestion never compacted ({status}); its log:\n{}",
        log.join("\n")
    );
    killed && !status.success()
}

#[test]
fn a_kill_during_compaction_loses_nothing_and_leaves_the_indexes_agreeing() {
    let data = tempfile::tempdir().expect("tmp");
    let corpus = tempfile::tempdir().expect("tmp");
    write_corpus(corpus.path(), 0);
    let first = stdout_json(&crag(
        data.path(),
        &["ingest", corpus.path().to_str().expect("utf-8"), "--json"],
    ));
    assert_eq!(first["documentsAdded"], DOCUMENTS);

    let mut killed_rounds = 0;
    for (i, delay_ms) in KILL_AFTER_MS.iter().enumerate() {
        let round = i + 1;
        write_corpus(corpus.path(), round);
        let killed = ingest_and_kill_in_compaction(
            data.path(),
            corpus.path(),
            Duration::from_millis(*delay_ms),
        );
        killed_rounds += usize::from(killed);

        // Reopening runs the recovery step; the new versions were written to both indexes
        // before compaction began, so there is nothing to repair.
        let reconciled = stdout_json(&crag(data.path(), &["reconcile", "--json"]));
        assert_eq!(
            reconciled["documentsChecked"], DOCUMENTS,
            "round {round} (kill after {delay_ms} ms): {reconciled}"
        );
        assert_eq!(
            reconciled["orphansRemoved"],
            serde_json::json!([]),
            "round {round}: {reconciled}"
        );
        assert_eq!(
            reconciled["documentsRepaired"],
            serde_json::json!([]),
            "round {round}: {reconciled}"
        );

        let stats = stdout_json(&crag(data.path(), &["stats", "--json"]));
        assert_eq!(stats["documents"], DOCUMENTS, "round {round}: {stats}");
        assert_eq!(
            stats["keywordChunks"], stats["vectorChunks"],
            "round {round}: {stats}"
        );

        // The last version of a document is served by both legs.
        let document = rewritten(round)
            .nth(round % 2)
            .expect("a rewritten document");
        let word = marker(round, document);
        let found = stdout_json(&crag(
            data.path(),
            &["query", &word, "--top-k", "1", "--no-crag", "--json"],
        ));
        let hit = &found["results"][0];
        assert!(
            hit["source"]
                .as_str()
                .is_some_and(|s| s.ends_with(&format!("note{document}.md"))),
            "round {round}: {found}"
        );
        assert!(
            hit["text"].as_str().is_some_and(|t| t.contains(&word)),
            "round {round}: the old version answered: {found}"
        );
        assert!(
            hit["vector"]["rank"].is_u64(),
            "round {round}: no vector hit: {found}"
        );
    }
    println!(
        "crash: {killed_rounds} of {} ingestions killed during compaction or pruning",
        KILL_AFTER_MS.len()
    );
    assert!(
        killed_rounds > 0,
        "every ingestion finished before its kill: the test killed nothing"
    );
}
