//! The standard health service (`grpc.health.v1.Health`), answered from the application's
//! readiness: `Check` is SERVING only when [`Api::readiness`] passes (not draining, the
//! indexes readable: an object store that is down turns it NOT_SERVING), as HTTP's
//! `/readyz`. `Watch` sends the status, then each change, checked every second.

use std::pin::Pin;
use std::time::Duration;

use crag_app::Api;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

/// The services a health request may name: the server as a whole (`""`) and crag's.
const SERVICES: &[&str] = &["", "crag.v1.Crag"];

/// How often `Watch` checks readiness again.
const WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// The health service over an [`Api`].
#[derive(Clone)]
pub struct ReadinessHealth {
    api: Api,
}

impl ReadinessHealth {
    /// The health server answering from `api`'s readiness.
    pub fn server(api: Api) -> HealthServer<Self> {
        HealthServer::new(Self { api })
    }
}

async fn serving_status(api: &Api) -> ServingStatus {
    match api.readiness().await {
        Ok(()) => ServingStatus::Serving,
        Err(e) => {
            tracing::debug!(reason = %e.message, "health: not serving");
            ServingStatus::NotServing
        }
    }
}

fn known(service: &str) -> Result<(), Status> {
    if SERVICES.contains(&service) {
        Ok(())
    } else {
        Err(Status::not_found(format!(
            "unknown service `{service}`: health knows \"\" and \"crag.v1.Crag\""
        )))
    }
}

fn response(status: ServingStatus) -> HealthCheckResponse {
    HealthCheckResponse {
        status: status as i32,
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Health for ReadinessHealth {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        known(&request.get_ref().service)?;
        Ok(Response::new(response(serving_status(&self.api).await)))
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        known(&request.get_ref().service)?;
        let api = self.api.clone();
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tokio::spawn(async move {
            let mut last = None;
            loop {
                let status = serving_status(&api).await;
                if last != Some(status) {
                    last = Some(status);
                    if tx.send(Ok(response(status))).await.is_err() {
                        return;
                    }
                }
                tokio::select! {
                    () = tokio::time::sleep(WATCH_INTERVAL) => {}
                    () = tx.closed() => return,
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }
}
