//! The client's commands: their arguments (clap) and what each one does.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};

use crate::api::Api;
use crate::connection::Connection;
use crate::error::CliError;
use crate::output::{cell, job_summary, json, rows, table};

/// The client commands of `mediagen`.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Speak text: `mediagen tts "Hello" --voice ID -o out.mp3`.
    Tts(TtsArgs),
    /// Transcribe audio or video: `mediagen stt talk.mp4 --format srt`.
    Stt(SttArgs),
    /// Keep ranges of a video: `mediagen trim in.mp4 --range 5-10 --range 20-25 -o out.mp4`.
    Trim(TrimArgs),
    /// Dub a video or audio file: `mediagen dub in.mp4 --to es -o out.mp4`.
    Dub(DubArgs),
    /// List voices: `mediagen voices --language es`.
    Voices(VoicesArgs),
    /// List avatars.
    Avatars(AvatarsArgs),
    /// Generate a sound: `mediagen sound "rain on a tin roof" -o rain.wav`.
    Sound(SoundArgs),
    /// Generate an image: `mediagen image "a red fox under a tree" -o fox.png`.
    Image(ImageArgs),
    /// List, show, wait for and cancel jobs.
    #[command(subcommand)]
    Jobs(JobsCommand),
    /// Show the account's credits.
    Account(AccountArgs),
}

