//! Mapping the chunk references of a reply onto the prompt's chunks.

/// Maps the chunk references a reply gives (`useful_chunk_ids`) onto `chunk_ids`, the ids of
/// the prompt's chunks in prompt order: an exact id is kept, a number `n` (`"2"`, `"[2]"`,
/// `"chunk 2"`, `"#2"`) names the `n`-th chunk (from 1), anything else is dropped.
/// De-duplicated, in the order given.
pub fn resolve_chunk_ids(references: &[String], chunk_ids: &[&str]) -> Vec<String> {
    let mut resolved: Vec<String> = Vec::new();
    for reference in references {
        let reference = reference.trim();
        let id = chunk_ids
            .iter()
            .find(|id| **id == reference)
            .or_else(|| chunk_number(reference).and_then(|n| chunk_ids.get(n.checked_sub(1)?)));
        if let Some(id) = id {
            if !resolved.iter().any(|kept| kept == id) {
                resolved.push((*id).to_owned());
            }
        }
    }
    resolved
}

fn chunk_number(reference: &str) -> Option<usize> {
    let lower = reference.to_lowercase();
    let t = lower
        .trim_start_matches(['[', '(', '#'])
        .trim_end_matches([']', ')', '.']);
    let t = t
        .strip_prefix("chunk")
        .or_else(|| t.strip_prefix("document"))
        .or_else(|| t.strip_prefix("doc"))
        .unwrap_or(t)
        .trim_start_matches([' ', '#', '[', '('])
        .trim_end_matches([']', ')']);
    if t.is_empty() || t.len() > 6 || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::resolve_chunk_ids;

    #[test]
    fn references_resolve_to_prompt_ids() {
        let ids = ["auth.py#0", "session.py#1", "log.rs#2"];
        let refs: Vec<String> = [
            "session.py#1",
            "1",
            "[3]",
            "chunk 2",
            "Chunk #1",
            "9",
            "x",
            "0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            resolve_chunk_ids(&refs, &ids),
            vec!["session.py#1", "auth.py#0", "log.rs#2"]
        );
    }
}
