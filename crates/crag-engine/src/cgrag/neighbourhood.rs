//! The one-hop neighbourhood of a symbol gap: around each definition found, the definitions it
//! calls or uses (callees), the type enclosing it, its members and the definitions calling it
//! (callers), from the symbol graph, or from the session's traversed subgraph when an earlier
//! request of the session walked it. [`fit`] keeps what the next context has room for.

use std::collections::{HashMap, HashSet};

use crag_core::{StoredSymbol, TraversedSymbol};
use crag_ports::{Relation, SymbolIndex};

use crate::crag::Artifact;
use crate::error::Result;

/// Neighbours asked of the graph per definition, before they are ordered and cut.
const WALK_LIMIT: usize = 64;

/// The order neighbours are taken in: callees, owning type, members, callers.
fn relation_rank(relation: Relation) -> u8 {
    match relation {
        Relation::Uses => 0,
        Relation::Parent => 1,
        Relation::Child => 2,
        Relation::UsedBy => 3,
    }
}

/// The chunks of the one-hop neighbours of the definition `qualified`: callees, owning type,
/// members, callers (the graph's order within each), without repeats or the definition's own
/// chunks (`own`), at most `max`.
async fn walk(
    symbols: &dyn SymbolIndex,
    qualified: &str,
    own: &[String],
    max: usize,
) -> Result<Vec<String>> {
    let mut reached = symbols.neighbours(qualified, 1, WALK_LIMIT).await?;
    // Stable: the graph's order (qualified path, path, line) stays within a relation.
    reached.sort_by_key(|n| relation_rank(n.relation));
    let mut out: Vec<String> = Vec::new();
    for n in reached {
        if out.len() == max {
            break;
        }
        let id = n.symbol.chunk_id.as_str();
        if !own.iter().any(|o| o == id) && !out.iter().any(|o| o == id) {
            out.push(id.to_owned());
        }
    }
    Ok(out)
}

/// The neighbourhoods of `defined` (a gap's definitions, as found), one per qualified path in
/// the order first found: the session's record of the symbol when `subgraph` holds one (the
/// graph is not walked again), else a walk of the graph; at most `max` neighbours each.
pub(crate) async fn neighbourhoods(
    symbols: &dyn SymbolIndex,
    defined: &[StoredSymbol],
    subgraph: &HashMap<String, TraversedSymbol>,
    max: usize,
) -> Result<Vec<TraversedSymbol>> {
    let mut order: Vec<&str> = Vec::new();
    let mut chunks: HashMap<&str, Vec<String>> = HashMap::new();
    for s in defined {
        let q = s.def.qualified.as_str();
        let own = chunks.entry(q).or_insert_with(|| {
            order.push(q);
            Vec::new()
        });
        if !own.iter().any(|c| c == s.chunk_id.as_str()) {
            own.push(s.chunk_id.as_str().to_owned());
        }
    }
    let mut out = Vec::with_capacity(order.len());
    for q in order {
        let definition = chunks.remove(q).unwrap_or_default();
        let neighbours = match subgraph.get(q) {
            Some(known) => known.neighbours.iter().take(max).cloned().collect(),
            None => walk(symbols, q, &definition, max).await?,
        };
        out.push(TraversedSymbol {
            symbol: q.to_owned(),
            definition,
            neighbours,
        });
    }
    Ok(out)
}

/// What the next context can still take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Room {
    /// Chunks.
    pub chunks: usize,
    /// Tokens.
    pub tokens: usize,
}