#[derive(Args, Debug)]
pub struct TtsArgs {
    /// The text to speak (`-`: read it from stdin).
    pub text: String,
    /// A voice id from `mediagen voices`.
    #[arg(long)]
    pub voice: String,
    /// Where to write the audio.
    #[arg(short, long)]
    pub output: PathBuf,
    /// mp3, wav, ogg, flac, aac or pcm [default: from the output's
    /// extension, else mp3].
    #[arg(long)]
    pub format: Option<String>,
    /// 0.5–2.0.
    #[arg(long)]
    pub speed: Option<f64>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct SttArgs {
    /// An audio or video file.
    pub file: PathBuf,
    /// text, srt, vtt, json or verbose_json.
    #[arg(long, default_value = "text")]
    pub format: String,
    /// ISO 639-1, or `auto` [default: auto].
    #[arg(long)]
    pub language: Option<String>,
    /// A speech-to-text model of `GET /v1/models` [default: the server's].
    #[arg(long)]
    pub model: Option<String>,
    /// Translate into English.
    #[arg(long)]
    pub translate: bool,
    /// Write the transcript here instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct TrimArgs {
    /// The video to cut.
    pub input: PathBuf,
    /// A range to keep, START-END in seconds or [h:]m:s (`5-10`,
    /// `1:05-1:12.5`); repeat for more, kept in the order given.
    #[arg(long = "range", required = true, value_parser = parse_range)]
    pub ranges: Vec<(f64, f64)>,
    /// Where to write the video.
    #[arg(short, long)]
    pub output: PathBuf,
    /// accurate (frame-exact) or fast (keyframes, stream copy).
    #[arg(long)]
    pub mode: Option<String>,
    /// mp4, webm, mov or mkv [default: from the output's extension, else mp4].
    #[arg(long)]
    pub format: Option<String>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct DubArgs {
    /// The video or audio to dub.
    pub input: PathBuf,
    /// The target language (ISO 639-1).
    #[arg(long)]
    pub to: String,
    /// The source language [default: detected].
    #[arg(long)]
    pub from: Option<String>,
    /// One voice for every line.
    #[arg(long)]
    pub voice: Option<String>,
    /// auto (a catalog voice near the speaker) or clone.
    #[arg(long)]
    pub voice_mode: Option<String>,
    /// Where to write the dub (the video when the input has one, else audio).
    #[arg(short, long)]
    pub output: PathBuf,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct VoicesArgs {
    /// A language (`es`, `en-GB`).
    #[arg(long)]
    pub language: Option<String>,
    /// male, female or neutral.
    #[arg(long)]
    pub gender: Option<String>,
    /// Words to search for in names and descriptions.
    #[arg(long)]
    pub search: Option<String>,
    /// At most this many.
    #[arg(long, default_value_t = 500)]
    pub limit: usize,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct AvatarsArgs {
    /// Words to search for.
    #[arg(long)]
    pub search: Option<String>,
    /// male, female or neutral.
    #[arg(long)]
    pub gender: Option<String>,
    /// At most this many.
    #[arg(long, default_value_t = 500)]
    pub limit: usize,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct SoundArgs {
    /// What to hear.
    pub prompt: String,
    /// Where to write the audio.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Seconds.
    #[arg(long)]
    pub duration: Option<f64>,
    #[arg(long)]
    pub seed: Option<u64>,
    /// mp3, wav, ogg, flac, aac or pcm [default: from the output's
    /// extension, else mp3].
    #[arg(long)]
    pub format: Option<String>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct ImageArgs {
    /// What to see.
    pub prompt: String,
    /// Where to write the image.
    #[arg(short, long)]
    pub output: PathBuf,
    #[arg(long)]
    pub width: Option<u32>,
    #[arg(long)]
    pub height: Option<u32>,
    #[arg(long)]
    pub seed: Option<u64>,
    /// flat, watercolor or pixel.
    #[arg(long)]
    pub style: Option<String>,
    /// png, jpeg or webp [default: from the output's extension, else png].
    #[arg(long)]
    pub format: Option<String>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Subcommand, Debug)]
pub enum JobsCommand {
    /// The account's jobs, newest first.
    List {
        /// queued, processing, completed, failed or cancelled.
        #[arg(long)]
        status: Option<String>,
        /// A job kind (`tts`, `stt`, `video.trim`, `dubbing`, …).
        #[arg(long)]
        kind: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[command(flatten)]
        conn: Connection,
    },
    /// One job.
    Show {
        id: String,
        #[command(flatten)]
        conn: Connection,
    },
    /// Wait for a job to end (exit 1 when it failed or was cancelled).
    Wait {
        id: String,
        #[command(flatten)]
        conn: Connection,
    },
    /// Cancel a queued or running job.
    Cancel {
        id: String,
        #[command(flatten)]
        conn: Connection,
    },
}

#[derive(Args, Debug)]
pub struct AccountArgs {
    #[command(flatten)]
    pub conn: Connection,
}

/// `5-10`, `1:05-1:12.5`: a range in seconds.
fn parse_range(text: &str) -> Result<(f64, f64), String> {
    let (start, end) = text
        .split_once('-')
        .ok_or_else(|| format!("`{text}` is not START-END"))?;
    let (start, end) = (seconds(start)?, seconds(end)?);
    if start >= end {
        return Err(format!("`{text}` ends before it starts"));
    }
    Ok((start, end))
}

/// `75`, `1:15`, `0:01:15.5` in seconds.
fn seconds(text: &str) -> Result<f64, String> {
    let mut total = 0.0;
    for part in text.trim().split(':') {
        let value: f64 = part
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("`{text}` is not a time"))?;
        total = total * 60.0 + value;
    }
    Ok(total)
}

/// The format an output file's extension names, among `allowed`
/// (`aliases` maps other extensions onto them).
fn format_for(
    explicit: &Option<String>,
    output: &Path,
    allowed: &[&str],
    aliases: &[(&str, &str)],
    default: &str,
) -> String {
    if let Some(f) = explicit {
        return f.clone();
    }
    let ext = output
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    let ext = aliases
        .iter()
        .find(|(from, _)| *from == ext)
        .map(|(_, to)| to.to_string())
        .unwrap_or(ext);
    if allowed.contains(&ext.as_str()) {
        ext
    } else {
        default.to_string()
    }
}

const AUDIO: [&str; 6] = ["mp3", "wav", "ogg", "flac", "aac", "pcm"];
const AUDIO_ALIASES: [(&str, &str); 2] = [("opus", "ogg"), ("raw", "pcm")];

/// Members that are set, as a JSON object.
fn body(members: &[(&str, Option<Value>)]) -> Value {
    let map: Map<String, Value> = members
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k.to_string(), v)))
        .collect();
    Value::Object(map)
}

impl Command {
    fn connection(&self) -> &Connection {
        match self {
            Command::Tts(a) => &a.conn,
            Command::Stt(a) => &a.conn,
            Command::Trim(a) => &a.conn,
            Command::Dub(a) => &a.conn,
            Command::Voices(a) => &a.conn,
            Command::Avatars(a) => &a.conn,
            Command::Sound(a) => &a.conn,
            Command::Image(a) => &a.conn,
            Command::Account(a) => &a.conn,
            Command::Jobs(
                JobsCommand::List { conn, .. }
                | JobsCommand::Show { conn, .. }
                | JobsCommand::Wait { conn, .. }
                | JobsCommand::Cancel { conn, .. },
            ) => conn,
        }
    }

