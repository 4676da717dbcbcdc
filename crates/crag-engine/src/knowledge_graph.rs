//! The knowledge graph of prose at query time: the expansion of a query by the
//! `knowledge_graph` route over the key terms written at ingest (`ingest/terms.rs`). The
//! scoring is pure (`crag_expansion::term_graph`); this module reads the ports.

use crag_core::{ChunkFilter, Query, TopK};
use crag_expansion::term_graph::{
    distinct_terms, graph_query, seeds, walkable, Expansion, ExpansionTerm,
};
use crag_ports::TermGraph;

use std::sync::Arc;

use crate::engine::{Engine, KeywordInput, Retrieval, VectorInput};
use crate::error::Result;
use crate::fusion::Fusion;

/// What the knowledge-graph route added to a query.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphExpansion {
    /// The query terms walked from (known to the graph, not too common).
    pub seeds: Vec<String>,
    /// The terms added, best first.
    pub terms: Vec<ExpansionTerm>,
}

impl GraphExpansion {
    /// A short description for the route's reason: the terms added and where from.
    pub fn describe(&self) -> String {
        if self.terms.is_empty() {
            return "knowledge graph: no related terms found, query kept".into();
        }
        let terms: Vec<String> = self
            .terms
            .iter()
            .map(|t| format!("{} ({:.2} via {})", t.term, t.score, t.via))
            .collect();
        format!("knowledge graph: expanded with {}", terms.join(", "))
    }
}

impl Engine {
    /// Keeps the key terms of ingested chunks in `graph` (the knowledge graph of prose) when
    /// `graph.enabled` is set in the engine configuration; the `knowledge_graph` route reads
    /// it.
    pub fn with_term_graph(mut self, graph: Arc<dyn TermGraph>) -> Self {
        self.terms = Some(graph);
        self
    }

    /// The term graph, when one is configured and switched on.
    pub(crate) fn term_graph(&self) -> Option<&Arc<dyn TermGraph>> {
        self.terms.as_ref().filter(|_| self.config().graph.enabled)
    }

    /// Whether a term graph is configured and switched on.
    pub fn has_term_graph(&self) -> bool {
        self.term_graph().is_some()
    }

    /// The terms the knowledge graph relates to `query`: its index terms known to the graph
    /// and in at most `max_seed_share` of the chunks are the seeds; their neighbours (shared
    /// chunks >= `min_together`) score by association, the best `frontier` of them are walked
    /// a second hop (scaled by `decay`), and the best `max_terms` are kept. Empty without a
    /// term graph.
    pub async fn graph_expansion(&self, query: &Query) -> Result<GraphExpansion> {
        let tokens = self.keyword_index().analyze(query.as_str());
        self.expand_tokens(&tokens).await
    }

    /// [`Engine::graph_expansion`] of a query already analysed into `tokens`.
    async fn expand_tokens(&self, tokens: &[String]) -> Result<GraphExpansion> {
        let Some(graph) = self.term_graph() else {
            return Ok(GraphExpansion::default());
        };
        let config = &self.config().graph;
        let terms = distinct_terms(tokens);
        if terms.is_empty() || config.max_terms == 0 {
            return Ok(GraphExpansion::default());
        }
        let frequencies = graph.frequencies(&terms).await?;
        let chunks = graph.chunk_count().await?;
        let seeds = seeds(&terms, &frequencies, chunks, config);
        let mut expansion = Expansion::new(&terms);
        for (seed, frequency) in &seeds {
            let neighbours = graph
                .neighbours(seed, config.min_together, config.neighbours)
                .await?;
            expansion.add(seed, 1.0, *frequency, &neighbours, 1, config.decay);
        }
        if config.hops >= 2 {
            let frontier = expansion.frontier(config.frontier);
            for m in frontier
                .iter()
                .filter(|m| walkable(m.frequency, chunks, config))
            {
                let neighbours = graph
                    .neighbours(&m.term, config.min_together, config.neighbours)
                    .await?;
                expansion.add(&m.term, m.score, m.frequency, &neighbours, 2, config.decay);
            }
        }
        Ok(GraphExpansion {
            seeds: seeds.into_iter().map(|(t, _)| t).collect(),
            terms: expansion.top(config.max_terms),
        })
    }

    /// Hybrid retrieval with the query expanded by the knowledge graph: the keyword leg
    /// searches the query's terms at weight 1 and the related terms at `weight` × their
    /// score; the vector leg embeds the query as asked. Without related terms (or without a
    /// term graph) this is [`Engine::retrieve_with`].
    pub async fn retrieve_graph(
        &self,
        query: &Query,
        top_k: TopK,
        filter: &ChunkFilter,
        fusion: Option<Fusion>,
    ) -> Result<(Retrieval, GraphExpansion)> {
        let tokens = self.keyword_index().analyze(query.as_str());
        let expansion = self.expand_tokens(&tokens).await?;
        if expansion.terms.is_empty() {
            return Ok((
                self.retrieve_fused(query, top_k, filter, fusion).await?,
                expansion,
            ));
        }
        let weighted = graph_query(&tokens, &expansion.terms, self.config().graph.weight);
        // Weighted index terms for the keyword leg, the query text embedded for the vector leg.
        let retrieval = self
            .retrieve_legs(
                KeywordInput::Terms(&weighted),
                VectorInput::Text(query.as_str()),
                top_k,
                None,
                filter,
                fusion,
            )
            .await?;
        Ok((retrieval, expansion))
    }
}
