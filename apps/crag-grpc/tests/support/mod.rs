//! What the gRPC tests share: the service on 127.0.0.1 over the real embedded stack in a
//! temporary data directory, and its generated client.
// Each test binary uses a part of this module.
#![allow(dead_code)]

use std::time::Duration;

use crag_app::Config;
use crag_app::TokenSet;
use crag_grpc::pb::crag_client::CragClient;
use crag_grpc::CragService;
use tonic::transport::Channel;

pub const TOKEN: &str = "grpc-token-0123456789";

pub struct Server {
    pub addr: std::net::SocketAddr,
    pub engine: crag_engine::Engine,
    /// The application behind the service (readiness, draining).
    pub api: crag_app::Api,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
    _dir: tempfile::TempDir,
}

pub async fn server(tweak: impl FnOnce(&mut Config), tokens: &[&str]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config {
        data_dir: dir.path().join("data"),
        ..Config::default()
    };
    tweak(&mut config);
    config.validate().unwrap();
    let engine = crag_app::compose::engine(&config).await.unwrap();
    let tokens: Vec<String> = tokens.iter().map(|t| t.to_string()).collect();
    let service = CragService::new(
        engine.clone(),
        &config,
        TokenSet::new(&tokens).with_scoped(&config).unwrap(),
    )
    .unwrap();
    let limits = service.connection_limits();
    let api = service.api();
    let routes = crag_grpc::routes(service).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(crag_grpc::serve(
        listener,
        routes,
        async move {
            let _ = stopped.await;
        },
        Duration::from_secs(5),
        limits,
    ));
    Server {
        addr,
        engine,
        api,
        stop: Some(stop),
        task,
        _dir: dir,
    }
}

impl Server {
    /// The server's data directory.
    pub fn data_dir(&self) -> std::path::PathBuf {
        self._dir.path().join("data")
    }

    pub async fn channel(&self) -> Channel {
        Channel::from_shared(format!("http://{}", self.addr))
            .unwrap()
            .connect()
            .await
            .unwrap()
    }

    pub async fn client(&self) -> CragClient<Channel> {
        CragClient::new(self.channel().await).max_decoding_message_size(64 * 1024 * 1024)
    }

    /// The value of counter `name` with exactly these labels in the engine's registry (0 when
    /// absent).
    pub fn counter(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let families = self.engine.metrics().registry().gather();
        let Some(family) = families.iter().find(|f| f.name() == name) else {
            return 0.0;
        };
        family
            .get_metric()
            .iter()
            .find(|m| {
                let got: Vec<(&str, &str)> = m
                    .get_label()
                    .iter()
                    .map(|l| (l.name(), l.value()))
                    .collect();
                labels.iter().all(|want| got.contains(want)) && got.len() == labels.len()
            })
            .map_or(0.0, |m| m.get_counter().get_value())
    }

    pub async fn shutdown(mut self) {
        self.stop.take().unwrap().send(()).unwrap();
        self.task.await.unwrap().unwrap();
    }
}