    /// Runs the command, printing its output; answers the exit code.
    pub async fn run(self) -> i32 {
        let as_json = self.connection().json;
        match self.execute().await {
            Ok(out) => {
                if !out.is_empty() {
                    println!("{out}");
                }
                0
            }
            Err(e) => {
                if as_json {
                    eprintln!("{}", json(&error_json(&e)));
                } else {
                    eprintln!("error: {e}");
                }
                e.exit_code()
            }
        }
    }

    async fn execute(self) -> Result<String, CliError> {
        let conn = self.connection().clone();
        let api = Api::new(conn.resolve()?, !conn.json)?;
        let as_json = conn.json;
        match self {
            Command::Tts(a) => {
                let text = if a.text == "-" {
                    std::io::read_to_string(std::io::stdin())
                        .map_err(|e| CliError::Local(format!("cannot read stdin: {e}")))?
                } else {
                    a.text
                };
                let format = format_for(&a.format, &a.output, &AUDIO, &AUDIO_ALIASES, "mp3");
                let req = body(&[
                    ("text", Some(json!(text))),
                    ("voiceId", Some(json!(a.voice))),
                    ("format", Some(json!(format))),
                    ("speed", a.speed.map(|s| json!(s))),
                ]);
                let job = api.wait(api.post("/text-to-speech", &req).await?).await?;
                save(&api, &job, "audioUrl", &a.output, as_json).await
            }
            Command::Stt(a) => {
                let mut req = body(&[
                    ("responseFormat", Some(json!(a.format))),
                    ("language", a.language.map(|l| json!(l))),
                    ("model", a.model.map(|m| json!(m))),
                    ("task", a.translate.then(|| json!("translate"))),
                ]);
                let job = with_upload(&api, &a.file, "/speech-to-text", &mut req).await?;
                let text = transcript(&job, &a.format);
                match a.output {
                    Some(path) => {
                        std::fs::write(&path, &text).map_err(|e| {
                            CliError::Local(format!("cannot write {}: {e}", path.display()))
                        })?;
                        Ok(if as_json {
                            json(&job)
                        } else {
                            format!("wrote {}", path.display())
                        })
                    }
                    None if as_json => Ok(json(&job)),
                    None => Ok(text.trim_end().to_string()),
                }
            }
            Command::Trim(a) => {
                let format = format_for(
                    &a.format,
                    &a.output,
                    &["mp4", "webm", "mov", "mkv"],
                    &[("m4v", "mp4")],
                    "mp4",
                );
                let ranges: Vec<Value> = a
                    .ranges
                    .iter()
                    .map(|(s, e)| json!({"start": s, "end": e}))
                    .collect();
                let mut req = body(&[
                    ("ranges", Some(json!(ranges))),
                    ("format", Some(json!(format))),
                    ("mode", a.mode.map(|m| json!(m))),
                ]);
                let job = with_upload(&api, &a.input, "/video/trim", &mut req).await?;
                save(&api, &job, "videoUrl", &a.output, as_json).await
            }
            Command::Dub(a) => {
                let mut req = body(&[
                    ("targetLanguage", Some(json!(a.to))),
                    ("sourceLanguage", a.from.map(|l| json!(l))),
                    ("voiceId", a.voice.map(|v| json!(v))),
                    ("voiceMode", a.voice_mode.map(|m| json!(m))),
                ]);
                let job = with_upload(&api, &a.input, "/dubbing", &mut req).await?;
                let field = if job["result"]["videoUrl"].is_string() {
                    "videoUrl"
                } else {
                    "audioUrl"
                };
                save(&api, &job, field, &a.output, as_json).await
            }
            Command::Voices(a) => {
                let query = query(&[
                    ("language", a.language),
                    ("gender", a.gender),
                    ("q", a.search),
                ]);
                let items = api.list_all("/voices", &query, a.limit).await?;
                Ok(if as_json {
                    json(&Value::Array(items))
                } else {
                    let fields = ["id", "name", "language", "gender", "engine"];
                    table(&fields, &rows(&items, &fields))
                })
            }
            Command::Avatars(a) => {
                let query = query(&[("q", a.search), ("gender", a.gender)]);
                let items = api.list_all("/avatars", &query, a.limit).await?;
                Ok(if as_json {
                    json(&Value::Array(items))
                } else {
                    let fields = ["id", "name", "gender", "style", "duration"];
                    table(&fields, &rows(&items, &fields))
                })
            }
            Command::Sound(a) => {
                let format = format_for(&a.format, &a.output, &AUDIO, &AUDIO_ALIASES, "mp3");
                let req = body(&[
                    ("prompt", Some(json!(a.prompt))),
                    ("duration", a.duration.map(|d| json!(d))),
                    ("seed", a.seed.map(|s| json!(s))),
                    ("format", Some(json!(format))),
                ]);
                let job = api.wait(api.post("/sound-generation", &req).await?).await?;
                save(&api, &job, "audioUrl", &a.output, as_json).await
            }
            Command::Image(a) => {
                let format = format_for(
                    &a.format,
                    &a.output,
                    &["png", "jpeg", "webp"],
                    &[("jpg", "jpeg")],
                    "png",
                );
                let req = body(&[
                    ("prompt", Some(json!(a.prompt))),
                    ("width", a.width.map(|w| json!(w))),
                    ("height", a.height.map(|h| json!(h))),
                    ("seed", a.seed.map(|s| json!(s))),
                    ("style", a.style.map(|s| json!(s))),
                    ("format", Some(json!(format))),
                ]);
                let job = api.wait(api.post("/image-generation", &req).await?).await?;
                save(&api, &job, "imageUrl", &a.output, as_json).await
            }
            Command::Jobs(cmd) => jobs(&api, cmd, as_json).await,
            Command::Account(_) => {
                let account = api.get("/account", &[]).await?;
                Ok(if as_json {
                    json(&account)
                } else {
                    let credits = &account["credits"];
                    [
                        ("id", &account["id"]),
                        ("name", &account["name"]),
                        ("balance", &credits["balance"]),
                        ("reserved", &credits["reserved"]),
                        ("used", &credits["used"]),
                        ("key", &account["key"]["level"]),
                    ]
                    .iter()
                    .map(|(name, value)| format!("{name:<9} {}", cell(value)))
                    .collect::<Vec<_>>()
                    .join("\n")
                })
            }
        }
    }
}

fn query(pairs: &[(&'static str, Option<String>)]) -> Vec<(&'static str, String)> {
    pairs
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| (*k, v)))
        .collect()
}

async fn jobs(api: &Api, cmd: JobsCommand, as_json: bool) -> Result<String, CliError> {
    let show = |job: Value| {
        if as_json {
            json(&job)
        } else {
            job_summary(&job)
        }
    };
    match cmd {
        JobsCommand::List {
            status,
            kind,
            limit,
            ..
        } => {
            let items = api
                .list_all(
                    "/jobs",
                    &query(&[("status", status), ("kind", kind)]),
                    limit,
                )
                .await?;
            Ok(if as_json {
                json(&Value::Array(items))
            } else {
                let fields = ["id", "kind", "status", "progress", "credits", "createdAt"];
                table(&fields, &rows(&items, &fields))
            })
        }
        JobsCommand::Show { id, .. } => Ok(show(api.get(&job_path(&id)?, &[]).await?)),
        JobsCommand::Wait { id, .. } => {
            let job = api.get(&job_path(&id)?, &[]).await?;
            Ok(show(api.wait(job).await?))
        }
        JobsCommand::Cancel { id, .. } => Ok(show(api.delete(&job_path(&id)?).await?)),
    }
}

/// A job id is put in a path only when it looks like one: the server
/// would answer 404 anyway, but `..` or `?` must not change the route.
fn job_path(id: &str) -> Result<String, CliError> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(CliError::Usage(format!("`{id}` is not a job id")));
    }
    Ok(format!("/jobs/{id}"))
}

