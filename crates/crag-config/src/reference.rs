//! The configuration reference, made from the schema: every table, every key with its doc
//! comment and default. `crag config schema` prints the JSON Schema; the key tables of
//! `docs/configuration.md` and the whole of `crag.example.toml` are generated from it (a test
//! compares both files with what this module makes, and rewrites them under `CRAG_BLESS=1`),
//! so a key is added in one place: its field, its doc comment and its default.

use serde_json::{Map, Value as Json};

use crate::{AdapterSections, Config};

/// The JSON Schema (draft 2020-12) of the configuration file with the adapter sections `A`,
/// for editors and validators.
pub fn json_schema<A: AdapterSections>() -> Json {
    schemars::schema_for!(Config<A>).to_value()
}

/// One key: a value that is not a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    /// The key's name in its table.
    pub name: String,
    /// Its default, or `None` when it is unset by default.
    pub default: Option<toml::Value>,
    /// A value to show in the example file, when the field gives one.
    pub example: Option<toml::Value>,
    /// Its doc comment, lines joined.
    pub doc: String,
}

/// One table of the configuration: `""` for the top level, else its dotted path
/// (`"crag.prf"`).
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// Dotted path of the table.
    pub path: String,
    /// The doc comment of the field holding the table.
    pub doc: String,
    /// The table is absent by default (an `Option`): `[llm]`, `[evaluator.http]`.
    pub optional: bool,
    /// Its keys, in declaration order.
    pub keys: Vec<Key>,
}

/// Every table of the configuration, depth first in declaration order, the top level first.
pub fn sections<A: AdapterSections>() -> Vec<Section> {
    let schema = json_schema::<A>();
    let empty = Map::new();
    let defs = schema
        .get("$defs")
        .and_then(Json::as_object)
        .unwrap_or(&empty);
    let mut out = Vec::new();
    walk(
        &schema,
        defs,
        (String::new(), String::new(), false),
        &mut out,
    );
    out
}

/// The table a property's schema describes (through `$ref` and `Option`), if it is one.
fn table<'a>(schema: &'a Json, defs: &'a Map<String, Json>) -> Option<&'a Json> {
    if let Some(reference) = schema.get("$ref").and_then(Json::as_str) {
        let def = defs.get(reference.rsplit('/').next()?)?;
        return def.get("properties").is_some().then_some(def);
    }
    if let Some(any) = schema.get("anyOf").and_then(Json::as_array) {
        let mut tables = any.iter().filter_map(|s| table(s, defs));
        let only = tables.next()?;
        let rest_null = any
            .iter()
            .all(|s| table(s, defs).is_some() || s.get("type") == Some(&"null".into()));
        return (tables.next().is_none() && rest_null).then_some(only);
    }
    schema.get("properties").is_some().then_some(schema)
}

/// Adds the table `schema` describes, at (path, doc comment, optional), and its sub-tables.
fn walk(
    schema: &Json,
    defs: &Map<String, Json>,
    (path, doc, optional): (String, String, bool),
    out: &mut Vec<Section>,
) {
    let at = out.len();
    out.push(Section {
        path: path.clone(),
        doc,
        optional,
        keys: Vec::new(),
    });
    let Some(properties) = schema.get("properties").and_then(Json::as_object) else {
        return;
    };
    for (name, property) in properties {
        let doc = description(property);
        if let Some(sub) = table(property, defs) {
            let sub_path = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            let absent = optional || property.get("default").is_some_and(Json::is_null);
            walk(sub, defs, (sub_path, doc, absent), out);
        } else {
            let default = property
                .get("default")
                .filter(|d| !d.is_null())
                .and_then(|d| toml::Value::try_from(d).ok());
            let example = property
                .get("examples")
                .and_then(|e| e.get(0))
                .and_then(|e| toml::Value::try_from(e).ok());
            let values = variants(property, defs);
            let doc = if values.is_empty() {
                doc
            } else {
                format!("{doc} One of {}.", values.join(", "))
            };
            out[at].keys.push(Key {
                name: name.clone(),
                default,
                example,
                doc,
            });
        }
    }
}

/// A property's doc comment, its lines joined (paragraphs kept apart by a blank line) and
/// rustdoc's intra-doc links (`` [`name`] ``) shown as plain code.
fn description(property: &Json) -> String {
    let text = property
        .get("description")
        .and_then(Json::as_str)
        .unwrap_or_default();
    text.split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
        .replace("[`", "`")
        .replace("`]", "`")
}

/// The values a key of an enumeration takes (`"off"`, `"onnx"`), as TOML writes them; empty
/// for other keys.
fn variants(property: &Json, defs: &Map<String, Json>) -> Vec<String> {
    let resolved = match property.get("$ref").and_then(Json::as_str) {
        Some(reference) => match reference.rsplit('/').next().and_then(|name| defs.get(name)) {
            Some(def) => def,
            None => return Vec::new(),
        },
        None => property,
    };
    let quoted = |v: &Json| v.as_str().map(|s| format!("`\"{s}\"`"));
    if let Some(values) = resolved.get("enum").and_then(Json::as_array) {
        return values.iter().filter_map(quoted).collect();
    }
    resolved
        .get("oneOf")
        .and_then(Json::as_array)
        .map(|cases| {
            cases
                .iter()
                .filter_map(|case| case.get("const").and_then(quoted))
                .collect()
        })
        .unwrap_or_default()
}

