//! A query's timings on the wire: one key per timing the engine names
//! ([`QueryTimings::named`]), in milliseconds (`web_search` -> `webSearchMs`). The answer and
//! its OpenAPI schema are both made from that list, so neither can miss a stage.

use crag_engine::QueryTimings;
use serde::ser::{Serialize, SerializeMap, Serializer};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::RefOr;

use super::ms;

/// Milliseconds per stage of a query.
pub(crate) struct TimingsOutput(Vec<(String, f64)>);

/// The JSON key of a named timing: camelCase with `Ms` appended.
pub(crate) fn key(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    let mut upper = false;
    for c in name.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out + "Ms"
}

impl From<&QueryTimings> for TimingsOutput {
    fn from(t: &QueryTimings) -> Self {
        Self(
            t.named()
                .into_iter()
                .map(|(n, d)| (key(n), ms(d)))
                .collect(),
        )
    }
}

impl Serialize for TimingsOutput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl utoipa::PartialSchema for TimingsOutput {
    fn schema() -> RefOr<Schema> {
        let mut object = ObjectBuilder::new().description(Some(
            "Milliseconds per stage: `retrieveMs` covers the first retrieval, whose BM25 / \
             embedding / vector / fusion parts follow it; `totalMs` is the whole query.",
        ));
        for (name, _) in QueryTimings::default().named() {
            let key = key(name);
            object = object
                .property(
                    &key,
                    ObjectBuilder::new()
                        .schema_type(Type::Number)
                        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Double))),
                )
                .required(key);
        }
        RefOr::T(Schema::Object(object.build()))
    }
}

impl utoipa::ToSchema for TimingsOutput {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_engine_names_in_order() {
        assert_eq!(key("web_search"), "webSearchMs");
        let t = QueryTimings {
            web_search: std::time::Duration::from_millis(3),
            ..QueryTimings::default()
        };
        let json = serde_json::to_string(&TimingsOutput::from(&t)).unwrap();
        assert!(
            json.starts_with(r#"{"routeMs":0.0,"retrieveMs":0.0,"keywordMs""#),
            "{json}"
        );
        assert!(json.contains(r#""webSearchMs":3.0"#), "{json}");
        assert!(json.ends_with(r#""totalMs":0.0}"#), "{json}");
        let schema =
            serde_json::to_value(<TimingsOutput as utoipa::PartialSchema>::schema()).unwrap();
        let properties = schema["properties"].as_object().unwrap();
        assert_eq!(properties.len(), QueryTimings::default().named().len());
        assert_eq!(properties["webSearchMs"]["type"], "number");
        assert_eq!(
            schema["required"].as_array().unwrap().len(),
            properties.len()
        );
    }
}