/// Keeps, of each gap's neighbour candidates in turn (each list in its order), those `room`
/// holds, leaving out chunks already `taken` (the definitions, an earlier gap's neighbours)
/// and stopping at the first that does not fit. Returns the kept chunks per gap.
pub(crate) fn fit(
    lists: Vec<Vec<Artifact>>,
    taken: &mut HashSet<String>,
    mut room: Room,
) -> Vec<Vec<Artifact>> {
    let mut out: Vec<Vec<Artifact>> = lists.iter().map(|_| Vec::new()).collect();
    'lists: for (list, kept) in lists.into_iter().zip(out.iter_mut()) {
        for a in list {
            if taken.contains(a.chunk.id.as_str()) {
                continue;
            }
            if room.chunks == 0 || a.tokens > room.tokens {
                break 'lists;
            }
            room.chunks -= 1;
            room.tokens -= a.tokens;
            taken.insert(a.chunk.id.as_str().to_owned());
            kept.push(a);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crag_core::{Chunk, ChunkId, ChunkKind, DocumentId, Span};

    use std::time::Duration;

    use super::super::pass::AskState;
    use super::*;
    use crate::crag::ArtifactOrigin;

    fn artifact(id: &str, tokens: usize) -> Artifact {
        let text = format!("text of {id}");
        let chunk = Chunk::new(
            ChunkId::new(id).unwrap(),
            DocumentId::new(id).unwrap(),
            id,
            "",
            text.clone(),
            Span::new(0, text.len() as u64, 1, 1).unwrap(),
            ChunkKind::Code,
            "h",
        )
        .unwrap();
        Artifact::unscored(chunk, ArtifactOrigin::Gap, tokens)
    }

    fn ids(lists: &[Vec<Artifact>]) -> Vec<Vec<&str>> {
        lists
            .iter()
            .map(|l| l.iter().map(|a| a.chunk.id.as_str()).collect())
            .collect()
    }

    #[test]
    fn neighbours_fit_in_order_without_repeats_and_stop_when_the_room_is_spent() {
        let mut taken: HashSet<String> = ["def".to_owned()].into_iter().collect();
        let lists = vec![
            vec![artifact("def", 5), artifact("a", 10), artifact("b", 10)],
            vec![artifact("a", 10), artifact("c", 30), artifact("d", 1)],
        ];
        let room = Room {
            chunks: 10,
            tokens: 45,
        };
        let kept = fit(lists, &mut taken, room);
        // `def` is a definition, the second `a` a repeat; `c` does not fit in the 25 tokens
        // left, and the room is spent there: `d` is not taken though it would fit.
        assert_eq!(ids(&kept), [vec!["a", "b"], vec![]]);
        assert!(taken.contains("b"));
    }

    #[test]
    fn the_chunk_room_counts_too() {
        let lists = vec![vec![artifact("a", 1), artifact("b", 1), artifact("c", 1)]];
        let room = Room {
            chunks: 2,
            tokens: 100,
        };
        assert_eq!(
            ids(&fit(lists.clone(), &mut HashSet::new(), room)),
            [vec!["a", "b"]]
        );
        let none = Room {
            chunks: 0,
            tokens: 100,
        };
        assert_eq!(
            ids(&fit(lists, &mut HashSet::new(), none)),
            [Vec::<&str>::new()]
        );
    }

    #[test]
    fn callees_come_first_then_the_owning_type_members_and_callers() {
        let mut ranked = [
            Relation::UsedBy,
            Relation::Child,
            Relation::Uses,
            Relation::Parent,
        ];
        ranked.sort_by_key(|r| relation_rank(*r));
        assert_eq!(
            ranked,
            [
                Relation::Uses,
                Relation::Parent,
                Relation::Child,
                Relation::UsedBy
            ]
        );
    }

    fn traversed(symbol: &str, neighbours: &[&str]) -> TraversedSymbol {
        TraversedSymbol {
            symbol: symbol.into(),
            definition: vec![format!("{symbol}#0")],
            neighbours: neighbours.iter().map(|n| (*n).to_owned()).collect(),
        }
    }

    #[test]
    fn the_room_leaves_out_the_best_chunk_the_finds_and_the_definitions() {
        let base = vec![artifact("b1", 10), artifact("b2", 500)];
        let mut state = AskState::new(base, Duration::ZERO, HashSet::new());
        state.next_context(vec![artifact("g1", 20)], Vec::new(), 8, 1000);
        let defs = [artifact("d1", 30), artifact("g1", 20)];
        let (room, taken) = state.room(&defs, 8, 1000);
        // b1, g1 and d1 (g1 counted once); b2, pass 1's rest, is what neighbours may displace.
        assert_eq!(
            room,
            Room {
                chunks: 5,
                tokens: 940
            }
        );
        assert_eq!(taken.len(), 3);
        let (full, _) = state.room(&defs, 2, 50);
        assert_eq!(
            full,
            Room {
                chunks: 0,
                tokens: 0
            }
        );
    }

    #[test]
    fn neighbours_give_way_to_a_later_passs_definitions_but_keep_their_place_in_the_prompt() {
        let base = vec![artifact("b1", 5), artifact("b2", 5)];
        let mut state = AskState::new(base, Duration::ZERO, HashSet::new());
        let ids = |state: &AskState| -> Vec<String> {
            state
                .context
                .iter()
                .map(|a| a.chunk.id.as_str().to_owned())
                .collect()
        };
        state.next_context(
            vec![artifact("d1", 5)],
            vec![artifact("n1", 5), artifact("n2", 5)],
            4,
            100,
        );
        assert_eq!(ids(&state), ["b1", "d1", "n1", "n2"], "b2 gave way");
        state.next_context(vec![artifact("d2", 5)], Vec::new(), 4, 100);
        // Kept: b1, the definitions d1 and d2, then n1; shown in the order fetched.
        assert_eq!(ids(&state), ["b1", "d1", "n1", "d2"]);
        let (room, _) = state.room(&[], 4, 100);
        assert_eq!(room.chunks, 0, "b1, d1, d2, n1 and n2 fill the 4 chunks");
    }

    #[test]
    fn a_symbol_traversed_again_replaces_its_record() {
        let mut state = AskState::default();
        state.record_traversed(vec![traversed("a::f", &["x"]), traversed("b::g", &[])]);
        state.record_traversed(vec![traversed("a::f", &["y"])]);
        let names: Vec<&str> = state.traversed.iter().map(|t| t.symbol.as_str()).collect();
        assert_eq!(names, ["b::g", "a::f"]);
        assert_eq!(state.subgraph["a::f"].neighbours, ["y"]);
    }
}
