//! Live sessions (`stt.realtime`): the client's WebSocket ends at an API
//! process, which relays it to the worker that claimed the session's job.
//! That worker takes the relay here, on a listener of its own
//! (`sessions_bind`), at `/sessions/{job}` signed for the job by the
//! deployment's signing secret; the frames then pass between the two
//! processes directly, never through the database.
//!
//! The pipeline sees the relay as a [`Link`]: bounded channels of what the
//! client sent and of what goes back, so a client (or a pipeline) that
//! falls behind slows the other side down instead of filling memory.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::{SinkExt, StreamExt};
use mediagen_core::JobId;
use mediagen_store::Signer;
use tokio::sync::{mpsc, oneshot};

/// How long a signed relay address stays valid.
const SIGNED_FOR: i64 = 60;
/// Messages buffered each way between the socket and the pipeline.
const BUFFERED: usize = 32;
/// The longest a message waits for the relay to take it: the API (and
/// behind it the client) reading no faster ends the session.
const SEND_WITHIN: Duration = Duration::from_secs(5);
/// How long a relay that arrives before its session is ready waits for it:
/// the API connects once the job is claimed, and the session asks for its
/// relay a moment later (after its request is read).
const READY_WITHIN: Duration = Duration::from_secs(5);

/// What the client sent, as relayed.
#[derive(Debug)]
pub enum Incoming {
    /// A binary frame (audio).
    Binary(Vec<u8>),
    /// A text frame (a JSON control message).
    Text(String),
}

/// What goes back to the client.
#[derive(Debug)]
pub enum Outgoing {
    /// A text frame (a JSON event).
    Text(String),
    /// A binary frame (sound).
    Binary(Vec<u8>),
    /// The session's end: a WebSocket close code and its reason.
    Close(u16, String),
}

/// A session's side of its relay: `incoming` ends (yields `None`) when
/// the client or the API went away.
pub struct Link {
    pub incoming: mpsc::Receiver<Incoming>,
    pub outgoing: mpsc::Sender<Outgoing>,
}

/// The relay listener of one worker: the sessions waiting for their relay.
#[derive(Clone)]
pub struct SessionHub {
    inner: Arc<Hub>,
}

struct Hub {
    waiting: Mutex<HashMap<JobId, oneshot::Sender<WebSocket>>>,
    /// Woken whenever a session starts waiting for its relay.
    ready: tokio::sync::Notify,
    signer: Signer,
    address: String,
}

/// The signed path at which the worker of session `job` takes its relay.
pub fn relay_path(signer: &Signer, job: &JobId, now: i64) -> String {
    let expires = now + SIGNED_FOR;
    let signature = signer.sign(&signed_key(job), expires);
    format!(
        "/sessions/{}?expires={expires}&signature={signature}",
        job.as_str()
    )
}

fn signed_key(job: &JobId) -> String {
    format!("session/{}", job.as_str())
}

#[derive(serde::Deserialize)]
struct Signed {
    expires: i64,
    signature: String,
}

