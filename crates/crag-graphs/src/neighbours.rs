//! The 1-2 hop neighbourhood of a definition, walked with indexed queries inside one read
//! transaction; the same walk for both backends, each reading through [`Walk`].

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use crag_core::StoredSymbol;
use crag_ports::{Neighbour, PortResult, Relation};
use sqlx::{PgConnection, SqliteConnection};

use crate::db_error;
use crate::rows::{self, DEF_COLUMNS};

/// The two reads a walk makes, on one connection of a backend (inside a read transaction).
#[async_trait]
pub(crate) trait Walk: Send {
    /// The definitions selected by `filter` (a `WHERE` clause on `symbol_defs` with `?1`,
    /// `?2`... parameters) bound to `binds`, with their row ids, in id order.
    async fn defs(&mut self, filter: &str, binds: &[&str]) -> PortResult<Vec<Def>>;

    /// The distinct name and qualifier of the references made from the definition `from`.
    async fn uses(&mut self, from: &str) -> PortResult<Vec<(String, Option<String>)>>;
}

const USES: &str = "SELECT DISTINCT name, qualifier FROM symbol_refs WHERE from_qualified = ?1";

/// Runs `sql` bound to `binds` on `conn` and reads definition rows.
macro_rules! def_rows {
    ($conn:expr, $sql:expr, $binds:expr) => {{
        let sql = $sql;
        let mut query = sqlx::query(&sql);
        for b in $binds {
            query = query.bind(*b);
        }
        query
            .fetch_all($conn)
            .await
            .map_err(|e| db_error("neighbours", e))?
            .iter()
            .map(rows::symbol)
            .collect()
    }};
}

#[async_trait]
impl Walk for SqliteConnection {
    async fn defs(&mut self, filter: &str, binds: &[&str]) -> PortResult<Vec<Def>> {
        def_rows!(
            &mut *self,
            format!("SELECT {DEF_COLUMNS} FROM symbol_defs WHERE {filter} ORDER BY id"),
            binds
        )
    }

    async fn uses(&mut self, from: &str) -> PortResult<Vec<(String, Option<String>)>> {
        sqlx::query_as(USES)
            .bind(from)
            .fetch_all(&mut *self)
            .await
            .map_err(|e| db_error("neighbours", e))
    }
}

/// Postgres numbers its parameters `$1`, `$2`...
#[async_trait]
impl Walk for PgConnection {
    async fn defs(&mut self, filter: &str, binds: &[&str]) -> PortResult<Vec<Def>> {
        def_rows!(
            &mut *self,
            format!("SELECT {DEF_COLUMNS} FROM symbol_defs WHERE {filter} ORDER BY id")
                .replace('?', "$"),
            binds
        )
    }

    async fn uses(&mut self, from: &str) -> PortResult<Vec<(String, Option<String>)>> {
        sqlx::query_as(&USES.replace('?', "$"))
            .bind(from)
            .fetch_all(&mut *self)
            .await
            .map_err(|e| db_error("neighbours", e))
    }
}

/// Rank of a relation in a neighbourhood's order: Uses, Child, Parent, UsedBy.
fn rank(relation: Relation) -> u8 {
    match relation {
        Relation::Uses => 0,
        Relation::Child => 1,
        Relation::Parent => 2,
        Relation::UsedBy => 3,
    }
}

/// Whether `qualified` is `suffix` or ends with `::` + `suffix`.
fn has_qualified_suffix(qualified: &str, suffix: &str) -> bool {
    qualified == suffix
        || qualified
            .strip_suffix(suffix)
            .is_some_and(|head| head.ends_with("::"))
}

/// A definition and its row id.
pub(crate) type Def = (i64, StoredSymbol);

