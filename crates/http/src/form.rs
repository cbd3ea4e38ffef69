//! Multipart forms, streamed part by part: files to temporary files on
//! disk (never held whole in memory), text fields counted as they arrive,
//! every read bounded in size and time.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use axum::extract::Multipart;
use mediagen_core::{ApiError, ErrorCode};
use tempfile::NamedTempFile;
use tokio::io::AsyncWriteExt;
use tokio::time::{timeout, Duration, Instant};

/// Why a form was not read: refused, with the error the client gets, or
/// the server's own disk failed (an internal error, never shown).
#[derive(Debug)]
pub enum FormError {
    Refused(ApiError),
    Io(std::io::Error),
}

impl From<ApiError> for FormError {
    fn from(e: ApiError) -> Self {
        Self::Refused(e)
    }
}

impl From<std::io::Error> for FormError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

/// 413: the body is over `limit` bytes.
pub fn too_large(limit: u64) -> ApiError {
    ApiError::new(ErrorCode::PayloadTooLarge)
        .with_message(format!(
            "The request body exceeds the limit of {limit} bytes."
        ))
        .with_detail("limit", limit)
}

/// 408: an upload stalled or ran past its time.
pub fn timed_out() -> ApiError {
    ApiError::new(ErrorCode::RequestTimeout)
        .with_message("The upload stalled or took too long; send it again.")
}

/// Largest text field accepted in a multipart form.
const TEXT_FIELD_LIMIT: usize = 64 * 1024;
/// Largest sum of all text fields of one form.
const TEXT_TOTAL_LIMIT: usize = 256 * 1024;
/// Most parts (files and text fields) in one form.
const MAX_PARTS: usize = 64;
/// How much of an over-limit body is read and dropped before answering 413.
pub const DRAIN: usize = 8 * 1024 * 1024;
/// Bytes kept from the start of each file for content sniffing.
const HEAD_LEN: usize = 8192;

/// One uploaded file, on disk until dropped, alone in a directory of its
/// own: the tools that probe it run there and see nothing else.
pub struct Upload {
    pub file: NamedTempFile,
    /// Removed after `file` (fields drop in order).
    _dir: tempfile::TempDir,
    /// The client's file name, reduced to a safe base name.
    pub filename: String,
    pub size: u64,
    /// The first bytes, for sniffing the real type.
    pub head: Vec<u8>,
}

impl Upload {
    /// True when the file starts as text (no NUL bytes, printable UTF-8):
    /// never media we accept. Text "media" (HLS playlists, ffmpeg concat
    /// lists, SDP) would make ffmpeg open other files, so it is refused
    /// before any tool reads it.
    pub fn is_text(&self) -> bool {
        let head = &self.head[..self.head.len().min(1024)];
        !head.is_empty()
            && !head.contains(&0)
            && match std::str::from_utf8(head) {
                Ok(s) => s.chars().all(|c| !c.is_control() || c.is_whitespace()),
                // A multi-byte character cut at the end of the sample.
                Err(e) => e.valid_up_to() + 4 > head.len(),
            }
    }

    /// The media type found in the content (not the name or the header).
    pub fn sniffed_type(&self) -> &'static str {
        infer::get(&self.head)
            .map(|t| t.mime_type())
            .unwrap_or("application/octet-stream")
    }
}

/// A parsed multipart form: files by field name and text fields.
pub struct MultipartForm {
    pub files: HashMap<String, Vec<Upload>>,
    pub fields: HashMap<String, String>,
}

impl MultipartForm {
    /// The single file of `name`, or 400 naming the part.
    pub fn take_file(&mut self, name: &str) -> Result<Upload, ApiError> {
        match self.files.remove(name) {
            Some(mut v) if v.len() == 1 => Ok(v.remove(0)),
            Some(_) => Err(ApiError::invalid_parameter(
                name,
                "send exactly one file in this part",
            )),
            None => Err(ApiError::invalid_parameter(
                name,
                "a file part with this name is required",
            )),
        }
    }
}

/// A base name without directories or control characters.
pub fn safe_filename(raw: &str) -> String {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or("");
    let clean: String = base.chars().filter(|c| !c.is_control()).take(200).collect();
    let clean = clean.trim().trim_start_matches('.').to_owned();
    if clean.is_empty() {
        "upload".to_owned()
    } else {
        clean
    }
}

/// How much of a form is read, and how fast it must come.
#[derive(Debug, Clone, Copy)]
pub struct FormLimits {
    /// Bytes of all files together.
    pub body: u64,
    /// Longest wait for the next piece.
    pub idle: Duration,
    /// Longest time for the whole form.
    pub total: Duration,
}

