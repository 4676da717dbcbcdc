//! Named collections over the real embedded stack (ONNX MiniLM, Tantivy, LanceDB, SQLite
//! sessions): created, kept apart, reopened after a restart, model fixed at creation, deleted;
//! and what a token limited to some collections may do.

use crag_app::{Api, Caller, Code, Config, DocumentParams, QueryParams, TokenSet};

fn doc(id: &str, text: &str) -> DocumentParams {
    DocumentParams {
        id: id.into(),
        text: text.into(),
        ..DocumentParams::default()
    }
}

fn question(text: &str) -> QueryParams {
    QueryParams {
        query: text.into(),
        use_crag: Some(false),
        ..QueryParams::default()
    }
}

async fn api(config: &Config) -> Api {
    let engine = crag_app::compose::engine(config).await.unwrap();
    Api::new(engine, config, TokenSet::default())
}

async fn found(api: &Api, query: &str) -> Vec<String> {
    let (_, outcome) = api.query(&question(query)).await.unwrap();
    outcome
        .artifacts
        .iter()
        .map(|a| a.chunk.document_id.as_str().to_owned())
        .collect()
}

fn overrides(json: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    json.as_object().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collections_are_created_kept_apart_reopened_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        data_dir: dir.path().join("data"),
        ..Config::parse("[sessions]\nbackend = \"sqlite\"\n").unwrap()
    };
    let admin = Caller::default();
    let api1 = api(&config).await;
    api1.ingest(vec![doc(
        "bread.md",
        "Sourdough bread rises with wild yeast.",
    )])
    .await
    .unwrap();

    // Creating: the model is fixed, the overrides kept.
    let info = api1
        .create_collection(
            &admin,
            "tea",
            overrides(serde_json::json!({"retrieval": {"fusion": "rrf"}})),
        )
        .await
        .unwrap();
    assert_eq!(info.name, "tea");
    assert_eq!(info.stats.documents, 0);
    assert_eq!(
        info.embedding_model,
        api1.stats().await.unwrap().embedding_model
    );
    assert_eq!(info.overrides["embedder"]["precision"], "int8", "{info:?}");
    assert_eq!(info.overrides["retrieval"]["fusion"], "rrf");
    let tea = api1.in_collection(&admin, Some("tea")).await.unwrap();
    tea.ingest(vec![doc(
        "green.md",
        "Green tea steeps in water below boiling.",
    )])
    .await
    .unwrap();
    assert_eq!(
        tea.engine().config().fusion.name(),
        "rrf",
        "the override applies"
    );

    // Kept apart.
    assert_eq!(found(&tea, "green tea water").await, vec!["green.md"]);
    assert_eq!(found(&tea, "sourdough bread yeast").await, vec!["green.md"]);
    assert!(!found(&api1, "green tea water")
        .await
        .contains(&"green.md".to_owned()));
    assert_eq!(api1.stats().await.unwrap().documents, 1);
    assert_eq!(tea.stats().await.unwrap().documents, 1);

    // Refusals, nothing left behind.
    let again = api1
        .create_collection(&admin, "tea", serde_json::Map::new())
        .await
        .unwrap_err();
    assert_eq!(again.code, Code::AlreadyExists, "{again:?}");
    for (name, over, code) in [
        ("Bad/Name", serde_json::json!({}), Code::InvalidArgument),
        ("default", serde_json::json!({}), Code::AlreadyExists),
        (
            "odd",
            serde_json::json!({"retrieval": {"bm25_b": 7.0}}),
            Code::InvalidArgument,
        ),
        (
            "odd",
            serde_json::json!({"data_dir": "/tmp"}),
            Code::InvalidArgument,
        ),
        (
            "odd",
            serde_json::json!({"retrieval": {"nope": 1}}),
            Code::InvalidArgument,
        ),
    ] {
        let e = api1
            .create_collection(&admin, name, overrides(over))
            .await
            .unwrap_err();
        assert_eq!(e.code, code, "{name}: {e:?}");
    }
    assert!(!config.data_dir.join("collections/odd").exists());
    assert_eq!(
        api1.list_collections(&admin).await.unwrap(),
        vec!["default", "tea"]
    );
    let missing = api1
        .in_collection(&admin, Some("coffee"))
        .await
        .unwrap_err();
    assert_eq!(missing.code, Code::NotFound);

    // A restart reopens the collection as it was, on first use.
    drop((tea, api1));
    let api2 = api(&config).await;
    assert_eq!(
        api2.list_collections(&admin).await.unwrap(),
        vec!["default", "tea"]
    );
    let tea = api2.in_collection(&admin, Some("tea")).await.unwrap();
    assert_eq!(found(&tea, "green tea water").await, vec!["green.md"]);
    let described = api2.describe_collection(&admin, "tea").await.unwrap();
    assert_eq!(described.stats.documents, 1);
    let default = api2.describe_collection(&admin, "default").await.unwrap();
    assert_eq!((default.created_ms, default.stats.documents), (None, 1));

    // Deleting removes the directory and the collection; default stays.
    drop(tea);
    api2.delete_collection(&admin, "tea").await.unwrap();
    assert!(!config.data_dir.join("collections/tea").exists());
    assert_eq!(
        api2.list_collections(&admin).await.unwrap(),
        vec!["default"]
    );
    let gone = api2.in_collection(&admin, Some("tea")).await.unwrap_err();
    assert_eq!(gone.code, Code::NotFound);
    let e = api2.delete_collection(&admin, "default").await.unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);
    assert_eq!(api2.stats().await.unwrap().documents, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_collection_keeps_the_model_it_was_created_with() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        data_dir: dir.path().join("data"),
        ..Config::default()
    };
    let admin = Caller::default();
    let api1 = api(&config).await;
    let default_model = api1.stats().await.unwrap().embedding_model;
    let float = api1
        .create_collection(
            &admin,
            "float",
            overrides(serde_json::json!({"embedder": {"precision": "float32"}})),
        )
        .await
        .unwrap();
    assert_ne!(float.embedding_model, default_model, "its own model");
    let notes = api1.in_collection(&admin, Some("float")).await.unwrap();
    notes
        .ingest(vec![doc("a.md", "Collections fix their embedding model.")])
        .await
        .unwrap();
    assert_eq!(found(&notes, "embedding model").await, vec!["a.md"]);
    drop((notes, api1));

    // Reopened with its own model beside the default one's.
    let api2 = api(&config).await;
    let notes = api2.in_collection(&admin, Some("float")).await.unwrap();
    assert_eq!(
        notes.stats().await.unwrap().embedding_model,
        float.embedding_model
    );
    assert_eq!(api2.stats().await.unwrap().embedding_model, default_model);
    drop((notes, api2));

    // A descriptor edited to another model than its vectors: refused with the reason.
    let path = config.data_dir.join("collections/float/collection.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("\"float32\"", "\"int8\"")).unwrap();
    let api3 = api(&config).await;
    let e = api3.in_collection(&admin, Some("float")).await.unwrap_err();
    assert_eq!(e.code, Code::Unavailable, "{e:?}");
    assert!(e.message.contains("embedding model"), "{}", e.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_sees_only_its_collections_and_manages_them_only_as_admin() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        data_dir: dir.path().join("data"),
        ..Config::default()
    };
    let api = api(&config).await;
    let admin = Caller::default();
    api.create_collection(&admin, "billing", serde_json::Map::new())
        .await
        .unwrap();
    let billing = Caller {
        collections: Some(vec!["billing".into(), "billing-archive".into()]),
        admin: false,
        ..Caller::default()
    };
    assert_eq!(
        api.list_collections(&billing).await.unwrap(),
        vec!["billing"]
    );
    for name in [None, Some("default"), Some("other")] {
        let e = api.in_collection(&billing, name).await.unwrap_err();
        assert_eq!(e.code, Code::NotFound, "{name:?}");
    }
    assert!(api.in_collection(&billing, Some("billing")).await.is_ok());
    let e = api
        .describe_collection(&billing, "default")
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::NotFound);
    let e = api
        .create_collection(&billing, "billing-archive", serde_json::Map::new())
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::PermissionDenied);
    let e = api
        .delete_collection(&billing, "billing")
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::PermissionDenied);
    let e = api
        .delete_collection(&billing, "default")
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::NotFound, "not revealed");

    let billing_admin = Caller {
        admin: true,
        ..billing
    };
    let e = api
        .create_collection(&billing_admin, "elsewhere", serde_json::Map::new())
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::PermissionDenied, "only among its collections");
    api.create_collection(&billing_admin, "billing-archive", serde_json::Map::new())
        .await
        .unwrap();
    api.delete_collection(&billing_admin, "billing-archive")
        .await
        .unwrap();
}