/// Uploads `file`, runs the capability at `path` on it, waits for the
/// job, and deletes the upload (it served this one job).
async fn with_upload(
    api: &Api,
    file: &Path,
    path: &str,
    req: &mut Value,
) -> Result<Value, CliError> {
    let upload = api.upload(file).await?;
    let file_id = upload["id"].as_str().unwrap_or_default().to_string();
    req["fileId"] = json!(file_id);
    let outcome = match api.post(path, req).await {
        Ok(job) => api.wait(job).await,
        Err(e) => Err(e),
    };
    // A failure to delete leaves the upload to `file_retention_days`.
    let _ = api.delete(&format!("/files/{file_id}")).await;
    outcome
}

/// Downloads the completed job's `field` URL to `output`.
async fn save(
    api: &Api,
    job: &Value,
    field: &str,
    output: &Path,
    as_json: bool,
) -> Result<String, CliError> {
    let url = job["result"][field]
        .as_str()
        .ok_or_else(|| CliError::Unreachable(format!("the job's result has no {field}")))?;
    let bytes = api.download(url, output).await?;
    Ok(if as_json {
        json(job)
    } else {
        let duration = match &job["result"]["duration"] {
            Value::Number(d) => format!(", {d} s"),
            _ => String::new(),
        };
        format!(
            "wrote {} ({bytes} bytes{duration}; {} credits, job {})",
            output.display(),
            cell(&job["credits"]),
            cell(&job["id"])
        )
    })
}

