// crag's query inspector: runs one query through the public JSON API and shows each leg, the
// fusion, the judge's verdict and criteria, the corrections, the timings and the answer.
// Two calls per query: the query as set (the answer), and the same query without Corrective
// RAG at a deeper top k, whose fused candidates carry each leg's own rank (the leg columns).

const $ = (id) => document.getElementById(id);
const STOP = new Set(("a an and are as at be but by for if in into is it no not of on or such that the " +
  "their then there these they this to was will with what how why when which who does do").split(" "));

function settings() {
  const kinds = $("kinds").value.split(",").map((k) => k.trim()).filter(Boolean);
  const filters = {};
  if ($("prefix").value.trim()) filters.sourcePrefix = $("prefix").value.trim();
  if (kinds.length) filters.kinds = kinds;
  const metadata = $("metadata").value.trim();
  if (metadata) filters.metadata = JSON.parse(metadata);
  // The fusion of this query's legs: the configured one unless a method is chosen; the number
  // is the convex fusion's BM25 weight or the RRF constant.
  const fusion = {};
  const method = $("fusion").value;
  const param = $("fusion-param").value.trim();
  if (method) {
    fusion.fusion = method;
    if (param) fusion[method === "rrf" ? "rrfK" : "keywordWeight"] = Number(param);
  }
  return {
    mode: $("mode").value,
    collection: $("collection").value.trim(),
    token: $("token").value,
    body: {
      query: $("query").value,
      topK: Number($("topk").value) || 10,
      useCrag: $("crag").checked,
      useRerank: $("rerank").checked,
      useWebSearch: $("web").checked,
      filters,
      ...fusion,
    },
  };
}

function route(s, name) {
  const base = s.collection ? `/v1/collections/${encodeURIComponent(s.collection)}` : "/v1";
  return `${base}/${name}`;
}

async function call(s, name, body) {
  const headers = { "content-type": "application/json" };
  if (s.token) headers.authorization = `Bearer ${s.token}`;
  const response = await fetch(route(s, name), { method: "POST", headers, body: JSON.stringify(body) });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    const message = answer.error ? `${answer.error.code}: ${answer.error.message}` : response.statusText;
    throw new Error(`${response.status} ${message}`);
  }
  return answer;
}

function askBody(body) {
  const { query, topK, useCrag, useWebSearch, filters } = body;
  return { query, topK, useCrag, useWebSearch, filters };
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "style") node.style.cssText = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
}

const fmt = (x, digits = 3) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));
const short = (r) => r.title || r.source.split("/").pop();
const where = (r) => `${short(r)} · ${r.documentId.split("/").pop()}:${r.span.lineStart}-${r.span.lineEnd}`;

function bars(container, rows, max) {
  container.replaceChildren(...rows.map(([name, value, label]) =>
    el("div", { class: "bar", "data-name": name },
      el("span", {}, name),
      el("div", { class: "track" }, el("div", { class: "fill", style: `width:${Math.min(100, (100 * value) / (max || 1))}%` })),
      el("span", { class: "value" }, label))));
}

function renderJudgement(answer) {
  const decision = answer.cragDecision;
  $("verdict").replaceChildren(
    el("span", { class: `badge ${decision || "off"}` }, decision || "not judged"),
    decision ? ` score ${fmt(answer.cragScore)} · evaluator ${answer.crag?.evaluator ?? "–"} · correction ${answer.cragCorrectionStrategy}` : " Corrective RAG off");
  $("verdict").dataset.verdict = decision || "off";
  const criteria = answer.crag?.criteria ?? [];
  bars($("criteria"), criteria.map((c) => [c.name, c.score, `${fmt(c.score, 2)} ×${fmt(c.weight, 2)}`]), 1);
  $("corrections").replaceChildren(...(answer.corrections ?? []).map((c) =>
    el("li", { "data-kind": c.kind }, el("b", {}, c.kind), ` — ${c.reason}`, c.queries?.length ? ` (${c.queries.join(" | ")})` : "")));
  $("warnings").replaceChildren(...(answer.warnings ?? []).map((w) => el("li", {}, w)));
}

