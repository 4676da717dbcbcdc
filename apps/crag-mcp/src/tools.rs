//! The tools: each decodes its arguments, runs one use case of [`crag_app::Api`] under the
//! server's limits and encodes the answer. Descriptions are written for a model choosing a
//! tool.

use crag_app::{Api, DocumentParams};
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{ErrorData, Extensions};
use rmcp::{tool, tool_router};

use crate::wire::{
    AskArgs, AskOutput, ChunkArgs, ChunkOutput, CollectionArgs, CollectionsOutput, DeleteOutput,
    DocumentArgs, DocumentOutput, IngestArgs, IngestError, IngestOutput, SearchArgs, SearchOutput,
    StatsOutput, SymbolArgs, SymbolOutput, SymbolsOutput,
};
use crate::{to_mcp, CragMcp};

// Each tool returns `Result<Json<T>, ErrorData>` written out (not through an alias): the macro
// reads the output schema from that type as written.
#[tool_router(vis = "pub(crate)")]
impl CragMcp {
    #[tool(
        description = "Search the indexed documents and source code for passages relevant to a question or keywords (hybrid BM25 + embedding search). By default the results are judged (verdict correct / ambiguous / incorrect with a confidence) and the retrieval corrected when they look poor. Each passage has its id, source path, lines, text and the rank each search leg gave it. Start here to find context.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
        ext: Extensions,
    ) -> Result<Json<SearchOutput>, ErrorData> {
        let (caller, api) = self.api_for(&ext, args.collection.as_deref()).await?;
        let params = args.into_params(caller.scope);
        let (_, outcome) = self.guarded(api.query(&params)).await?;
        Ok(Json(SearchOutput::from(&outcome)))
    }

    #[tool(
        description = "Answer a question that needs more context than one search, code above all: crag retrieves, names what is still missing (a function called but not shown, a type, a file), fetches exactly that, and repeats (at most three passes). Returns the assembled context, each pass's gaps and what was fetched for each. Pass `new_session: true` (or a `session_id` from a previous answer) to keep context across follow-up questions.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn ask(
        &self,
        Parameters(args): Parameters<AskArgs>,
        ext: Extensions,
    ) -> Result<Json<AskOutput>, ErrorData> {
        let (caller, api) = self.api_for(&ext, args.collection.as_deref()).await?;
        let params = args.into_params(caller.scope);
        let outcome = self.guarded(api.ask(&params)).await?;
        Ok(Json(AskOutput::from(&outcome)))
    }

    #[tool(
        description = "Read one passage whole by its chunk id (as `search`, `ask` or `find_symbol` returned it).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_chunk(
        &self,
        Parameters(args): Parameters<ChunkArgs>,
        ext: Extensions,
    ) -> Result<Json<ChunkOutput>, ErrorData> {
        let (caller, api) = self.api_for(&ext, args.collection.as_deref()).await?;
        let chunk = self.guarded(api.chunk(&caller, &args.chunk_id)).await?;
        Ok(Json(ChunkOutput::from(&chunk)))
    }

    #[tool(
        description = "Read a whole document by its document id: every passage of it in order. Use it when a search result needs its surroundings.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_document(
        &self,
        Parameters(args): Parameters<DocumentArgs>,
        ext: Extensions,
    ) -> Result<Json<DocumentOutput>, ErrorData> {
        let (caller, api) = self.api_for(&ext, args.collection.as_deref()).await?;
        let chunks = self
            .guarded(api.document(&caller, &args.document_id))
            .await?;
        Ok(Json(DocumentOutput {
            document_id: args.document_id,
            chunks: chunks.iter().map(ChunkOutput::from).collect(),
        }))
    }

    #[tool(
        description = "Find where a function, method, type or constant is defined in the indexed source code, with its text, and the definitions that call or use it (callers) and that it calls or uses (callees). Exact name, case-sensitive; a qualified path or its last segments (`Session::verify_user`) narrows it.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn find_symbol(
        &self,
        Parameters(args): Parameters<SymbolArgs>,
        ext: Extensions,
    ) -> Result<Json<SymbolsOutput>, ErrorData> {
        let (caller, api) = self.api_for(&ext, args.collection.as_deref()).await?;
        let report = self
            .guarded(api.find_symbol(&caller, &args.name, args.path.as_deref()))
            .await?;
        let list = |hits: &[crag_app::SymbolHit], text| {
            hits.iter().map(|h| SymbolOutput::of(h, text)).collect()
        };
        Ok(Json(SymbolsOutput {
            definitions: list(&report.definitions, true),
            callers: list(&report.callers, false),
            callees: list(&report.callees, false),
        }))
    }

    #[tool(
        description = "List the collections (separate indexes) this client may search.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn collections(&self, ext: Extensions) -> Result<Json<CollectionsOutput>, ErrorData> {
        let caller = self.caller(&ext)?;
        let collections = self.api.list_collections(&caller).await.map_err(to_mcp)?;
        Ok(Json(CollectionsOutput { collections }))
    }

    #[tool(
        description = "How much a collection holds: documents, passages, the embedding model.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn stats(
        &self,
        Parameters(args): Parameters<CollectionArgs>,
        ext: Extensions,
    ) -> Result<Json<StatsOutput>, ErrorData> {
        let (_, api) = self.api_for(&ext, args.collection.as_deref()).await?;
        let stats = self.guarded(api.stats()).await?;
        Ok(Json(StatsOutput {
            collection: args
                .collection
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| crag_config::DEFAULT_COLLECTION.to_owned()),
            documents: stats.documents,
            chunks: stats.keyword_chunks,
            vector_chunks: stats.vector_chunks,
            embedding_model: stats.embedding_model,
        }))
    }

    #[tool(
        description = "Add or replace documents in a collection (an id already stored is replaced). Each document is chunked, embedded and indexed for both search legs before this returns.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn ingest(
        &self,
        Parameters(args): Parameters<IngestArgs>,
        ext: Extensions,
    ) -> Result<Json<IngestOutput>, ErrorData> {
        let (caller, api) = self.api_for(&ext, args.collection.as_deref()).await?;
        Api::may_write(&caller).map_err(to_mcp)?;
        let documents = args
            .documents
            .into_iter()
            .map(|d| DocumentParams {
                id: d.id,
                text: d.text,
                title: d.title,
                source: d.source,
                kind: d.kind,
                metadata: d.metadata,
            })
            .collect();
        let outcome = self.guarded(api.ingest(documents)).await?;
        let report = outcome.report.unwrap_or_default();
        Ok(Json(IngestOutput {
            received: outcome.received,
            added: report.documents_added,
            updated: report.documents_updated,
            unchanged: report.documents_unchanged,
            chunks_written: report.chunks_written,
            errors: outcome
                .errors
                .into_iter()
                .map(|e| IngestError {
                    index: e.index,
                    id: e.id,
                    message: e.message,
                })
                .collect(),
        }))
    }

    #[tool(
        description = "Delete a document (all its passages) from a collection.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn delete(
        &self,
        Parameters(args): Parameters<DocumentArgs>,
        ext: Extensions,
    ) -> Result<Json<DeleteOutput>, ErrorData> {
        let (caller, api) = self.api_for(&ext, args.collection.as_deref()).await?;
        Api::may_write(&caller).map_err(to_mcp)?;
        self.guarded(api.delete(&args.document_id)).await?;
        Ok(Json(DeleteOutput {
            document_id: args.document_id,
        }))
    }
}