/// A default as TOML shows it (`"convex"`, `0.5`, `["a", "b"]`).
fn shown(value: &toml::Value) -> String {
    match value {
        toml::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(shown).collect();
            format!("[{}]", items.join(", "))
        }
        // Most keys are `f32`: show the shortest decimal that reads back as the same `f32`.
        toml::Value::Float(f) if f64::from(*f as f32) == *f => {
            let short = (*f as f32).to_string();
            if short.contains(['.', 'e', 'i', 'N']) {
                short
            } else {
                format!("{short}.0")
            }
        }
        toml::Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{f:.1}"),
        other => other.to_string(),
    }
}

/// The Markdown table of a section's keys: key, default, meaning.
pub fn markdown_table(section: &Section) -> String {
    let mut out = String::from("| key | default | meaning |\n|---|---|---|\n");
    for key in &section.keys {
        let default = key
            .default
            .as_ref()
            .map_or_else(|| "unset".to_string(), |d| format!("`{}`", shown(d)));
        let meaning = key.doc.replace("\n\n", " ").replace('|', "\\|");
        out.push_str(&format!("| `{}` | {default} | {meaning} |\n", key.name));
    }
    out
}

/// Rewrites the key tables of a Markdown document (`docs/configuration.md`): each block from
/// `<!-- keys [path] -->` to `<!-- /keys -->` gets the table of that section (`[]` is the top
/// level; a block may name several sections whose tables are the same, such as the three
/// context sources). The error names a section with keys and no block, a block naming no
/// section, sections named together whose tables differ, or a block left open.
pub fn render_key_tables<A: AdapterSections>(markdown: &str) -> Result<String, String> {
    let sections = sections::<A>();
    let find = |path: &str| sections.iter().find(|s| s.path == path);
    let mut out = Vec::new();
    let mut shown = Vec::new();
    let mut lines = markdown.split('\n');
    while let Some(line) = lines.next() {
        out.push(line.to_string());
        let Some(names) = line
            .strip_prefix(KEYS_OPEN)
            .and_then(|rest| rest.strip_suffix(" -->"))
        else {
            continue;
        };
        let mut table: Option<String> = None;
        for name in names.split_whitespace() {
            let path = name
                .strip_prefix('[')
                .and_then(|n| n.strip_suffix(']'))
                .ok_or_else(|| format!("`{line}`: sections are written `[path]`"))?;
            let section = find(path).ok_or_else(|| format!("`{line}`: no section `[{path}]`"))?;
            let this = markdown_table(section);
            if table.as_ref().is_some_and(|t| *t != this) {
                return Err(format!("`{line}`: these sections' keys differ"));
            }
            table = Some(this);
            shown.push(path.to_string());
        }
        let table = table.ok_or_else(|| format!("`{line}` names no section"))?;
        if !lines.by_ref().any(|l| l == KEYS_CLOSE) {
            return Err(format!("`{line}` is not closed by `{KEYS_CLOSE}`"));
        }
        out.push(table.trim_end().to_string());
        out.push(KEYS_CLOSE.to_string());
    }
    let missing: Vec<String> = sections
        .iter()
        .filter(|s| !s.keys.is_empty() && !shown.contains(&s.path))
        .map(|s| format!("[{}]", s.path))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "no `{KEYS_OPEN}[...] -->` block for {}",
            missing.join(", ")
        ));
    }
    Ok(out.join("\n"))
}

const KEYS_OPEN: &str = "<!-- keys ";
const KEYS_CLOSE: &str = "<!-- /keys -->";

/// Wraps `text` into `#` comment lines of at most `width` characters.
fn comment(text: &str, width: usize) -> String {
    let mut out = String::new();
    for paragraph in text.split("\n\n") {
        let mut line = String::from("#");
        for word in paragraph.split_whitespace() {
            if line.len() > 1 && line.len() + 1 + word.len() > width {
                out.push_str(&line);
                out.push('\n');
                line = String::from("#");
            }
            line.push(' ');
            line.push_str(word);
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The example configuration file: every table and key with its doc comment as a comment
/// and its default. Keys unset by default and tables absent by default are commented out,
/// with the field's example value when it gives one.
pub fn example_toml<A: AdapterSections>() -> String {
    let mut out = String::from(EXAMPLE_HEADER);
    for section in sections::<A>() {
        if section.keys.is_empty() {
            continue;
        }
        let off = if section.optional { "# " } else { "" };
        out.push('\n');
        if !section.path.is_empty() {
            if !section.doc.is_empty() {
                out.push_str(&comment(&section.doc, 100));
            }
            if section.optional {
                out.push_str("# Absent by default: remove the leading `# ` to use it.\n");
            }
            out.push_str(&format!("{off}[{}]\n", section.path));
        }
        for key in &section.keys {
            out.push_str(&comment(&key.doc, 100));
            let line = match (&key.default, &key.example) {
                (None, Some(e)) => format!("# {} = {}", key.name, shown(e)),
                (Some(_), Some(e)) if section.optional => format!("# {} = {}", key.name, shown(e)),
                (Some(d), _) => format!("{off}{} = {}", key.name, shown(d)),
                (None, None) => format!("# {} (unset)", key.name),
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

const EXAMPLE_HEADER: &str = "\
# crag configuration: every key with its default, generated from the schema
# (`cargo test -p crag-app --test reference` checks it; `CRAG_BLESS=1` rewrites it).
# Copy what you change; unknown keys are rejected with their name. Any key can be overridden
# from the environment: CRAG_<SECTION>__<KEY> (e.g. CRAG_SERVER__HTTP_ADDR=0.0.0.0:8080),
# top-level keys as CRAG_DATA_DIR, CRAG_VECTORS_URI, CRAG_ASSETS_DIR, CRAG_SYNONYMS_FILE.
# `crag --config crag.toml config print` shows the effective configuration, `crag config
# schema` the JSON Schema. Every key is documented in docs/configuration.md.
";