function renderTimings(timings) {
  const stages = Object.entries(timings ?? {}).filter(([k, v]) => k !== "totalMs" && v > 0);
  bars($("timings"), stages.map(([k, v]) => [k.replace(/Ms$/, ""), v, `${fmt(v, 2)} ms`]), timings?.totalMs);
  $("timings").append(el("div", { class: "hint" }, `total ${fmt(timings?.totalMs, 2)} ms`));
}

function legTable(table, rows, rankOf, scoreOf) {
  table.replaceChildren(...rows.map((r) => {
    const fusedRank = r.fusedRank;
    const moved = rankOf(r) - fusedRank;
    const arrow = moved > 0 ? el("span", { class: "up" }, `▲${moved}`) : moved < 0 ? el("span", { class: "down" }, `▼${-moved}`) : "=";
    return el("tr", { "data-chunk-id": r.chunkId },
      el("td", { class: "num" }, rankOf(r)),
      el("td", { class: "source", title: r.source }, where(r)),
      el("td", { class: "num" }, fmt(scoreOf(r))),
      el("td", { class: "num", title: "fused rank, and how far it moved from this list" }, `→${fusedRank} `, arrow));
  }));
}

function renderLegs(candidates, k) {
  const rows = candidates.results.map((r, i) => ({ ...r, fusedRank: i + 1 }));
  const byLeg = (leg) => rows.filter((r) => r[leg]).sort((a, b) => a[leg].rank - b[leg].rank).slice(0, k);
  legTable($("keyword-list"), byLeg("keyword"), (r) => r.keyword.rank, (r) => r.keyword.score);
  legTable($("vector-list"), byLeg("vector"), (r) => r.vector.rank, (r) => r.vector.score);
  legTable($("fused-list"), rows.slice(0, k), (r) => r.fusedRank, (r) => r.score);
}

function terms(query) {
  return [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])]
    .filter((t) => t.length > 2 && !STOP.has(t))
    .map((t) => t.slice(0, Math.max(4, t.length - 2)));
}

function highlighted(text, stems) {
  const node = el("pre", { class: "text" });
  if (!stems.length) { node.textContent = text; return node; }
  const pattern = new RegExp(`\\b(${stems.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})[\\p{L}\\p{N}]*`, "giu");
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    node.append(text.slice(last, match.index), el("mark", {}, match[0]));
    last = match.index + match[0].length;
  }
  node.append(text.slice(last));
  return node;
}

function renderResults(results, query) {
  const stems = terms(query);
  $("results").replaceChildren(...results.map((r) => el("li", {
    "data-chunk-id": r.chunkId,
    "data-keyword-rank": r.keyword?.rank ?? "",
    "data-vector-rank": r.vector?.rank ?? "",
  },
  el("div", { title: r.source }, el("b", {}, where(r)), ` ${r.origin}`),
  el("div", { class: "meta" },
    `score ${fmt(r.score)} · fused ${fmt(r.fusedScore, 4)} · BM25 rank ${r.keyword?.rank ?? "–"} (${fmt(r.keyword?.score, 2)})` +
    ` · vector rank ${r.vector?.rank ?? "–"} (${fmt(r.vector?.score)}) · judged ${fmt(r.relevance)}` +
    (r.rerank ? ` · rerank ${fmt(r.rerank.probability)}` : "") + (r.refined ? " · refined" : "")),
  highlighted(r.text, stems))));
  $("answer-note").textContent = `${results.length} passages; query terms highlighted: ${stems.join(", ") || "none"}`;
}

