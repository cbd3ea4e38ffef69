//! Media inputs of the capabilities: every endpoint that takes media accepts
//! either a `file` part in `multipart/form-data` (with the other parameters
//! as text parts) or a JSON body naming an uploaded file by `fileId`. Files
//! are sniffed and probed with ffprobe before any credit is held.

use mediagen_core::JobRequest;
use std::collections::HashMap;

use std::marker::PhantomData;

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header;
use mediagen_core::{AccountId, FileId, TypedId};
use mediagen_core::{ApiError, ErrorCode};
use mediagen_jobs::limits::{Measured, MediaLimits};
use mediagen_jobs::{MediaFile, MediaRequest};
use mediagen_probe::{probe, Probe, ProbeError};
use mediagen_store::FileRecord;
use serde_json::{Map, Value};

use crate::error::{ApiResult, Error};
use crate::extract::{ApiJson, Auth, JobOptions};
use crate::jobs::{dry_run, run_to_end, submit, JobSpec};
use crate::middleware::Principal;
use crate::state::AppState;
use crate::submission::Submission;
use crate::upload::{MultipartForm, Upload};
use mediagen_core::job::Job;

/// The media a request refers to, and its other parameters as strings.
pub struct MediaInput {
    pub file: FileRecord,
    pub fields: HashMap<String, String>,
    /// An upload not stored yet (dry runs price it without keeping it).
    pending: Option<(Upload, Probe)>,
    /// The demuxer the probe of a fresh upload found (`None` for a file
    /// stored before).
    demuxer: Option<&'static str>,
}

impl MediaInput {
    /// Prices the request `build` makes on the file when it asks for a
    /// dry run (an upload is not kept); otherwise stores the upload and
    /// submits the request on the stored file.
    pub async fn submit<T: JobRequest>(
        mut self,
        state: &AppState,
        who: &Principal,
        job: Submission,
        build: impl FnOnce(MediaFile) -> T,
    ) -> ApiResult<axum::response::Response> {
        if job.dry_run {
            let spec = JobSpec::of(&build(self.media_file()), true)?;
            return dry_run(state, who, &spec).await;
        }
        let spec = self.job_spec(state, build).await?;
        submit(state, who, job.opts, spec).await
    }

    /// Stores the upload, then runs the request `build` makes to its end
    /// ([`run_to_end`]: for clients that know no 202).
    pub async fn run_to_end<T: JobRequest>(
        mut self,
        state: &AppState,
        who: &Principal,
        opts: JobOptions,
        build: impl FnOnce(MediaFile) -> T,
    ) -> ApiResult<Job> {
        let spec = self.job_spec(state, build).await?;
        run_to_end(state, who, opts, spec).await
    }

    /// Keeps the upload and describes the job on the stored file.
    async fn job_spec<T: JobRequest>(
        &mut self,
        state: &AppState,
        build: impl FnOnce(MediaFile) -> T,
    ) -> ApiResult<JobSpec> {
        self.keep(state).await?;
        JobSpec::of(&build(self.media_file()), false)
    }

    /// The file as a request names it (an upload's key is empty until it
    /// is kept).
    fn media_file(&self) -> MediaFile {
        MediaFile {
            key: self.file.blob_key.clone(),
            id: self.file.id.clone(),
            duration: self.file.duration.unwrap_or(0.0),
            demuxer: self.demuxer.map(str::to_owned),
        }
    }

    /// The request parameter that named the media: `file` for an upload
    /// sent with it, `fileId` for a stored file.
    pub fn parameter(&self) -> &'static str {
        if self.pending.is_some() {
            "file"
        } else {
            "fileId"
        }
    }

    /// False when the input is known to have no picture: an upload whose
    /// probe found none, or a stored file recorded as audio.
    pub fn may_have_video(&self) -> bool {
        match &self.pending {
            Some((_, probed)) => probed.has_video,
            None => !self.file.content_type.starts_with("audio/"),
        }
    }

    /// Stores an upload that came with the request (as `POST /v1/files`
    /// would); a `fileId` input is stored already.
    pub async fn keep(&mut self, state: &AppState) -> ApiResult<()> {
        if let Some((upload, probed)) = self.pending.take() {
            self.file = save(state, &self.file.account_id, &upload, &probed).await?;
        }
        Ok(())
    }
}

