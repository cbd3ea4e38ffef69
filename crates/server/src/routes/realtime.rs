//! Live sessions over WebSocket. The API process answers the upgrade and
//! relays the socket to the worker that claimed the session's job; it
//! never touches an engine, and the frames never pass through the database.
//!
//! The upgrade is answered only once the session has a worker: its key
//! level (the route's), the query, the account's session cap and its
//! credits (the first hold) are checked, the job created, and a worker with
//! a free session slot must claim it within [`CLAIM_WITHIN`] (else 503
//! `no_session_slot`, the hold refunded).

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use mediagen_core::job::{Job, JobStatus};
use mediagen_core::{ApiError, ErrorCode};
use mediagen_jobs::stt_realtime::{close, Closing, Dialect, Frame, LiveSttRequest, Native};
use mediagen_jobs::tts_realtime::LiveTtsRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame as RelayClose;
use tokio_tungstenite::tungstenite::Message as Relayed;

use crate::error::{ApiResult, Error};
use crate::extract::{Auth, JobOptions};
use crate::jobs::{create, JobSpec};
use crate::state::AppState;
use crate::voices::cloned_voice;

/// How long a session waits for a worker to claim it.
const CLAIM_WITHIN: Duration = Duration::from_secs(10);
/// The longest a frame waits for the client (or the worker) to take it:
/// a side that reads no faster ends the session.
const SEND_WITHIN: Duration = Duration::from_secs(5);
/// The largest message a client may send (a binary frame of audio).
const MAX_MESSAGE: usize = 128 * 1024;

/// Live transcription
///
/// A WebSocket (`GET` with `Upgrade: websocket`): 16-bit little-endian mono
/// PCM in binary frames at `sampleRate`, events out as JSON text frames:
/// `session.started`, `transcript.partial` (`text`, `stableText`: the words
/// two successive decodes agree on), `transcript.committed` (`text`,
/// `language`, `start`, `end`, `final`, `words`) at each end of turn (after
/// `silenceMs` of silence with `commit=vad`, or on `{"type":"commit"}`;
/// `final: true`) and where a long turn is cut while it goes on (`final:
/// false`: at a boundary two drafts agree on),
/// `session.ended`. `{"type":"finish"}` commits what is left and closes
/// (1000). Close codes: 1008 a malformed message, 1011 an internal error,
/// 1012 the worker went away (reconnect), 1013 the recogniser fell behind,
/// 4402 the balance ran out (the sound received was charged), 4408 idle for
/// `session_idle_seconds` or the session's longest length (3600 s) reached.
/// docs/api.md (Live transcription) has the whole protocol. Price:
/// `costs."stt.realtime"` credits per second of sound received, rounded
/// up; 30 s are held at the upgrade and the hold is kept 30 s ahead.
#[utoipa::path(get, path = "/v1/speech-to-text/realtime", tag = "voice", security(("bearer" = ["write"])),
    params(mediagen_jobs::stt_realtime::LiveSttQuery),
    responses((status = 101, description = "Switching to the session's WebSocket"),
              (status = 400, description = "`invalid_parameter` naming model, language, sampleRate, commit, silenceMs, prompt"),
              (status = 402, description = "`insufficient_credits`: the first 30 s are not covered"),
              (status = 426, description = "Not a WebSocket upgrade"),
              (status = 429, description = "`session_limit_exceeded`"),
              (status = 503, description = "`no_session_slot`")))]
pub async fn live_stt(
    State(state): State<AppState>,
    auth: Auth,
    Query(fields): Query<HashMap<String, String>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    // The query's types first (400), then the upgrade (426), then what
    // the query asks of this server. (A `token` was the authentication's.)
    let query = LiveSttRequest::query(&fields)?;
    let upgrade = websocket(upgrade)?;
    let request = LiveSttRequest::parse(
        query,
        state.catalog.recognisers.as_ref(),
        state.config.session_idle_seconds,
    )?;
    open(
        &state,
        &auth,
        JobSpec::of(&request, false)?,
        upgrade,
        Box::new(Native),
    )
    .await
}

