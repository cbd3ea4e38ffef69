//! The bench's clients: each job is submitted as a client of the API
//! would, to one API process and to the other when it cannot connect,
//! honouring `Retry-After` on a 503. Every answer is tallied; any 5xx but a
//! 503 with `Retry-After`, and any refusal of a valid request, is a
//! violation.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::form;

/// A request of the workload.
#[derive(Clone)]
pub enum Ask {
    /// JSON to `path`; `wait`: without `Prefer: respond-async`.
    Json {
        path: &'static str,
        body: Value,
        wait: bool,
    },
    /// Streamed speech, read at `rate` bytes a second (`None`: at once)
    /// for `slow_for`, then at once.
    Stream {
        body: Value,
        rate: Option<(f64, Duration)>,
    },
    /// A file uploaded with the request (multipart).
    Upload {
        path: &'static str,
        file: Arc<Vec<u8>>,
        name: &'static str,
        fields: Vec<(&'static str, String)>,
    },
}

/// What the clients saw.
#[derive(Default)]
pub struct Tally {
    pub statuses: BTreeMap<u16, usize>,
    pub unavailable: usize,
    pub unreachable: usize,
    pub streams_cut: usize,
    pub violations: Vec<String>,
}

/// A job a client was told about, with the streamed bytes it read.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub id: String,
    pub label: &'static str,
    pub streamed: Option<Vec<u8>>,
    /// The stream broke before its end (its API process was killed).
    pub cut: bool,
    /// How long the client read the answer (from its status line), and
    /// when it finished (ms since the epoch, as the database's job times).
    pub read_for: Duration,
    pub read_end_ms: i64,
}

#[derive(Clone)]
pub struct Client {
    pub http: reqwest::Client,
    pub apis: Vec<String>,
    pub key: String,
    pub tally: Arc<Mutex<Tally>>,
}

impl Client {
    fn request(&self, api: &str, ask: &Ask) -> reqwest::RequestBuilder {
        let (path, prefer) = match ask {
            Ask::Json { path, wait, .. } => (*path, !wait),
            Ask::Stream { .. } => ("/v1/text-to-speech/stream", false),
            Ask::Upload { path, .. } => (*path, true),
        };
        let mut r = self
            .http
            .post(format!("{api}{path}"))
            .bearer_auth(&self.key);
        if prefer {
            r = r.header("prefer", "respond-async");
        }
        match ask {
            Ask::Json { body, .. } | Ask::Stream { body, .. } => r.json(body),
            Ask::Upload {
                file, name, fields, ..
            } => {
                let text: Vec<(&str, &str)> =
                    fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
                r.multipart(form(vec![("file", file.to_vec(), *name)], &text))
            }
        }
    }

