//! Checks an answer against the served OpenAPI document: its route, method and status are
//! documented, and its body has the documented shape (no undocumented field, no missing
//! required one, every JSON type as documented). `http.rs` runs it on every answer it gets.

use std::sync::LazyLock;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

/// The document, as JSON.
pub static DOCUMENT: LazyLock<Value> = LazyLock::new(|| {
    serde_json::to_value(crag_http::openapi::document()).expect("the document serialises")
});

/// Sends `request` to `router` and checks the answer against the document ([`check`]).
pub async fn call(router: &Router, request: Request<Body>) -> (StatusCode, Value) {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    check(
        method.as_str(),
        &path,
        status.as_u16(),
        &content_type,
        &value,
    );
    (status, value)
}

/// Every route with its methods and whether it is open to anyone, read from the document:
/// the router takes its routes from the same `routes!` calls, so a route cannot be served
/// without being listed here.
pub fn declared_routes() -> Vec<(String, Method, bool)> {
    let source = include_str!("../../src/lib.rs");
    assert!(
        !source.contains(".route(\""),
        "routes are added with `routes!` only, so that each is documented and enumerated here"
    );
    let mut routes = Vec::new();
    for (path, item) in DOCUMENT["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if method == "parameters" {
                continue;
            }
            // `security: [{}]` marks a route open to anyone.
            let open = operation["security"] == json!([{}]);
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            routes.push((path.clone(), method, open));
        }
    }
    routes
}

/// The documented path a request path takes, if any: `{x}` matches one segment, and a
/// trailing `{x}` the rest (axum's catch-all).
fn documented_path(path: &str) -> Option<&'static str> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    DOCUMENT["paths"]
        .as_object()?
        .keys()
        .find_map(|documented| {
            let pattern: Vec<&str> = documented.split('/').collect();
            let matches = pattern.iter().enumerate().all(|(i, p)| {
                let is_param = p.starts_with('{');
                match segments.get(i) {
                    Some(s) => is_param || p == s,
                    None => false,
                }
            }) && (pattern.len() == segments.len()
                || pattern.last().is_some_and(|p| p.starts_with('{'))
                    && segments.len() > pattern.len());
            matches.then_some(documented.as_str())
        })
}

/// Checks one answer. Unknown routes (404) and methods a route does not have (405) are the
/// router's fallbacks, documented once in the description, so they are let through.
pub fn check(method: &str, path: &str, status: u16, content_type: &str, body: &Value) {
    if status == 404 && documented_path(path).is_none() || status == 405 {
        return;
    }
    let documented = documented_path(path)
        .unwrap_or_else(|| panic!("{method} {path} answered {status} but is not documented"));
    let operation = &DOCUMENT["paths"][documented][method.to_lowercase()];
    if operation.is_null() {
        // Only the 405 fallback answers methods a path lacks.
        panic!("{method} {documented} answered {status} but is not documented");
    }
    let response = &operation["responses"][status.to_string()];
    assert!(
        response.is_object(),
        "{method} {documented}: status {status} is not documented: {body}"
    );
    let media = content_type.split(';').next().unwrap_or("").trim();
    let schema = &response["content"][media]["schema"];
    assert!(
        schema.is_object(),
        "{method} {documented} {status}: content type {media:?} is not documented"
    );
    if let Err(e) = conforms(schema, body, "$") {
        panic!("{method} {documented} {status}: the answer differs from the document: {e}\n{body}");
    }
}

/// Whether `value` has the shape `schema` documents.
pub fn conforms(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/components/schemas/");
        let target = &DOCUMENT["components"]["schemas"][name];
        if target.is_null() {
            return Err(format!("{at}: {reference} names no schema"));
        }
        return conforms(target, value, at);
    }
    if let Some(all) = schema["allOf"].as_array() {
        for s in all {
            conforms(s, value, at)?;
        }
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = schema[key].as_array() {
            let errors: Vec<String> = options
                .iter()
                .filter_map(|s| conforms(s, value, at).err())
                .collect();
            if errors.len() == options.len() {
                return Err(format!("{at}: matches no option of {key}: {errors:?}"));
            }
        }
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let actual = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let allowed = types.is_empty()
        || types.contains(&actual)
        || actual == "integer" && types.contains(&"number");
    if !allowed {
        return Err(format!("{at}: {actual} where the document says {types:?}"));
    }
    match value {
        Value::Object(map) => {
            if let Some(properties) = schema["properties"].as_object() {
                for (key, v) in map {
                    let Some(s) = properties.get(key) else {
                        return Err(format!("{at}.{key} is not documented"));
                    };
                    conforms(s, v, &format!("{at}.{key}"))?;
                }
            }
            for key in schema["required"].as_array().into_iter().flatten() {
                let key = key.as_str().unwrap_or_default();
                if !map.contains_key(key) {
                    return Err(format!("{at}.{key} is documented as required but missing"));
                }
            }
        }
        Value::Array(items) if schema["items"].is_object() => {
            for (i, item) in items.iter().enumerate() {
                conforms(&schema["items"], item, &format!("{at}[{i}]"))?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Every `$ref` of the document names a schema it has.
pub fn dangling_references() -> Vec<String> {
    fn walk(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(r) = map.get("$ref").and_then(Value::as_str) {
                    let name = r.trim_start_matches("#/components/schemas/");
                    if DOCUMENT["components"]["schemas"][name].is_null() {
                        out.push(r.to_owned());
                    }
                }
                map.values().for_each(|v| walk(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&DOCUMENT, &mut out);
    out
}
