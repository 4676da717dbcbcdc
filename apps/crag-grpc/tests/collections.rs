//! Collections over gRPC, and tenancy: a token limited to collection `a` gets NOT_FOUND for
//! collection `b` and for `default` on every data RPC, sessions included, and may not manage
//! collections without `admin`.

use crag_grpc::pb::crag_client::CragClient;
use crag_grpc::pb::{
    AskRequest, CollectionRequest, CreateCollectionRequest, DeleteDocumentRequest, Document,
    ListCollectionsRequest, ListSessionsRequest, QueryRequest, SessionRequest, StatsRequest,
};
use crag_grpc::COLLECTION_METADATA;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Code, Request};

mod support;
use support::{server, TOKEN};

const TEAM_A: &str = "grpc-team-a-token-0123456789";
const SESSION: &str = "0123456789abcdef0123456789abcdef";

/// `message` as `token` sends it to `collection` (`None`: no metadata).
fn call<T>(token: &str, collection: Option<&str>, message: T) -> Request<T> {
    let mut request = Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        MetadataValue::try_from(format!("Bearer {token}")).unwrap(),
    );
    if let Some(name) = collection {
        request
            .metadata_mut()
            .insert(COLLECTION_METADATA, MetadataValue::try_from(name).unwrap());
    }
    request
}

fn tea() -> Document {
    Document {
        id: "tea.md".into(),
        text: "Green tea steeps below boiling.".into(),
        ..Document::default()
    }
}

fn question() -> QueryRequest {
    QueryRequest {
        query: "green tea".into(),
        use_crag: Some(false),
        ..QueryRequest::default()
    }
}

fn ask() -> AskRequest {
    AskRequest {
        query: "green tea".into(),
        session_id: SESSION.into(),
        ..AskRequest::default()
    }
}

/// The code of every data RPC `token` sends to `collection`.
async fn codes(
    client: &mut CragClient<Channel>,
    token: &str,
    collection: Option<&str>,
) -> Vec<(&'static str, Code)> {
    let code = |r: Result<(), tonic::Status>| r.map_or_else(|s| s.code(), |()| Code::Ok);
    let session = || SessionRequest {
        session_id: SESSION.into(),
    };
    vec![
        (
            "Query",
            code(
                client
                    .query(call(token, collection, question()))
                    .await
                    .map(drop),
            ),
        ),
        (
            "Ingest",
            code(
                client
                    .ingest(call(token, collection, tokio_stream::iter(vec![tea()])))
                    .await
                    .map(drop),
            ),
        ),
        (
            "DeleteDocument",
            code(
                client
                    .delete_document(call(
                        token,
                        collection,
                        DeleteDocumentRequest {
                            id: "nope.md".into(),
                        },
                    ))
                    .await
                    .map(drop),
            ),
        ),
        (
            "Stats",
            code(
                client
                    .stats(call(token, collection, StatsRequest {}))
                    .await
                    .map(drop),
            ),
        ),
        (
            "Ask",
            code(client.ask(call(token, collection, ask())).await.map(drop)),
        ),
        (
            "AskStream",
            code(
                client
                    .ask_stream(call(token, collection, ask()))
                    .await
                    .map(drop),
            ),
        ),
        (
            "ListSessions",
            code(
                client
                    .list_sessions(call(token, collection, ListSessionsRequest::default()))
                    .await
                    .map(drop),
            ),
        ),
        (
            "GetSession",
            code(
                client
                    .get_session(call(token, collection, session()))
                    .await
                    .map(drop),
            ),
        ),
        (
            "DeleteSession",
            code(
                client
                    .delete_session(call(token, collection, session()))
                    .await
                    .map(drop),
            ),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_one_collection_finds_no_other_on_any_rpc() {
    let s = server(
        |c| {
            c.sessions.backend = crag_config::SessionBackend::Sqlite;
            c.auth.scoped = vec![crag_config::ScopedToken {
                token: TEAM_A.into(),
                collections: vec!["a".into()],
                write: true,
                ..crag_config::ScopedToken::default()
            }];
        },
        &[TOKEN],
    )
    .await;
    let mut client = s.client().await;
    for name in ["a", "b"] {
        let created = client
            .create_collection(call(
                TOKEN,
                None,
                CreateCollectionRequest {
                    name: name.into(),
                    overrides_json: r#"{"retrieval": {"fusion": "rrf"}}"#.into(),
                },
            ))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(created.name, name);
        assert!(created.overrides_json.contains("rrf"), "{created:?}");
        client
            .ingest(call(TOKEN, Some(name), tokio_stream::iter(vec![tea()])))
            .await
            .unwrap();
        client.ask(call(TOKEN, Some(name), ask())).await.unwrap();
    }
    let again = client
        .create_collection(call(
            TOKEN,
            None,
            CreateCollectionRequest {
                name: "a".into(),
                overrides_json: String::new(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(again.code(), Code::AlreadyExists);
    let bad = client
        .create_collection(call(
            TOKEN,
            None,
            CreateCollectionRequest {
                name: "c".into(),
                overrides_json: "[1]".into(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);

    // The RPCs checked are every data RPC the proto declares.
    let declared: Vec<String> = include_str!("../../../proto/crag/v1/crag.proto")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("rpc "))
        .filter_map(|l| l.split('(').next())
        .map(|name| name.trim().to_owned())
        .filter(|name| name != "Evaluate" && !name.contains("Collection"))
        .collect();
    let checked: Vec<String> = codes(&mut client, TOKEN, Some("nope"))
        .await
        .into_iter()
        .map(|(rpc, _)| rpc.to_owned())
        .collect();
    assert_eq!(checked, declared, "every data RPC is checked");

    for collection in [Some("b"), Some("default"), None, Some("nope")] {
        for (rpc, code) in codes(&mut client, TEAM_A, collection).await {
            assert_eq!(code, Code::NotFound, "{rpc} on {collection:?}");
        }
    }
    for (rpc, code) in codes(&mut client, TEAM_A, Some("a")).await {
        // Its own collection answers; only the document to delete does not exist.
        let expected = match rpc {
            "DeleteDocument" => Code::NotFound,
            _ => Code::Ok,
        };
        assert_eq!(code, expected, "{rpc} on a");
    }
    // b's session is still b's.
    client
        .get_session(call(
            TOKEN,
            Some("b"),
            SessionRequest {
                session_id: SESSION.into(),
            },
        ))
        .await
        .unwrap();

    let listed = client
        .list_collections(call(TEAM_A, None, ListCollectionsRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.names, vec!["a"]);
    let e = client
        .describe_collection(call(TEAM_A, None, CollectionRequest { name: "b".into() }))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    let e = client
        .delete_collection(call(TEAM_A, None, CollectionRequest { name: "a".into() }))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    let e = client
        .create_collection(call(
            TEAM_A,
            None,
            CreateCollectionRequest {
                name: "a2".into(),
                overrides_json: String::new(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);

    let deleted = client
        .delete_collection(call(TOKEN, None, CollectionRequest { name: "b".into() }))
        .await
        .unwrap()
        .into_inner();
    assert!(deleted.deleted);
    let described = client
        .describe_collection(call(TOKEN, None, CollectionRequest { name: "a".into() }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(described.stats.unwrap().documents, 1);
    let listed = client
        .list_collections(call(TOKEN, None, ListCollectionsRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.names, vec!["default", "a"]);
    s.shutdown().await;
}