    /// Sends `ask` until an API process accepts it (or the bench's patience
    /// of five minutes runs out); the job it made.
    pub async fn submit(&self, n: usize, label: &'static str, ask: Ask) -> Option<Submitted> {
        let asked_at = Instant::now();
        let mut attempt = n;
        while asked_at.elapsed() < Duration::from_secs(300) {
            attempt += 1;
            let api = &self.apis[attempt % self.apis.len()];
            let answer = match self.request(api, &ask).send().await {
                Ok(a) => a,
                Err(_) => {
                    self.tally.lock().unwrap().unreachable += 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            let status = answer.status().as_u16();
            *self
                .tally
                .lock()
                .unwrap()
                .statuses
                .entry(status)
                .or_default() += 1;
            match status {
                200..=202 => return Some(self.accepted(answer, label, &ask).await),
                503 => {
                    let wait = answer
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
                    let wait = {
                        let mut tally = self.tally.lock().unwrap();
                        tally.unavailable += 1;
                        if wait.is_none() {
                            tally
                                .violations
                                .push(format!("{label}: 503 without Retry-After"));
                        }
                        wait
                    };
                    tokio::time::sleep(Duration::from_secs(wait?)).await;
                }
                _ => {
                    let body = answer.text().await.unwrap_or_default();
                    self.tally
                        .lock()
                        .unwrap()
                        .violations
                        .push(format!("{label}: {status} {body}"));
                    return None;
                }
            }
        }
        self.tally
            .lock()
            .unwrap()
            .violations
            .push(format!("{label}: never accepted in 5 minutes"));
        None
    }

    async fn accepted(
        &self,
        mut answer: reqwest::Response,
        label: &'static str,
        ask: &Ask,
    ) -> Submitted {
        let Ask::Stream { rate, .. } = ask else {
            let job: Value = answer.json().await.unwrap_or_default();
            let id = job["id"].as_str().unwrap_or_default().to_owned();
            return Submitted {
                id,
                label,
                streamed: None,
                cut: false,
                read_for: Duration::ZERO,
                read_end_ms: mediagen_core::time::now_ms(),
            };
        };
        let id = answer.headers()["x-job-id"].to_str().unwrap().to_owned();
        let started = Instant::now();
        let mut got = Vec::new();
        let mut cut = false;
        loop {
            match answer.chunk().await {
                Ok(Some(chunk)) => got.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(_) => {
                    self.tally.lock().unwrap().streams_cut += 1;
                    cut = true;
                    break;
                }
            }
            if let Some((per_second, slow_for)) = rate {
                let due = Duration::from_secs_f64(got.len() as f64 / per_second);
                if started.elapsed() < *slow_for && due > started.elapsed() {
                    tokio::time::sleep((due - started.elapsed()).min(*slow_for)).await;
                }
            }
        }
        Submitted {
            id,
            label,
            streamed: Some(got),
            cut,
            read_for: started.elapsed(),
            read_end_ms: mediagen_core::time::now_ms(),
        }
    }
}

/// The workload's `n`th request: speech (queued, waited for and streamed;
/// eSpeak and Kokoro), transcription (an upload, a stored file), trims,
/// images and sounds, each telling the receiver at `hook` when it ends.
pub fn nth(n: usize, inputs: &Inputs, hook: &str) -> (&'static str, Ask) {
    let text = format!("Request number {n} arrives while the service is under strain.");
    let speech = |voice: &str| json!({"text": text, "voiceId": voice, "webhookUrl": hook});
    let json = |path, body, wait| Ask::Json { path, body, wait };
    match n % 10 {
        0 | 1 => (
            "tts",
            json("/v1/text-to-speech", speech(&inputs.espeak), false),
        ),
        2 => (
            "tts sync",
            json("/v1/text-to-speech", speech(&inputs.espeak), true),
        ),
        3 => (
            "tts stream",
            Ask::Stream {
                body: speech(&inputs.espeak),
                rate: None,
            },
        ),
        4 => (
            "tts kokoro",
            json("/v1/text-to-speech", speech(&inputs.kokoro), false),
        ),
        5 => (
            "stt upload",
            Ask::Upload {
                path: "/v1/speech-to-text",
                file: inputs.speech.clone(),
                name: "speech.wav",
                fields: vec![("webhookUrl", hook.to_owned())],
            },
        ),
        6 => {
            let start = (n % 5) as f64;
            let body = json!({"fileId": inputs.video, "ranges": [{"start": start, "end": start + 1.0}], "webhookUrl": hook});
            ("trim", json("/v1/video/trim", body, false))
        }
        7 => {
            let body = json!({"prompt": format!("a red house by a lake, number {n}"), "width": 256, "height": 256, "webhookUrl": hook});
            ("image", json("/v1/image-generation", body, false))
        }
        8 => {
            let body = json!({"prompt": "rain on a tin roof", "duration": 2.0, "seed": n, "webhookUrl": hook});
            ("sound", json("/v1/sound-generation", body, false))
        }
        _ => {
            let body = json!({"fileId": inputs.speech_file, "webhookUrl": hook});
            ("stt sync", json("/v1/speech-to-text", body, true))
        }
    }
}

/// What the workload's requests name.
pub struct Inputs {
    pub espeak: String,
    pub kokoro: String,
    pub speech: Arc<Vec<u8>>,
    pub speech_file: String,
    pub video: String,
}