/// Speech from streamed text
///
/// A WebSocket (`GET` with `Upgrade: websocket`): text in as it is
/// written, `{"type":"text","text":…}` (with `"flush": true` to speak what
/// waits now), `{"type":"flush"}`, `{"type":"finish"}` (speak what is
/// left, then close 1000); sound out. Each whole sentence (or, past 250
/// characters without one, the clause so far) is spoken as soon as it is
/// complete: an `audio` event (`piece`, `text`, `start` and `duration` in
/// seconds of the session's sound, `alignment`: `chars`,
/// `charStartTimesMs`, `charDurationsMs`) then its sound in binary frames
/// of `format` (`pcm` by default, `mp3` or `ogg`). `session.started`
/// first, `session.ended` last; `error` for a piece the voice cannot say
/// (the session goes on). Every voice of `GET /v1/voices`, cloned voices
/// included. Close codes as live transcription's (docs/api.md, Speech from
/// streamed text). Price: `costs."tts.realtime"` credits per character
/// spoken; 1000 characters are held at the upgrade and the hold is kept
/// 1000 ahead of the text sent to the voice.
#[utoipa::path(get, path = "/v1/text-to-speech/realtime", tag = "voice", security(("bearer" = ["write"])),
    params(mediagen_jobs::tts_realtime::LiveTtsQuery),
    responses((status = 101, description = "Switching to the session's WebSocket"),
              (status = 400, description = "`invalid_parameter` naming voiceId, format, sampleRate, speed or languageCode"),
              (status = 402, description = "`insufficient_credits`: the first 1000 characters are not covered"),
              (status = 404, description = "`voice_not_found`"),
              (status = 422, description = "`unprocessable_entity`: a rate the format does not take, or a language the voice does not speak"),
              (status = 426, description = "Not a WebSocket upgrade"),
              (status = 429, description = "`session_limit_exceeded`"),
              (status = 503, description = "`no_session_slot`")))]
pub async fn live_tts(
    State(state): State<AppState>,
    auth: Auth,
    Query(fields): Query<HashMap<String, String>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    let query = LiveTtsRequest::query(&fields)?;
    let upgrade = websocket(upgrade)?;
    let cloned = cloned_voice(&state, &auth.account_id, &query.voice_id).await?;
    let request = LiveTtsRequest::parse(
        query,
        state.catalog.voices.as_ref(),
        cloned,
        state.config.session_idle_seconds,
    )?;
    open(
        &state,
        &auth,
        JobSpec::of(&request, false)?,
        upgrade,
        Box::new(Native),
    )
    .await
}

