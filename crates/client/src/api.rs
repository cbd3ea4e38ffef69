//! The HTTP calls the commands make: JSON requests with the key, uploads
//! and downloads with progress bars, and waiting for a job to end.

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use reqwest::{Method, RequestBuilder};
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use crate::connection::Target;
use crate::error::CliError;
use crate::output::{stdout_error, Sink};

/// A job's states that do not change any more.
const FINISHED: [&str; 3] = ["completed", "failed", "cancelled"];

/// A client of one server with one key.
pub struct Api {
    http: reqwest::Client,
    target: Target,
    /// Progress bars on stderr (off with `--json`; indicatif also hides
    /// them where stderr is not a terminal).
    progress: bool,
}

fn unreachable(e: reqwest::Error) -> CliError {
    // reqwest's text names the URL but never the key.
    CliError::Unreachable(format!("cannot reach the server: {e}"))
}

fn local(path: &Path, what: &str, e: std::io::Error) -> CliError {
    CliError::Local(format!("cannot {what} {}: {e}", path.display()))
}

impl Api {
    pub fn new(target: Target, progress: bool) -> Result<Api, CliError> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("mediagen-cli/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(unreachable)?;
        Ok(Api {
            http,
            target,
            progress,
        })
    }

    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.target.base))
            .bearer_auth(&self.target.api_key)
    }

    async fn send(&self, request: RequestBuilder) -> Result<Value, CliError> {
        let answer = request.send().await.map_err(unreachable)?;
        let status = answer.status().as_u16();
        let body = answer.bytes().await.map_err(unreachable)?;
        if status >= 400 {
            return Err(CliError::from_answer(status, &body));
        }
        serde_json::from_slice(&body).map_err(|_| {
            CliError::Unreachable(format!(
                "the server answered HTTP {status} with something other than JSON"
            ))
        })
    }

    /// `GET /v1{path}` with `query`.
    pub async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value, CliError> {
        self.send(self.request(Method::GET, path).query(query))
            .await
    }

    /// Every item of a list, page after page (`limit` 100), up to `max`.
    pub async fn list_all(
        &self,
        path: &str,
        query: &[(&str, String)],
        max: usize,
    ) -> Result<Vec<Value>, CliError> {
        let mut items = Vec::new();
        for page in 1.. {
            let mut q = query.to_vec();
            q.push(("page", page.to_string()));
            q.push(("limit", max.clamp(1, 100).to_string()));
            let answer = self.get(path, &q).await?;
            if let Some(data) = answer["data"].as_array() {
                items.extend(data.iter().cloned());
            }
            if items.len() >= max || answer["pagination"]["hasMore"] != Value::Bool(true) {
                break;
            }
        }
        items.truncate(max);
        Ok(items)
    }

    /// `POST /v1{path}` with a JSON body, asking for the job at once
    /// (`Prefer: respond-async`) so that its progress can be shown.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, CliError> {
        self.send(
            self.request(Method::POST, path)
                .header("Prefer", "respond-async")
                .json(body),
        )
        .await
    }

    /// `DELETE /v1{path}`.
    pub async fn delete(&self, path: &str) -> Result<Value, CliError> {
        self.send(self.request(Method::DELETE, path)).await
    }

    fn bar(&self, len: u64, template: &str, message: &str) -> ProgressBar {
        if !self.progress {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(message.to_string());
        bar
    }

    /// Uploads `file` (`POST /v1/files`), streaming it with a progress bar;
    /// answers the file object.
    pub async fn upload(&self, file: &Path) -> Result<Value, CliError> {
        let form = reqwest::multipart::Form::new().part("file", self.file_part(file).await?);
        self.send(self.request(Method::POST, "/files").multipart(form))
            .await
    }

    /// `POST /v1{path}` with a form of `files` (each a `part` part) and
    /// text `fields`, asking for the job at once.
    pub async fn post_form(
        &self,
        path: &str,
        part: &str,
        files: &[std::path::PathBuf],
        fields: &[(&str, String)],
    ) -> Result<Value, CliError> {
        let mut form = reqwest::multipart::Form::new();
        for (name, value) in fields {
            form = form.text(name.to_string(), value.clone());
        }
        for file in files {
            form = form.part(part.to_string(), self.file_part(file).await?);
        }
        self.send(
            self.request(Method::POST, path)
                .header("Prefer", "respond-async")
                .multipart(form),
        )
        .await
    }

    /// `file` as a streamed form part, counted on a progress bar.
    async fn file_part(&self, file: &Path) -> Result<reqwest::multipart::Part, CliError> {
        let handle = tokio::fs::File::open(file)
            .await
            .map_err(|e| local(file, "read", e))?;
        let size = handle
            .metadata()
            .await
            .map_err(|e| local(file, "read", e))?
            .len();
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "upload".into());
        let bar = self.bar(
            size,
            "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
            &format!("uploading {name}"),
        );
        let counted = bar.clone();
        let stream = tokio_util::io::ReaderStream::new(handle).inspect(move |chunk| {
            if let Ok(bytes) = chunk {
                counted.inc(bytes.len() as u64);
                if counted.position() >= size {
                    counted.finish_and_clear();
                }
            }
        });
        Ok(
            reqwest::multipart::Part::stream_with_length(reqwest::Body::wrap_stream(stream), size)
                .file_name(name),
        )
    }

    /// Polls `GET /v1/jobs/{id}` until the job ends, showing its progress;
    /// answers the completed job, or the job's error when it failed or was
    /// cancelled.
    pub async fn wait(&self, mut job: Value) -> Result<Value, CliError> {
        let id = job["id"].as_str().unwrap_or_default().to_string();
        let kind = job["kind"].as_str().unwrap_or("job").to_string();
        let bar = self.bar(100, "{msg} [{bar:30}] {pos:>3}% {elapsed}", &kind);
        let mut delay = Duration::from_millis(200);
        loop {
            let status = job["status"].as_str().unwrap_or_default().to_string();
            bar.set_position(job["progress"].as_u64().unwrap_or(0).min(100));
            bar.set_message(format!("{kind} {status}"));
            if FINISHED.contains(&status.as_str()) {
                break;
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(2));
            job = self.get(&format!("/jobs/{id}"), &[]).await?;
        }
        bar.finish_and_clear();
        if job["status"] == "completed" {
            Ok(job)
        } else {
            Err(CliError::from_job(&job))
        }
    }

    /// Downloads a result URL (signed: sent without the key) to `sink`: a
    /// file through a `.part` file renamed at the end, or stdout; answers
    /// the byte count.
    pub async fn download(&self, url: &str, sink: &Sink) -> Result<u64, CliError> {
        let answer = self.http.get(url).send().await.map_err(unreachable)?;
        let status = answer.status().as_u16();
        if status >= 400 {
            let body = answer.bytes().await.map_err(unreachable)?;
            return Err(CliError::from_answer(status, &body));
        }
        let out = match sink {
            Sink::File(path) => path,
            Sink::Stdout => {
                let mut stdout = tokio::io::stdout();
                let mut written = 0u64;
                let mut body = answer.bytes_stream();
                while let Some(chunk) = body.next().await {
                    let chunk = chunk.map_err(unreachable)?;
                    stdout.write_all(&chunk).await.map_err(stdout_error)?;
                    written += chunk.len() as u64;
                }
                stdout.flush().await.map_err(stdout_error)?;
                return Ok(written);
            }
        };
        let bar = self.bar(
            answer.content_length().unwrap_or(0),
            "{msg} [{bar:30}] {bytes}/{total_bytes}",
            &format!("saving {}", out.display()),
        );
        let mut part = out.as_os_str().to_owned();
        part.push(".part");
        let part = std::path::PathBuf::from(part);
        let saved = async {
            let mut file = tokio::fs::File::create(&part)
                .await
                .map_err(|e| local(&part, "write", e))?;
            let mut written = 0u64;
            let mut body = answer.bytes_stream();
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(unreachable)?;
                file.write_all(&chunk)
                    .await
                    .map_err(|e| local(&part, "write", e))?;
                written += chunk.len() as u64;
                bar.set_position(written);
            }
            file.flush().await.map_err(|e| local(&part, "write", e))?;
            drop(file);
            tokio::fs::rename(&part, out)
                .await
                .map_err(|e| local(out, "write", e))?;
            Ok(written)
        }
        .await;
        bar.finish_and_clear();
        if saved.is_err() {
            // No half file is left behind to be taken for a result.
            let _ = tokio::fs::remove_file(&part).await;
        }
        saved
    }
}