fn is_multipart(req: &Request) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"))
}

/// JSON values as the strings a multipart form would carry.
fn as_fields(map: Map<String, Value>) -> HashMap<String, String> {
    map.into_iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => s,
                Value::Array(items) if !items.iter().all(Value::is_string) => {
                    Value::Array(items).to_string()
                }
                Value::Array(items) => items
                    .iter()
                    .map(|i| {
                        i.as_str()
                            .map(str::to_owned)
                            .unwrap_or_else(|| i.to_string())
                    })
                    .collect::<Vec<_>>()
                    .join(","),
                other => other.to_string(),
            };
            (k, s)
        })
        .collect()
}

/// A request on media `R`'s input, checked against `R::LIMITS`, with its
/// shared members read ([`Submission::from_fields`]): what a handler of a
/// capability on media starts from.
pub struct MediaJob<R> {
    pub input: MediaInput,
    pub job: Submission,
    request: PhantomData<R>,
}

impl<R: MediaRequest> FromRequest<AppState> for MediaJob<R> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Error> {
        let (mut parts, body) = req.into_parts();
        let opts = JobOptions::from_request_parts(&mut parts, state).await?;
        let who = Auth::from_request_parts(&mut parts, state).await?;
        let req = Request::from_parts(parts, body);
        let mut input = media_input(state, &who, req, &R::LIMITS).await?;
        let job = Submission::from_fields(state, opts, &mut input.fields)?;
        Ok(Self {
            input,
            job,
            request: PhantomData,
        })
    }
}

impl<R: MediaRequest> MediaJob<R> {
    /// The request's parameters besides the media, as text.
    pub fn fields(&self) -> &HashMap<String, String> {
        &self.input.fields
    }

    /// Prices or submits the request `build` makes on the stored file
    /// ([`MediaInput::submit`]).
    pub async fn submit(
        self,
        state: &AppState,
        who: &Principal,
        build: impl FnOnce(MediaFile) -> R,
    ) -> ApiResult<axum::response::Response> {
        self.input.submit(state, who, self.job, build).await
    }
}

/// A request's input: media (an upload or a `fileId`), or only parameters.
pub enum Input {
    Media(Box<MediaInput>),
    Fields(HashMap<String, String>),
}

/// Reads the media input of a request (see the module docs), checked
/// against the capability's `limits`.
pub async fn media_input(
    state: &AppState,
    who: &Principal,
    req: Request,
    limits: &MediaLimits,
) -> ApiResult<MediaInput> {
    match read_input(state, who, req, limits).await? {
        Input::Media(media) => Ok(*media),
        Input::Fields(_) => Err(ApiError::invalid_parameter(
            "fileId",
            "send a `file` part (multipart/form-data) or the `fileId` of an uploaded file",
        )
        .into()),
    }
}

/// Reads a request that may carry media (a `file` part or a `fileId`) or
/// only JSON parameters. The media is checked against `limits` before
/// anything else happens to it.
pub async fn read_input(
    state: &AppState,
    who: &Principal,
    req: Request,
    limits: &MediaLimits,
) -> ApiResult<Input> {
    if is_multipart(&req) {
        let mut form = MultipartForm::from_request(req, state).await?;
        let upload = form.take_file("file")?;
        let probed = probe_upload(&upload, "file", limits).await?;
        // Its id and key are given when it is saved (`ensure_saved`).
        let file = FileRecord {
            id: FileId::random(),
            account_id: who.account_id.clone(),
            filename: upload.filename.clone(),
            content_type: content_type(&upload, &probed),
            size: upload.size as i64,
            blob_key: String::new(),
            duration: Some(probed.duration),
            created_at: 0,
        };
        return Ok(Input::Media(Box::new(MediaInput {
            file,
            fields: form.fields,
            demuxer: Some(probed.demuxer),
            pending: Some((upload, probed)),
        })));
    }
    let ApiJson(map) = ApiJson::<Map<String, Value>>::from_request(req, state).await?;
    // Ids are strings: `null` or a number is a mistake to name, not an id
    // to look up.
    if let Some((name, _)) = map
        .iter()
        .find(|(k, v)| k.ends_with("Id") && !v.is_string())
    {
        return Err(ApiError::invalid_parameter(name, "must be a string id").into());
    }
    let mut fields = as_fields(map);
    let Some(id) = fields.remove("fileId") else {
        return Ok(Input::Fields(fields));
    };
    let found = match FileId::parse(&id) {
        Some(file_id) => state.db.file(&who.account_id, &file_id).await?,
        None => None,
    };
    let file = found.ok_or_else(|| FileId::not_found(&id))?;
    let Some(seconds) = file.duration else {
        return Err(not_media().into());
    };
    // Its picture's size was checked on upload (against the largest any
    // capability reads).
    let has_video = !file.content_type.starts_with("audio/");
    limits.check(
        "fileId",
        Measured {
            seconds,
            has_audio: true,
            has_video,
            width: 0,
            height: 0,
        },
    )?;
    Ok(Input::Media(Box::new(MediaInput {
        file,
        fields,
        pending: None,
        demuxer: None,
    })))
}

