//! Property tests of what an MCP client sends: any JSON object as `search` or `ask` arguments
//! either is refused by the schema (unknown fields among them) or reaches the use case's checks,
//! which accept it or refuse it with a message; nothing panics, and what is accepted is what
//! was sent.

use crag_app::Limits;
use crag_config::LimitsSection;
use crag_mcp::wire::{AskArgs, SearchArgs};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const SEARCH_KEYS: [&str; 7] = [
    "query",
    "top_k",
    "collection",
    "filter",
    "use_crag",
    "source_prefix",
    "kinds",
];
const ASK_KEYS: [&str; 5] = [
    "question",
    "session_id",
    "new_session",
    "top_k",
    "collection",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u32..2000).prop_map(Value::from),
        "[ a-z0-9\\t\\n#$.:/{}-]{0,40}".prop_map(Value::from),
        prop::collection::vec("[a-z]{0,8}", 0..4).prop_map(|v| json!(v)),
        Just(json!({"year": {"$gte": 2020}})),
        Just(json!({"kind": "prose"})),
        Just(json!({"$bogus": 1})),
        Just(json!({"tags": {"$in": "not a list"}})),
    ]
}

fn object(keys: &'static [&'static str]) -> impl Strategy<Value = Map<String, Value>> {
    let key = prop_oneof![
        4 => prop::sample::select(keys).prop_map(str::to_owned),
        1 => "[a-z_]{1,10}",
    ];
    prop::collection::btree_map(key, leaf(), 0..8).prop_map(|m| m.into_iter().collect())
}

fn limits() -> Limits {
    Limits::from(LimitsSection::default())
}

proptest! {
    #[test]
    fn search_arguments_are_refused_or_checked(args in object(&SEARCH_KEYS)) {
        let unknown = args.keys().any(|k| !SEARCH_KEYS.contains(&k.as_str()));
        match serde_json::from_value::<SearchArgs>(Value::Object(args.clone())) {
            Err(e) => prop_assert!(!e.to_string().is_empty()),
            Ok(parsed) => {
                prop_assert!(!unknown, "an unknown field was accepted: {args:?}");
                let params = parsed.into_params(None);
                prop_assert_eq!(Some(params.query.as_str()), args.get("query").and_then(Value::as_str));
                prop_assert_eq!(params.metadata.as_ref(), args.get("filter").filter(|v| !v.is_null()));
                match limits().query_request(&params) {
                    Ok(request) => {
                        prop_assert_eq!(request.query.as_str(), params.query.trim());
                        prop_assert_eq!(request.use_crag, params.use_crag.unwrap_or(true));
                    }
                    Err(e) => prop_assert!(!e.0.is_empty()),
                }
            }
        }
    }

    #[test]
    fn ask_arguments_are_refused_or_checked(args in object(&ASK_KEYS)) {
        let unknown = args.keys().any(|k| !ASK_KEYS.contains(&k.as_str()));
        match serde_json::from_value::<AskArgs>(Value::Object(args.clone())) {
            Err(e) => prop_assert!(!e.to_string().is_empty()),
            Ok(parsed) => {
                prop_assert!(!unknown, "an unknown field was accepted: {args:?}");
                let params = parsed.into_params(None);
                prop_assert_eq!(Some(params.query.query.as_str()), args.get("question").and_then(Value::as_str));
                prop_assert_eq!(params.new_session, args.get("new_session").and_then(Value::as_bool).unwrap_or(false));
                if let Err(e) = limits().query_request(&params.query) {
                    prop_assert!(!e.0.is_empty());
                }
            }
        }
    }
}