/// The upgrade, or 426 for a request that is not one.
pub fn websocket(
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<WebSocketUpgrade> {
    Ok(upgrade.map_err(|_| {
        ApiError::new(ErrorCode::UpgradeRequired)
            .with_message("This is a WebSocket: send `Upgrade: websocket`.")
    })?)
}

/// Checks the account's cap, creates the session's job, waits for a worker
/// to claim it and connects to that worker; then answers the upgrade and
/// relays until either side ends.
pub async fn open(
    state: &AppState,
    auth: &Auth,
    spec: JobSpec,
    upgrade: WebSocketUpgrade,
    dialect: Box<dyn Dialect>,
) -> ApiResult<Response> {
    let limit = state.config.max_sessions_per_account;
    if state.db.open_sessions(&auth.account_id).await? >= limit {
        return Err(Error::from(
            ApiError::new(ErrorCode::SessionLimitExceeded)
                .with_message(format!("The account already holds {limit} live sessions."))
                .with_detail("limit", limit),
        )
        .with_retry_after(1));
    }
    let opts = JobOptions {
        respond_async: true,
        idempotency_key: None,
        webhook_url: None,
    };
    let (job, _) = create(state, auth, opts, spec).await?;
    state.events.job_submitted();
    let worker = match connect(state, &job).await {
        Some(w) => w,
        None => {
            state.db.cancel_job(&auth.account_id, &job.id).await?;
            return Err(Error::from(ApiError::new(ErrorCode::NoSessionSlot)).with_retry_after(2));
        }
    };
    // The worker ends the job (and settles it) when the relay ends; one
    // that died leaves it to its lease.
    Ok(upgrade
        .max_message_size(MAX_MESSAGE)
        .on_upgrade(move |client| relay(client, worker, dialect)))
}

type WorkerSocket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The worker's relay socket once one claimed `job`, or `None` when none
/// did in time (or its listener could not be reached).
async fn connect(state: &AppState, job: &Job) -> Option<WorkerSocket> {
    let started = std::time::Instant::now();
    let address = loop {
        let current = state.db.job_by_id(&job.id).await.ok()??;
        if current.status == JobStatus::Processing {
            if let Ok(Some(address)) = state.db.session_address(&job.id).await {
                break address;
            }
        } else if current.status != JobStatus::Queued {
            return None;
        }
        if started.elapsed() > CLAIM_WITHIN {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let now = mediagen_core::time::now_ms() / 1000;
    let path = mediagen_worker::session::relay_path(&state.signer, &job.id, now);
    let url = format!("ws://{address}{path}");
    match tokio_tungstenite::connect_async(url.as_str()).await {
        Ok((socket, _)) => Some(socket),
        Err(e) => {
            tracing::warn!(error = %e, %address, "the session's worker could not be reached");
            None
        }
    }
}

/// Moves frames between the client and the worker until either ends,
/// each read through the session's `dialect`. A worker that ends without
/// a close of its own closes the client with 1012 (reconnect).
async fn relay(mut client: WebSocket, worker: WorkerSocket, mut dialect: Box<dyn Dialect>) {
    let (mut to_worker, mut from_worker) = worker.split();
    let end = loop {
        tokio::select! {
            frame = client.recv() => {
                let frame = match frame {
                    Some(Ok(Message::Binary(b))) => Frame::Binary(b.to_vec()),
                    Some(Ok(Message::Text(t))) => Frame::Text(t.as_str().to_owned()),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => {
                        let _ = to_worker.send(Relayed::Close(None)).await;
                        // The reply to the client's close goes out.
                        let _ = client.flush().await;
                        return;
                    }
                };
                let relay = match dialect.client(frame) {
                    Ok(relay) => relay,
                    Err(refused) => {
                        let _ = to_worker.send(normal_close()).await;
                        break refused;
                    }
                };
                for message in relay.client {
                    let sent = tokio::time::timeout(SEND_WITHIN, client.send(Message::Text(message.into()))).await;
                    if !matches!(sent, Ok(Ok(()))) {
                        let _ = to_worker.send(normal_close()).await;
                        return;
                    }
                }
                for frame in relay.session {
                    let relayed = match frame {
                        Frame::Binary(b) => Relayed::Binary(b.into()),
                        Frame::Text(t) => Relayed::Text(t.into()),
                    };
                    if !matches!(tokio::time::timeout(SEND_WITHIN, to_worker.send(relayed)).await, Ok(Ok(()))) {
                        // The worker may have ended the session as this
                        // frame went: its close says why.
                        return finish(&mut client, dialect.as_mut(), last_close(&mut from_worker).await).await;
                    }
                }
            }
            frame = from_worker.next() => {
                let messages: Vec<Message> = match frame {
                    Some(Ok(Relayed::Text(t))) => dialect
                        .event(t.as_str())
                        .into_iter()
                        .map(|m| Message::Text(m.into()))
                        .collect(),
                    Some(Ok(Relayed::Binary(b))) => dialect
                        .audio(b.to_vec())
                        .into_iter()
                        .map(|f| match f {
                            Frame::Binary(b) => Message::Binary(b.into()),
                            Frame::Text(t) => Message::Text(t.into()),
                        })
                        .collect(),
                    Some(Ok(Relayed::Close(Some(c)))) => break Closing {
                        code: u16::from(c.code),
                        reason: c.reason.to_string(),
                    },
                    Some(Ok(_)) => continue,
                    Some(Err(_)) | None => break worker_gone(),
                };
                for message in messages {
                    let sent = tokio::time::timeout(SEND_WITHIN, client.send(message)).await;
                    if !matches!(sent, Ok(Ok(()))) {
                        let _ = to_worker.send(normal_close()).await;
                        return;
                    }
                }
            }
        }
    };
    finish(&mut client, dialect.as_mut(), end).await;
}

fn normal_close() -> Relayed {
    Relayed::Close(Some(RelayClose {
        code: CloseCode::Normal,
        reason: "".into(),
    }))
}

fn worker_gone() -> Closing {
    Closing {
        code: close::WORKER_GONE,
        reason: "The session's worker went away; reconnect.".to_owned(),
    }
}

/// Ends the client's side: the dialect's word on why, then the close.
async fn finish(client: &mut WebSocket, dialect: &mut dyn Dialect, end: Closing) {
    if let Some(message) = dialect.closing(&end) {
        let _ = tokio::time::timeout(SEND_WITHIN, client.send(Message::Text(message.into()))).await;
    }
    let _ = close(client, end.code, &end.reason).await;
}

/// The close the worker sent last, read within a second; a worker that
/// sent none went away.
async fn last_close(from_worker: &mut futures::stream::SplitStream<WorkerSocket>) -> Closing {
    let read = async {
        while let Some(frame) = from_worker.next().await {
            match frame {
                Ok(Relayed::Close(Some(c))) => {
                    return Closing {
                        code: u16::from(c.code),
                        reason: c.reason.to_string(),
                    }
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        worker_gone()
    };
    tokio::time::timeout(Duration::from_secs(1), read)
        .await
        .unwrap_or_else(|_| worker_gone())
}

async fn close(client: &mut WebSocket, code: u16, reason: &str) -> Result<(), axum::Error> {
    client
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        })))
        .await
}
