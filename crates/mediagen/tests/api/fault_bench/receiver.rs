//! The webhook receiver: records every delivery (its `webhook-id`, event
//! type and job) and answers 204.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct Delivery {
    pub id: String,
    pub event: String,
    pub job: String,
}

pub struct Receiver {
    pub url: String,
    pub log: Arc<Mutex<Vec<Delivery>>>,
}

impl Receiver {
    pub async fn start() -> Self {
        let log: Arc<Mutex<Vec<Delivery>>> = Arc::default();
        let router = axum::Router::new()
            .route("/hook", post(record))
            .with_state(log.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { url, log }
    }

    pub fn deliveries(&self) -> Vec<Delivery> {
        self.log.lock().unwrap().clone()
    }
}

async fn record(
    State(log): State<Arc<Mutex<Vec<Delivery>>>>,
    headers: HeaderMap,
    body: String,
) -> StatusCode {
    let event: Value = serde_json::from_str(&body).unwrap_or_default();
    let id = headers
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    log.lock().unwrap().push(Delivery {
        id,
        event: event["type"].as_str().unwrap_or_default().to_owned(),
        job: event["data"]["id"].as_str().unwrap_or_default().to_owned(),
    });
    StatusCode::NO_CONTENT
}