/// The definitions related to `from`, each with its relation (see [`Relation`]).
async fn related<W: Walk + ?Sized>(
    conn: &mut W,
    from: &StoredSymbol,
) -> PortResult<Vec<(Relation, Def)>> {
    let q = from.def.qualified.as_str();
    let mut out = Vec::new();

    for (name, qualifier) in conn.uses(q).await? {
        let named = conn.defs("name = ?1", &[&name]).await?;
        let preferred: Vec<Def> = match qualifier {
            Some(qualifier) => {
                let suffix = format!("{qualifier}::{name}");
                named
                    .iter()
                    .filter(|(_, s)| has_qualified_suffix(&s.def.qualified, &suffix))
                    .cloned()
                    .collect()
            }
            None => Vec::new(),
        };
        let targets = if preferred.is_empty() {
            named
        } else {
            preferred
        };
        out.extend(targets.into_iter().map(|d| (Relation::Uses, d)));
    }

    let (low, high) = rows::prefix_range(&format!("{q}::"));
    let children = conn
        .defs("qualified >= ?1 AND qualified < ?2", &[&low, &high])
        .await?;
    out.extend(
        children
            .into_iter()
            .filter(|(_, s)| {
                s.def
                    .qualified
                    .strip_prefix(low.as_str())
                    .is_some_and(|rest| !rest.is_empty() && !rest.contains("::"))
            })
            .map(|d| (Relation::Child, d)),
    );

    if let Some((parent, _)) = q.rsplit_once("::") {
        let parents = conn.defs("qualified = ?1", &[parent]).await?;
        out.extend(parents.into_iter().map(|d| (Relation::Parent, d)));
    }

    let users = conn
        .defs(
            "qualified IN (SELECT from_qualified FROM symbol_refs WHERE name = ?1)",
            &[&from.def.name],
        )
        .await?;
    out.extend(users.into_iter().map(|d| (Relation::UsedBy, d)));
    Ok(out)
}

/// The neighbourhood of the definitions qualified `qualified`; `hops` is 1 or 2, `limit` > 0.
pub(crate) async fn walk<W: Walk + ?Sized>(
    conn: &mut W,
    qualified: &str,
    hops: u8,
    limit: usize,
) -> PortResult<Vec<Neighbour>> {
    let start = conn.defs("qualified = ?1", &[qualified]).await?;
    let excluded: HashSet<i64> = start.iter().map(|(id, _)| *id).collect();
    let mut best: HashMap<i64, Neighbour> = HashMap::new();
    let mut frontier: Vec<StoredSymbol> = start.into_iter().map(|(_, s)| s).collect();
    for hop in 1..=hops {
        for from in &frontier {
            for (relation, (id, symbol)) in related(conn, from).await? {
                if excluded.contains(&id) {
                    continue;
                }
                let better = best
                    .get(&id)
                    .is_none_or(|seen| seen.hops == hop && rank(relation) < rank(seen.relation));
                if better {
                    best.insert(
                        id,
                        Neighbour {
                            symbol,
                            hops: hop,
                            relation,
                        },
                    );
                }
            }
        }
        frontier = best
            .values()
            .filter(|n| n.hops == hop)
            .map(|n| n.symbol.clone())
            .collect();
    }
    let mut out: Vec<(i64, Neighbour)> = best.into_iter().collect();
    out.sort_by(|(ia, a), (ib, b)| {
        (a.hops, rank(a.relation))
            .cmp(&(b.hops, rank(b.relation)))
            .then_with(|| {
                let (sa, sb) = (&a.symbol, &b.symbol);
                (&sa.def.qualified, &sa.path, sa.def.line_start, &sa.chunk_id).cmp(&(
                    &sb.def.qualified,
                    &sb.path,
                    sb.def.line_start,
                    &sb.chunk_id,
                ))
            })
            .then(ia.cmp(ib))
    });
    out.truncate(limit);
    Ok(out.into_iter().map(|(_, n)| n).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_suffixes_are_segment_aligned() {
        assert!(has_qualified_suffix("a::B::c", "B::c"));
        assert!(!has_qualified_suffix("a::MyB::c", "B::c"));
        assert!(!has_qualified_suffix("a::B::c", "::c"));
    }
}
