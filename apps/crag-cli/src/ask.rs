//! `crag ask`: CGRAG over the index, with an answer when a model is configured.

use anyhow::Result;
use clap::Args;
use crag_app::{Api, AskParams, QueryParams, TokenSet};
use crag_engine::{AskOutcome, DetectorKind};

use crate::commands::{ensure_index, Context};

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question.
    question: String,
    /// Continue this session (32 hex digits; an unknown id starts it).
    #[arg(long)]
    session: Option<String>,
    /// Start a new session; its id is printed.
    #[arg(long, conflicts_with = "session")]
    new_session: bool,
    /// Results of the first retrieval.
    #[arg(long, default_value_t = 10)]
    top_k: i64,
    /// No Corrective RAG on the first retrieval.
    #[arg(long)]
    no_crag: bool,
    /// No web search.
    #[arg(long)]
    no_web: bool,
    /// The gap detector: auto (the LLM when [llm] is configured), llm or code (LLM-free).
    #[arg(long, value_parser = parse_detector)]
    detector: Option<DetectorKind>,
    /// Keep only documents whose metadata passes this filter (JSON, as the HTTP API's
    /// `filters.metadata`; docs/filters.md), in every retrieval of the question.
    #[arg(long, value_parser = crate::commands::parse_json)]
    filter: Option<serde_json::Value>,
    /// Print the answer as JSON (the shape of `POST /v1/ask`).
    #[arg(long)]
    json: bool,
}

fn parse_detector(raw: &str) -> Result<DetectorKind, String> {
    match raw {
        "auto" => Ok(DetectorKind::Auto),
        "llm" => Ok(DetectorKind::Llm),
        "code" => Ok(DetectorKind::Code),
        other => Err(format!("unknown detector `{other}` (auto, llm, code)")),
    }
}

pub async fn ask(ctx: &Context, args: AskArgs) -> Result<()> {
    ensure_index(ctx)?;
    let mut config = ctx.config.clone();
    if let Some(kind) = args.detector {
        config.cgrag.detector = kind;
    }
    // One question searches a few times (at most three passes): LanceDB answers those sooner
    // than the in-memory copy of a large table loads, so a one-shot `ask` copies nothing, as
    // a one-shot `crag query` does.
    config.vector_index.memory_scan_rows = 0;
    let engine =
        crag_app::collections::open_collection(&ctx.base, &ctx.collection, &config).await?;
    let api = Api::new(engine, &config, TokenSet::default());
    let params = AskParams {
        query: QueryParams {
            query: args.question.clone(),
            top_k: Some(args.top_k),
            use_crag: Some(!args.no_crag),
            use_web_search: Some(!args.no_web),
            session_id: args.session.clone(),
            metadata: args.filter.clone(),
            ..QueryParams::default()
        },
        new_session: args.new_session,
    };
    let outcome = api.ask(&params).await.map_err(anyhow::Error::msg)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&crag_http::dto::ask_response(&outcome))?
        );
    } else {
        print_outcome(&outcome);
    }
    Ok(())
}

fn print_outcome(o: &AskOutcome) {
    match &o.answer {
        Some(answer) => println!("{answer}\n"),
        None => println!(
            "(no answer: the {} detector writes none; the context follows)\n",
            o.detector
        ),
    }
    println!(
        "{} pass(es), stopped: {}; gaps: {} named, {} resolved, {} unresolved; {} chunk(s) from the session cache; {} ms",
        o.passes_used(),
        o.stop.as_str(),
        o.gaps_identified,
        o.gaps_resolved,
        o.gaps_unresolved,
        o.context_from_cache,
        crag_http::dto::ms(o.total).round()
    );
    for p in &o.passes {
        for g in &p.retrieved {
            let found = if g.chunk_ids.is_empty() {
                "not found".to_owned()
            } else if g.neighbour_ids.is_empty() {
                g.chunk_ids.join(", ")
            } else {
                format!(
                    "{}; neighbours: {}",
                    g.chunk_ids.join(", "),
                    g.neighbour_ids.join(", ")
                )
            };
            println!("  pass {}: {} ({}) -> {found}", p.pass, g.gap, g.lookup);
        }
    }
    for (i, a) in o.artifacts.iter().enumerate() {
        println!(
            "[{}] {}:{}-{}",
            i + 1,
            a.chunk.source,
            a.chunk.span.line_start,
            a.chunk.span.line_end
        );
    }
    if let Some(id) = o.session_id {
        println!("session: {id}");
    }
    for w in &o.warnings {
        eprintln!("warning: {w}");
    }
}
