//! The client's commands: their arguments (clap) and what each one does.

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::api::Api;
pub use crate::args::Command;
use crate::args::{JobsCommand, KeysCommand};
use crate::connection::Connection;
use crate::error::CliError;
use crate::output::{cell, count, job_summary, json, print_out, rows, table, Sink};
use crate::voices::voice_id;

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
            Command::Clone(a) => &a.conn,
            Command::Design(a) => &a.conn,
            Command::Change(a) => &a.conn,
            Command::Expand(a) => &a.conn,
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
            )
            | Command::Keys(
                KeysCommand::List { conn }
                | KeysCommand::Create { conn, .. }
                | KeysCommand::Revoke { conn, .. },
            ) => conn,
        }
    }

    /// Runs the command, printing its output; answers the exit code.
    pub async fn run(self) -> i32 {
        let as_json = self.connection().json;
        let outcome = match self.execute().await {
            Ok(out) if out.is_empty() => Ok(()),
            Ok(out) => print_out(&out),
            Err(e) => Err(e),
        };
        match outcome {
            Ok(()) => 0,
            Err(CliError::Closed) => CliError::Closed.exit_code(),
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
                let sink = Sink::choose(a.out.output)?;
                let text = if a.text == "-" {
                    std::io::read_to_string(std::io::stdin())
                        .map_err(|e| CliError::Local(format!("cannot read stdin: {e}")))?
                } else {
                    a.text
                };
                let format = format_for(&a.format, sink.path(), &AUDIO, &AUDIO_ALIASES, "mp3");
                let req = body(&[
                    ("text", Some(json!(text))),
                    ("voiceId", Some(json!(voice_id(&api, &a.voice).await?))),
                    ("format", Some(json!(format))),
                    ("speed", a.speed.map(|s| json!(s))),
                ]);
                let job = api.wait(api.post("/text-to-speech", &req).await?).await?;
                save(&api, &job, "audioUrl", &sink, as_json).await
            }
            Command::Stt(a) => {
                let mut req = body(&[
                    ("responseFormat", Some(json!(a.format))),
                    ("language", a.language.map(|l| json!(l))),
                    ("model", a.model.map(|m| json!(m))),
                    ("task", a.translate.then(|| json!("translate"))),
                    ("diarize", a.diarize.then_some(Value::Bool(true))),
                    ("numSpeakers", a.speakers.map(|n| json!(n))),
                ]);
                let job = with_upload(&api, &a.file, "/speech-to-text", &mut req).await?;
                let text = transcript(&job, &a.format);
                match a.output.filter(|p| p.as_os_str() != "-") {
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
                let sink = Sink::choose(a.out.output)?;
                let format = format_for(&a.format, sink.path(), &VIDEO, &VIDEO_ALIASES, "mp4");
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
                save(&api, &job, "videoUrl", &sink, as_json).await
            }
            Command::Dub(a) => {
                let sink = Sink::choose(a.output)?;
                let voice = match a.voice {
                    Some(v) => Some(json!(voice_id(&api, &v).await?)),
                    None => None,
                };
                let mut req = body(&[
                    ("targetLanguage", Some(json!(a.to))),
                    ("sourceLanguage", a.from.map(|l| json!(l))),
                    ("voiceId", voice),
                    ("voiceMode", a.voice_mode.map(|m| json!(m))),
                ]);
                let job = with_upload(&api, &a.input, "/dubbing", &mut req).await?;
                save(&api, &job, media_field(&job), &sink, as_json).await
            }
            Command::Clone(a) => {
                let fields: Vec<(&str, String)> = [
                    ("name", Some(a.name)),
                    ("consent", a.consent.then(|| "true".to_owned())),
                    ("method", a.method),
                    ("quality", a.quality),
                    ("language", a.language),
                    ("description", a.description),
                ]
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| (k, v)))
                .collect();
                let job = api.post_form("/voices", "files", &a.files, &fields).await?;
                let job = api.wait(job).await?;
                let id = job["result"]["voiceId"].as_str().unwrap_or_default();
                let voice = api.get(&voice_path(id)?, &[]).await?;
                Ok(if as_json {
                    json(&voice)
                } else {
                    format!(
                        "cloned {} ({}, {}): {} ({}, job {})",
                        cell(&voice["name"]),
                        cell(&voice["engine"]),
                        cell(&voice["language"]),
                        cell(&voice["id"]),
                        count(&job["credits"], "credit"),
                        cell(&job["id"])
                    )
                })
            }
            Command::Design(a) => {
                if let (Some(id), Some(name)) = (a.keep, a.name) {
                    let voice = api
                        .post("/voices", &json!({ "designId": id, "name": name }))
                        .await?;
                    return Ok(if as_json {
                        json(&voice)
                    } else {
                        format!(
                            "kept {} ({}): {}",
                            cell(&voice["name"]),
                            cell(&voice["language"]),
                            cell(&voice["id"])
                        )
                    });
                }
                let req = body(&[
                    ("description", a.description.map(|d| json!(d))),
                    ("text", a.text.map(|t| json!(t))),
                    ("seed", a.seed.map(|s| json!(s))),
                ]);
                let job = api.wait(api.post("/voices/design", &req).await?).await?;
                let empty = Vec::new();
                let previews = job["result"]["previews"].as_array().unwrap_or(&empty);
                let mut lines = Vec::new();
                for (i, p) in previews.iter().enumerate() {
                    let path = a.dir.join(format!("design-{}.mp3", i + 1));
                    let url = p["audioUrl"].as_str().unwrap_or_default();
                    api.download(url, &Sink::File(path.clone())).await?;
                    let factor = |k: &str| p[k].as_f64().unwrap_or(1.0);
                    lines.push(format!(
                        "{} {} (pitch ×{:.2}, pace ×{:.2})",
                        cell(&p["designId"]),
                        path.display(),
                        factor("pitch"),
                        factor("pace")
                    ));
                }
                Ok(if as_json {
                    json(&job)
                } else {
                    lines.push(format!(
                        "keep one: mediagen design --keep <designId> --name <name> ({}, job {})",
                        count(&job["credits"], "credit"),
                        cell(&job["id"])
                    ));
                    lines.join("\n")
                })
            }
            Command::Change(a) => {
                let sink = Sink::choose(a.out.output)?;
                let format = format_for(&a.format, sink.path(), &AUDIO, &AUDIO_ALIASES, "mp3");
                let mut req = body(&[
                    ("voiceId", Some(json!(voice_id(&api, &a.voice).await?))),
                    ("mode", a.mode.map(|m| json!(m))),
                    ("format", Some(json!(format))),
                ]);
                let job = with_upload(&api, &a.input, "/voice-changer", &mut req).await?;
                save(&api, &job, media_field(&job), &sink, as_json).await
            }
            Command::Expand(a) => {
                let sink = Sink::choose(a.out.output)?;
                let format = format_for(&a.format, sink.path(), &VIDEO, &VIDEO_ALIASES, "mp4");
                let mut req = body(&[
                    ("avatarId", a.avatar.map(|v| json!(v))),
                    ("duration", a.duration.map(|d| json!(d))),
                    ("mode", a.mode.map(|m| json!(m))),
                    ("seed", a.seed.map(|s| json!(s))),
                    ("format", Some(json!(format))),
                ]);
                let mut uploads = Vec::new();
                if let Some(audio) = &a.audio {
                    let file = api.upload(audio).await?;
                    uploads.push(cell(&file["id"]));
                    req["audioFileId"] = file["id"].clone();
                }
                let job = match &a.input {
                    Some(input) => with_upload(&api, input, "/avatar-expansion", &mut req).await,
                    None => match api.post("/avatar-expansion", &req).await {
                        Ok(job) => api.wait(job).await,
                        Err(e) => Err(e),
                    },
                };
                for id in uploads {
                    let _ = api.delete(&format!("/files/{id}")).await;
                }
                save(&api, &job?, "videoUrl", &sink, as_json).await
            }
            Command::Voices(a) => {
                let query = query(&[
                    ("language", a.language),
                    ("gender", a.gender),
                    ("engine", a.engine),
                    ("category", a.category),
                    ("q", a.search),
                ]);
                let items = api.list_all("/voices", &query, a.limit).await?;
                Ok(if as_json {
                    json(&Value::Array(items))
                } else {
                    let fields = ["id", "name", "engineVoice", "language", "gender", "engine"];
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
                let sink = Sink::choose(a.out.output)?;
                let format = format_for(&a.format, sink.path(), &AUDIO, &AUDIO_ALIASES, "mp3");
                let req = body(&[
                    ("prompt", Some(json!(a.prompt))),
                    ("duration", a.duration.map(|d| json!(d))),
                    ("seed", a.seed.map(|s| json!(s))),
                    ("format", Some(json!(format))),
                ]);
                let job = api.wait(api.post("/sound-generation", &req).await?).await?;
                save(&api, &job, "audioUrl", &sink, as_json).await
            }
            Command::Image(a) => {
                let sink = Sink::choose(a.out.output)?;
                let format = format_for(
                    &a.format,
                    sink.path(),
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
                save(&api, &job, "imageUrl", &sink, as_json).await
            }
            Command::Jobs(cmd) => jobs(&api, cmd, as_json).await,
            Command::Keys(cmd) => keys(&api, cmd, as_json).await,
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

const VIDEO: [&str; 4] = ["mp4", "webm", "mov", "mkv"];
const VIDEO_ALIASES: [(&str, &str); 1] = [("m4v", "mp4")];

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
            ids,
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
            } else if ids {
                let ids: Vec<String> = items.iter().map(|j| cell(&j["id"])).collect();
                ids.join("\n")
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

async fn keys(api: &Api, cmd: KeysCommand, as_json: bool) -> Result<String, CliError> {
    match cmd {
        KeysCommand::List { .. } => {
            let items = api.list_all("/keys", &[], 1000).await?;
            Ok(if as_json {
                json(&Value::Array(items))
            } else {
                let fields = ["id", "name", "level", "prefix", "status", "expiresAt"];
                table(&fields, &rows(&items, &fields))
            })
        }
        KeysCommand::Create {
            level,
            name,
            expires_at,
            ..
        } => {
            let req = body(&[
                ("level", Some(json!(level))),
                ("name", name.map(|n| json!(n))),
                ("expiresAt", expires_at.map(|t| json!(t))),
            ]);
            let key = api.post("/keys", &req).await?;
            Ok(if as_json {
                json(&key)
            } else {
                cell(&key["key"])
            })
        }
        KeysCommand::Revoke { id, .. } => {
            let key = api.delete(&id_path("keys", &id)?).await?;
            Ok(if as_json {
                json(&key)
            } else {
                format!("revoked {} ({})", cell(&key["id"]), cell(&key["name"]))
            })
        }
    }
}

/// An id is put in a path only when it looks like one: the server would
/// answer 404 anyway, but `..` or `?` must not change the route.
fn id_path(collection: &str, id: &str) -> Result<String, CliError> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(CliError::Usage(format!("`{id}` is not an id")));
    }
    Ok(format!("/{collection}/{id}"))
}

fn job_path(id: &str) -> Result<String, CliError> {
    id_path("jobs", id)
}

fn voice_path(id: &str) -> Result<String, CliError> {
    id_path("voices", id)
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

/// The video of a job that kept its input's picture (dubbing, the voice
/// changer on a video), else its audio.
fn media_field(job: &Value) -> &'static str {
    if job["result"]["videoUrl"].is_string() {
        "videoUrl"
    } else {
        "audioUrl"
    }
}

/// Downloads the completed job's `field` URL to `sink`; answers what to
/// print (on stderr when the media went to stdout).
async fn save(
    api: &Api,
    job: &Value,
    field: &str,
    sink: &Sink,
    as_json: bool,
) -> Result<String, CliError> {
    let url = job["result"][field]
        .as_str()
        .ok_or_else(|| CliError::Unreachable(format!("the job's result has no {field}")))?;
    let bytes = api.download(url, sink).await?;
    let summary = if as_json {
        json(job)
    } else {
        let duration = match &job["result"]["duration"] {
            Value::Number(d) => format!(", {d} s"),
            _ => String::new(),
        };
        let place = match sink {
            Sink::File(path) => path.display().to_string(),
            Sink::Stdout => "stdout".to_owned(),
        };
        format!(
            "wrote {place} ({}{duration}; {}, job {})",
            count(&json!(bytes), "byte"),
            count(&job["credits"], "credit"),
            cell(&job["id"])
        )
    };
    Ok(match sink {
        Sink::File(_) => summary,
        Sink::Stdout => {
            eprintln!("{summary}");
            String::new()
        }
    })
}

/// A transcript in the requested format, from the completed job. Plain
/// text of a diarized transcript is a line per turn, led by its speaker.
fn transcript(job: &Value, format: &str) -> String {
    let result = &job["result"];
    match format {
        "srt" | "vtt" => cell(&result["subtitles"]),
        "json" => json(&json!({"text": result["text"]})),
        "verbose_json" => json(result),
        _ => match result["segments"].as_array() {
            Some(segments) if segments.iter().any(|s| s["speaker"].is_string()) => turns(segments),
            _ => cell(&result["text"]),
        },
    }
}

/// `speaker_0: …` lines, consecutive segments of one speaker joined.
fn turns(segments: &[Value]) -> String {
    let mut lines: Vec<(String, String)> = Vec::new();
    for s in segments {
        let speaker = cell(&s["speaker"]);
        let text = cell(&s["text"]).trim().to_owned();
        match lines.last_mut() {
            Some((who, said)) if *who == speaker => {
                said.push(' ');
                said.push_str(&text);
            }
            _ => lines.push((speaker, text)),
        }
    }
    lines
        .iter()
        .map(|(who, said)| format!("{who}: {said}"))
        .collect::<Vec<_>>()
        .join("\n")
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
    fn a_diarized_transcript_reads_turn_by_turn() {
        let segments = [
            json!({"speaker": "speaker_0", "text": " Hello."}),
            json!({"speaker": "speaker_0", "text": " How are you?"}),
            json!({"speaker": "speaker_1", "text": " Fine."}),
        ];
        assert_eq!(
            turns(&segments),
            "speaker_0: Hello. How are you?\nspeaker_1: Fine."
        );
    }

    #[test]
    fn job_ids_cannot_change_the_route() {
        assert_eq!(job_path("job_ab12").unwrap(), "/jobs/job_ab12");
        for bad in ["", "../keys", "job?x=1", "job/1", "job%2F"] {
            assert!(job_path(bad).is_err(), "{bad}");
        }
    }
}