fn not_media() -> ApiError {
    ApiError::new(ErrorCode::UnsupportedMediaType)
        .with_message("The file is not audio or video.")
        .with_detail("parameter", "file")
}

/// Probes an upload with ffprobe, then checks it: 415 when it is not media
/// or not of an accepted container and codec, 422 when it is media that
/// cannot be read or that exceeds `limits` (named by `parameter`). Nothing
/// decodes it before this passes.
pub async fn probe_upload(
    upload: &Upload,
    parameter: &str,
    limits: &MediaLimits,
) -> ApiResult<Probe> {
    if upload.size == 0 || upload.is_text() {
        return Err(not_media().into());
    }
    let path = upload.file.path().to_owned();
    let probed = tokio::task::spawn_blocking(move || probe(&path))
        .await
        .map_err(Error::internal)?;
    // Bytes that look like a media container but do not parse are damaged
    // media (422); anything else that does not parse is not media (415).
    let looks_like_media = ["audio/", "video/"]
        .iter()
        .any(|p| upload.sniffed_type().starts_with(p));
    let probed = probed.map_err(|e| match e {
        ProbeError::NotMedia if looks_like_media => Error::from(
            ApiError::new(ErrorCode::UnreadableMedia)
                .with_detail("parameter", parameter)
                .with_detail(
                    "reason",
                    "the file looks like audio or video but cannot be decoded",
                ),
        ),
        ProbeError::NotMedia => not_media().with_detail("parameter", parameter).into(),
        ProbeError::NotAllowed(reason) => Error::from(
            ApiError::new(ErrorCode::UnsupportedMediaType)
                .with_message(format!(
                    "The file is not accepted: {reason}. Send audio as wav, mp3, ogg, flac, \
                     m4a or webm, or video as mp4, mov, mkv or webm."
                ))
                .with_detail("parameter", parameter)
                .with_detail("reason", reason),
        ),
        ProbeError::Unreadable(reason) => Error::from(
            ApiError::new(ErrorCode::UnreadableMedia)
                .with_detail("parameter", parameter)
                .with_detail("reason", reason),
        ),
        ProbeError::Tool(e) => Error::internal(e),
    })?;
    limits.check(
        parameter,
        Measured {
            seconds: probed.duration,
            has_audio: probed.has_audio,
            has_video: probed.has_video,
            width: probed.width,
            height: probed.height,
        },
    )?;
    Ok(probed)
}

fn content_type(upload: &Upload, probed: &Probe) -> String {
    let sniffed = upload.sniffed_type();
    if sniffed != "application/octet-stream" {
        sniffed.to_owned()
    } else if probed.has_video {
        "video/octet-stream".to_owned()
    } else {
        "audio/octet-stream".to_owned()
    }
}

/// Stores a probed upload in the blob store and records it.
pub async fn save(
    state: &AppState,
    account_id: &AccountId,
    upload: &Upload,
    probed: &Probe,
) -> ApiResult<FileRecord> {
    let id = FileId::random();
    let key = format!("files/{account_id}/{id}");
    state.blobs.put_file(&key, upload.file.path()).await?;
    let record = FileRecord {
        id,
        account_id: account_id.clone(),
        filename: upload.filename.clone(),
        content_type: content_type(upload, probed),
        size: upload.size as i64,
        blob_key: key,
        duration: Some((probed.duration * 1000.0).round() / 1000.0),
        created_at: 0,
    };
    Ok(state.db.create_file(record).await?)
}
