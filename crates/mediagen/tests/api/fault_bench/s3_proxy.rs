//! A faulty S3 endpoint: a proxy in front of the test's S3 server that
//! passes requests through, refuses every connection (`Down`: each one is
//! accepted and closed at once, and open ones are cut), or answers a third
//! of requests `503 SlowDown` as S3 does when it sheds load (`Flaky`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum S3Mode {
    Pass,
    Down,
    Flaky,
}

pub struct S3Proxy {
    /// The endpoint the deployment is given.
    pub url: String,
    mode: watch::Sender<S3Mode>,
    /// Connections refused and requests answered 503.
    pub refused: Arc<AtomicUsize>,
    pub failed: Arc<AtomicUsize>,
}

#[derive(Clone)]
struct Forward {
    client: reqwest::Client,
    upstream: String,
    mode: watch::Receiver<S3Mode>,
    seen: Arc<AtomicUsize>,
    failed: Arc<AtomicUsize>,
}

impl S3Proxy {
    pub async fn start(upstream: &str) -> Self {
        let (mode, rx) = watch::channel(S3Mode::Pass);
        let (refused, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        // The HTTP layer: forwards each request, or fails it.
        let inner = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let inner_addr = inner.local_addr().unwrap();
        let forward = Forward {
            client: reqwest::Client::new(),
            upstream: upstream.trim_end_matches('/').to_owned(),
            mode: rx.clone(),
            seen: Arc::default(),
            failed: failed.clone(),
        };
        let router = axum::Router::new().fallback(relay).with_state(forward);
        tokio::spawn(async move { axum::serve(inner, router).await });
        // The connection layer in front of it: the endpoint clients see.
        let outer = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", outer.local_addr().unwrap());
        let counted = refused.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = outer.accept().await else {
                    continue;
                };
                if *rx.borrow() == S3Mode::Down {
                    counted.fetch_add(1, Ordering::Relaxed);
                    continue; // dropped: closed at once
                }
                let mut down = rx.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(inner_addr).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = down.wait_for(|m| *m == S3Mode::Down) => {}
                    }
                });
            }
        });
        Self {
            url,
            mode,
            refused,
            failed,
        }
    }

    pub fn set(&self, mode: S3Mode) {
        self.mode.send_replace(mode);
    }
}

/// One request: a 503 for every third while flaky, else the upstream's
/// answer.
async fn relay(
    State(f): State<Forward>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let flaky = *f.mode.borrow() == S3Mode::Flaky;
    if flaky && f.seen.fetch_add(1, Ordering::Relaxed) % 3 == 0 {
        f.failed.fetch_add(1, Ordering::Relaxed);
        let xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>\
                   <Message>Please reduce your request rate.</Message></Error>";
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "application/xml")],
            xml,
        )
            .into_response();
    }
    let target = format!(
        "{}{}",
        f.upstream,
        uri.path_and_query().map(|p| p.as_str()).unwrap_or("/")
    );
    let mut request = f.client.request(method, target).body(body);
    for (name, value) in &headers {
        if ![
            header::HOST,
            header::CONTENT_LENGTH,
            header::CONNECTION,
            header::TRANSFER_ENCODING,
        ]
        .contains(name)
        {
            request = request.header(name, value);
        }
    }
    let Ok(answer) = request.send().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let status = answer.status();
    // Content-Length stays: a HEAD's is the object's size.
    let mut out = HeaderMap::new();
    for (name, value) in answer.headers() {
        if ![header::CONNECTION, header::TRANSFER_ENCODING].contains(name) {
            out.insert(name, value.clone());
        }
    }
    let bytes = answer.bytes().await.unwrap_or_default();
    (status, out, bytes).into_response()
}