impl MultipartForm {
    /// Reads a form part by part: files stream to temporary files in `tmp`,
    /// text fields are counted as they arrive (see the limits above).
    pub async fn read(
        mut multipart: Multipart,
        limits: &FormLimits,
        tmp: &std::path::Path,
    ) -> Result<Self, FormError> {
        let limit = limits.body;
        let mut form = MultipartForm {
            files: HashMap::new(),
            fields: HashMap::new(),
        };
        let idle = limits.idle;
        let deadline = Instant::now() + limits.total;
        // Each read waits at most `idle`, and never past the deadline.
        let within = |started: Instant| {
            let left = deadline.saturating_duration_since(started);
            idle.min(left)
        };
        let (mut total, mut text_total, mut parts) = (0u64, 0usize, 0usize);
        loop {
            let next = timeout(within(Instant::now()), multipart.next_field())
                .await
                .map_err(|_| timed_out())?;
            let Some(mut field) = next.map_err(bad_multipart)? else {
                break;
            };
            parts += 1;
            if parts > MAX_PARTS {
                return Err(ApiError::invalid_parameter(
                    "body",
                    format!("a form may have at most {MAX_PARTS} parts"),
                )
                .with_detail("limit", "max_parts")
                .into());
            }
            let name = field.name().unwrap_or("").to_owned();
            if let Some(filename) = field.file_name().map(safe_filename) {
                let dir = tempfile::Builder::new().prefix("upload-").tempdir_in(tmp)?;
                let file = NamedTempFile::new_in(dir.path())?;
                let mut out = tokio::fs::File::from_std(file.reopen()?);
                let (mut size, mut head) = (0u64, Vec::new());
                while let Some(chunk) = timeout(within(Instant::now()), field.chunk())
                    .await
                    .map_err(|_| timed_out())?
                    .map_err(bad_multipart)?
                {
                    size += chunk.len() as u64;
                    total += chunk.len() as u64;
                    if total > limit {
                        let mut drained = 0;
                        while drained < DRAIN {
                            match field.chunk().await {
                                Ok(Some(c)) => drained += c.len(),
                                _ => break,
                            }
                        }
                        return Err(too_large(limit).into());
                    }
                    if head.len() < HEAD_LEN {
                        head.extend_from_slice(&chunk[..chunk.len().min(HEAD_LEN - head.len())]);
                    }
                    out.write_all(&chunk).await?;
                }
                out.flush().await?;
                form.files.entry(name).or_default().push(Upload {
                    file,
                    _dir: dir,
                    filename,
                    size,
                    head,
                });
            } else {
                let mut text = Vec::new();
                while let Some(chunk) = timeout(within(Instant::now()), field.chunk())
                    .await
                    .map_err(|_| timed_out())?
                    .map_err(bad_multipart)?
                {
                    // Counted as it arrives: nothing over the limits is held.
                    text_total += chunk.len();
                    if text.len() + chunk.len() > TEXT_FIELD_LIMIT {
                        return Err(ApiError::invalid_parameter(
                            &name,
                            "text fields are limited to 64 KiB",
                        )
                        .with_detail("limit", "text_field_bytes")
                        .into());
                    }
                    if text_total > TEXT_TOTAL_LIMIT {
                        return Err(ApiError::invalid_parameter(
                            &name,
                            "the text fields of a form are limited to 256 KiB in all",
                        )
                        .with_detail("limit", "text_total_bytes")
                        .into());
                    }
                    text.extend_from_slice(&chunk);
                }
                let text = String::from_utf8(text)
                    .map_err(|_| ApiError::invalid_parameter(&name, "must be UTF-8 text"))?;
                // A list (`name[]`, as OpenAI's SDKs send one) may repeat:
                // its values are joined with commas. Any other name once.
                match form.fields.entry(name) {
                    Entry::Vacant(slot) => {
                        slot.insert(text);
                    }
                    Entry::Occupied(mut slot) if slot.key().ends_with("[]") => {
                        let joined = slot.get_mut();
                        joined.push(',');
                        joined.push_str(&text);
                    }
                    Entry::Occupied(slot) => {
                        return Err(
                            ApiError::invalid_parameter(slot.key(), "must be sent once").into()
                        );
                    }
                }
            }
        }
        Ok(form)
    }
}

fn bad_multipart(e: axum::extract::multipart::MultipartError) -> ApiError {
    ApiError::invalid_parameter(
        "body",
        format!("malformed multipart body: {}", e.body_text()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::extract::FromRequest;

    #[test]
    fn filenames_lose_paths_and_control_characters() {
        assert_eq!(safe_filename("../../etc/passwd"), "passwd");
        assert_eq!(safe_filename("C:\\Users\\me\\talk.wav"), "talk.wav");
        assert_eq!(safe_filename("a\u{0}b.mp3"), "ab.mp3");
        assert_eq!(safe_filename(".."), "upload");
        assert_eq!(safe_filename(""), "upload");
    }

    /// Each uploaded file sits alone in a directory of its own, where the
    /// tools that probe it run: no other upload is within reach of a
    /// relative name.
    #[tokio::test]
    async fn each_upload_is_alone_in_its_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let mut body = String::new();
        for name in ["a", "b"] {
            body.push_str(&format!(
                "--B\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}.wav\"\r\n\r\nRIFF {name}\r\n"
            ));
        }
        body.push_str("--B--\r\n");
        let req = axum::http::Request::builder()
            .method("POST")
            .header("content-type", "multipart/form-data; boundary=B")
            .body(axum::body::Body::from(body))
            .unwrap();
        let multipart = Multipart::from_request(req, &()).await.unwrap();
        let limits = FormLimits {
            body: 4096,
            idle: Duration::from_secs(5),
            total: Duration::from_secs(5),
        };
        let mut form = MultipartForm::read(multipart, &limits, tmp.path())
            .await
            .unwrap();
        let (a, b) = (form.take_file("a").unwrap(), form.take_file("b").unwrap());
        let (da, db) = (
            a.file.path().parent().unwrap(),
            b.file.path().parent().unwrap(),
        );
        assert_ne!(da, db);
        for (upload, dir) in [(&a, da), (&b, db)] {
            let listed: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            assert_eq!(listed, [upload.file.path().to_owned()]);
        }
        let gone = da.to_owned();
        drop(a);
        assert!(!gone.exists(), "the directory goes with the upload");
    }
}