/// A transcript in the requested format, from the completed job.
fn transcript(job: &Value, format: &str) -> String {
    let result = &job["result"];
    match format {
        "srt" | "vtt" => cell(&result["subtitles"]),
        "json" => json(&json!({"text": result["text"]})),
        "verbose_json" => json(result),
        _ => cell(&result["text"]),
    }
}

/// The error as JSON, for `--json`: the API's own shape.
fn error_json(e: &CliError) -> Value {
    match e {
        CliError::Api {
            status,
            code,
            message,
            request_id,
        } => {
            json!({"error": {"status": status, "code": code, "message": message, "request_id": request_id}})
        }
        CliError::Job {
            id,
            status,
            code,
            message,
        } => {
            json!({"error": {"code": code, "message": message, "job": {"id": id, "status": status}}})
        }
        other => json!({"error": {"code": "client_error", "message": other.to_string()}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_seconds_and_clock_times() {
        assert_eq!(parse_range("5-10").unwrap(), (5.0, 10.0));
        assert_eq!(parse_range("1:05-1:12.5").unwrap(), (65.0, 72.5));
        assert_eq!(parse_range("0:01:00-0:01:01").unwrap(), (60.0, 61.0));
        assert!(parse_range("10-5").is_err());
        assert!(parse_range("5").is_err());
        assert!(parse_range("a-b").is_err());
        assert!(parse_range("-1-2").is_err());
    }

    #[test]
    fn formats_follow_the_extension_unless_named() {
        let f = |explicit: Option<&str>, out: &str| {
            format_for(
                &explicit.map(String::from),
                Path::new(out),
                &AUDIO,
                &AUDIO_ALIASES,
                "mp3",
            )
        };
        assert_eq!(f(None, "a.WAV"), "wav");
        assert_eq!(f(None, "a.opus"), "ogg");
        assert_eq!(f(None, "a.bin"), "mp3");
        assert_eq!(f(None, "noext"), "mp3");
        assert_eq!(f(Some("flac"), "a.wav"), "flac");
    }

    #[test]
    fn job_ids_cannot_change_the_route() {
        assert_eq!(job_path("job_ab12").unwrap(), "/jobs/job_ab12");
        for bad in ["", "../keys", "job?x=1", "job/1", "job%2F"] {
            assert!(job_path(bad).is_err(), "{bad}");
        }
    }
}