impl SessionHub {
    /// Listens on `bind` (`host:port`; port 0 picks one) and serves until
    /// the runtime stops; `advertise`, when set, is the address other
    /// processes reach it at (else the bound one).
    pub async fn start(bind: &str, advertise: &str, signer: Signer) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(bind).await?;
        let local: SocketAddr = listener.local_addr()?;
        let address = if !advertise.trim().is_empty() {
            advertise.trim().to_owned()
        } else if local.ip().is_unspecified() {
            // Bound to every interface: reached under the host's name.
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_owned())
                .unwrap_or_else(|_| "localhost".into());
            format!("{host}:{}", local.port())
        } else {
            local.to_string()
        };
        let hub = Self {
            inner: Arc::new(Hub {
                waiting: Mutex::default(),
                ready: tokio::sync::Notify::new(),
                signer,
                address,
            }),
        };
        let app = Router::new()
            .route("/sessions/{id}", get(take_relay))
            .with_state(hub.clone());
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "the session relay listener stopped");
            }
        });
        tracing::info!(address = %hub.inner.address, "taking session relays");
        Ok(hub)
    }

    /// Where other processes reach this listener (`host:port`).
    pub fn address(&self) -> &str {
        &self.inner.address
    }

    /// Waits up to `within` for the relay of session `job`.
    pub(crate) async fn wait_for(&self, job: &JobId, within: Duration) -> Option<Link> {
        let (tx, rx) = oneshot::channel();
        self.waiting().insert(job.clone(), tx);
        self.inner.ready.notify_waiters();
        let socket = tokio::time::timeout(within, rx).await.ok()?.ok();
        self.waiting().remove(job);
        socket.map(pump)
    }

    /// The session `job` waiting for its relay, waited for up to
    /// [`READY_WITHIN`] (the relay may come first); taken, so that one
    /// relay only is made.
    async fn ready(&self, job: &JobId) -> Option<oneshot::Sender<WebSocket>> {
        let deadline = tokio::time::Instant::now() + READY_WITHIN;
        loop {
            // Listening before looking: a session that starts waiting in
            // between is not missed.
            let woken = self.inner.ready.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if let Some(waiting) = self.waiting().remove(job) {
                return Some(waiting);
            }
            tokio::time::timeout_at(deadline, woken).await.ok()?;
        }
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, oneshot::Sender<WebSocket>>> {
        self.inner
            .waiting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// `GET /sessions/{id}`: the API's relay of a session this worker runs.
async fn take_relay(
    State(hub): State<SessionHub>,
    Path(id): Path<String>,
    Query(signed): Query<Signed>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let Some(job) = JobId::parse(&id) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let now = mediagen_core::time::now_ms() / 1000;
    if hub
        .inner
        .signer
        .verify(&signed_key(&job), signed.expires, &signed.signature, now)
        .is_err()
    {
        return StatusCode::FORBIDDEN.into_response();
    }
    let Some(waiting) = hub.ready(&job).await else {
        return StatusCode::NOT_FOUND.into_response();
    };
    upgrade.on_upgrade(move |socket| async move {
        let _ = waiting.send(socket);
    })
}

/// The socket as a [`Link`]: one task reads the relay's frames into
/// `incoming` (and, once the session stops taking them, reads on and drops
/// them), another writes `outgoing` to it; after the close it sends, the
/// writer waits for the relay's own close (the closing handshake, so that
/// no unread frame makes the connection reset and lose the close).
fn pump(socket: WebSocket) -> Link {
    let (in_tx, in_rx) = mpsc::channel(BUFFERED);
    let (out_tx, mut out_rx) = mpsc::channel::<Outgoing>(BUFFERED);
    let (mut sink, mut stream) = socket.split();
    let mut reader = tokio::spawn(async move {
        let mut forward = true;
        while let Some(Ok(frame)) = stream.next().await {
            let incoming = match frame {
                Message::Binary(b) => Incoming::Binary(b.to_vec()),
                Message::Text(t) => Incoming::Text(t.to_string()),
                Message::Close(_) => break,
                Message::Ping(_) | Message::Pong(_) => continue,
            };
            if forward && in_tx.send(incoming).await.is_err() {
                forward = false;
            }
        }
        // Dropping `in_tx` tells the session its client is gone.
    });
    tokio::spawn(async move {
        loop {
            let (message, last) = match out_rx.recv().await {
                Some(Outgoing::Text(t)) => (Message::Text(t.into()), false),
                Some(Outgoing::Binary(b)) => (Message::Binary(b.into()), false),
                Some(Outgoing::Close(code, reason)) => (
                    Message::Close(Some(CloseFrame {
                        code,
                        reason: reason.into(),
                    })),
                    true,
                ),
                None => (Message::Close(None), true),
            };
            let sent = tokio::time::timeout(SEND_WITHIN, sink.send(message)).await;
            if last || !matches!(sent, Ok(Ok(()))) {
                break;
            }
        }
        if tokio::time::timeout(SEND_WITHIN, &mut reader)
            .await
            .is_err()
        {
            reader.abort();
        }
    });
    Link {
        incoming: in_rx,
        outgoing: out_tx,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn hub() -> SessionHub {
        SessionHub::start("127.0.0.1:0", "", Signer::new(b"a test secret"))
            .await
            .unwrap()
    }

    fn url(hub: &SessionHub, job: &JobId) -> String {
        let now = mediagen_core::time::now_ms() / 1000;
        let path = relay_path(&hub.inner.signer, job, now);
        format!("ws://{}{path}", hub.address())
    }

    /// The API connects once the job is claimed, which may be before the
    /// session asks for its relay: the relay waits for it, and the frames
    /// then pass.
    #[tokio::test]
    async fn a_relay_that_comes_before_its_session_is_taken() {
        let hub = hub().await;
        let job = JobId::random();
        let relay = tokio::spawn(tokio_tungstenite::connect_async(url(&hub, &job)));
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut link = hub
            .wait_for(&job, Duration::from_secs(5))
            .await
            .expect("the early relay is taken");
        let (mut socket, _) = relay.await.unwrap().expect("the relay is upgraded");
        socket
            .send(tokio_tungstenite::tungstenite::Message::Text(
                "hello".into(),
            ))
            .await
            .unwrap();
        match link.incoming.recv().await {
            Some(Incoming::Text(t)) => assert_eq!(t, "hello"),
            other => panic!("{other:?}"),
        }
    }

    /// A relay for a session this worker does not run, or one not signed
    /// for it, is refused (after the wait, for an unknown one).
    #[tokio::test]
    async fn a_relay_of_no_session_or_a_forged_one_is_refused() {
        let hub = hub().await;
        let job = JobId::random();
        let started = std::time::Instant::now();
        let refused = tokio_tungstenite::connect_async(url(&hub, &job)).await;
        assert!(refused.is_err());
        assert!(started.elapsed() >= READY_WITHIN - Duration::from_millis(100));
        let forged = format!(
            "ws://{}/sessions/{}?expires=9999999999&signature=AAAA",
            hub.address(),
            job.as_str()
        );
        let waiting = {
            let hub = hub.clone();
            let job = job.clone();
            tokio::spawn(async move { hub.wait_for(&job, Duration::from_secs(2)).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(tokio_tungstenite::connect_async(forged).await.is_err());
        assert!(
            waiting.await.unwrap().is_none(),
            "a forged relay is no relay"
        );
    }
}