function renderPasses(answer) {
  $("passes-section").hidden = !answer;
  if (!answer) return;
  $("passes").replaceChildren(...answer.passes.map((p) => el("li", { "data-pass": p.pass },
    `pass ${p.pass}: ${p.contextChunks} chunks read; gaps named: ${p.gaps.join(", ") || "none"}`,
    p.skipped.length ? `; skipped (known missing): ${p.skipped.join(", ")}` : "",
    el("ul", {}, ...p.retrieved.map((g) => el("li", {}, `${g.gap} by ${g.lookup}: ${g.chunkIds.length ? g.chunkIds.join(", ") : "not found"}`))))));
}

function commands(s) {
  const auth = s.token ? ` -H 'authorization: Bearer ${s.token}'` : "";
  const body = s.mode === "ask" ? askBody(s.body) : s.body;
  const curl = `curl -s ${location.origin}${route(s, s.mode)} -H 'content-type: application/json'${auth} -d '${JSON.stringify(body).replaceAll("'", "'\\''")}'`;
  const f = s.body.filters;
  const grpc = { query: s.body.query, top_k: s.body.topK, use_crag: s.body.useCrag, use_web_search: s.body.useWebSearch };
  if (s.mode === "query") {
    grpc.use_rerank = s.body.useRerank;
    if (s.body.fusion) grpc.fusion = s.body.fusion;
    if (s.body.keywordWeight !== undefined) grpc.keyword_weight = s.body.keywordWeight;
    if (s.body.rrfK !== undefined) grpc.rrf_k = s.body.rrfK;
  }
  if (f.sourcePrefix || f.kinds) grpc.filters = { source_prefix: f.sourcePrefix, kinds: f.kinds };
  const meta = s.collection ? ` -H 'x-crag-collection: ${s.collection}'` : "";
  const rpc = s.mode === "ask" ? "Ask" : "Query";
  const grpcurl = `grpcurl -plaintext${auth}${meta} -d '${JSON.stringify(grpc).replaceAll("'", "'\\''")}' ${location.hostname}:50051 crag.v1.Crag/${rpc}`;
  return { curl, grpcurl };
}

function show(text) {
  $("command").hidden = false;
  $("command").textContent = text;
  navigator.clipboard?.writeText(text).catch(() => {});
}

async function run(event) {
  event.preventDefault();
  let s;
  try { s = settings(); } catch (e) { status(`bad metadata filter: ${e.message}`, true); return; }
  sessionStorage.setItem("crag-token", s.token);
  status("running…");
  const k = s.body.topK;
  const legs = { ...s.body, topK: Math.max(30, 3 * k), useCrag: false, useRerank: false, useWebSearch: false };
  try {
    const [answer, candidates] = await Promise.all([
      s.mode === "ask" ? call(s, "ask", askBody(s.body)) : call(s, "query", s.body),
      call(s, "query", legs),
    ]);
    renderLegs(candidates, k);
    if (s.mode === "ask") {
      renderJudgement({ cragDecision: answer.cragDecision, cragScore: answer.cragScore, cragCorrectionStrategy: "–", warnings: answer.warnings });
      renderTimings({ totalMs: answer.totalMs });
      renderPasses(answer);
    } else {
      renderJudgement(answer);
      renderTimings(answer.timings);
      renderPasses(null);
    }
    renderResults(answer.results, s.body.query);
    $("out").hidden = false;
    status(`done: ${answer.results.length} passages`);
    document.body.dataset.state = "done";
  } catch (e) {
    status(e.message, true);
    document.body.dataset.state = "error";
  }
}

function status(text, error = false) {
  $("status").textContent = text;
  $("status").classList.toggle("error", error);
}

$("token").value = sessionStorage.getItem("crag-token") ?? "";
const preset = new URLSearchParams(location.search).get("q");
if (preset) $("query").value = preset;
$("form").addEventListener("submit", run);
$("copy-curl").addEventListener("click", () => show(commands(settings()).curl));
$("copy-grpcurl").addEventListener("click", () => show(commands(settings()).grpcurl));
