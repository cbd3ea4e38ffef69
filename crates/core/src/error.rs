//! The one error table. Every error the API returns has a stable machine
//! `code`, an HTTP status and a default human message; handlers add details.

use serde::Serialize;
use serde_json::{Map, Value};

macro_rules! error_codes {
    ($( $variant:ident => ($status:expr, $code:literal, $message:literal), )*) => {
        /// Stable machine-readable error codes (the `error.code` field).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode { $( $variant, )* }

        impl ErrorCode {
            /// Every code, in table order (used by docs and the OpenAPI document).
            pub const ALL: &'static [ErrorCode] = &[ $( ErrorCode::$variant, )* ];

            /// HTTP status sent with this code.
            pub fn status(self) -> u16 { match self { $( ErrorCode::$variant => $status, )* } }

            /// The machine code, e.g. `invalid_api_key`.
            pub fn as_str(self) -> &'static str { match self { $( ErrorCode::$variant => $code, )* } }

            /// The code named `code` (its machine string), if any.
            pub fn parse(code: &str) -> Option<Self> {
                match code { $( $code => Some(ErrorCode::$variant), )* _ => None }
            }

            /// The default human message.
            pub fn default_message(self) -> &'static str {
                match self { $( ErrorCode::$variant => $message, )* }
            }
        }
    };
}

error_codes! {
    InvalidParameter => (400, "invalid_parameter", "A request parameter is missing or invalid."),
    InvalidJson => (400, "invalid_json", "The request body is not valid JSON."),
    MissingApiKey => (401, "missing_api_key", "No API key was sent. Send `Authorization: Bearer <API_KEY>`."),
    InvalidApiKey => (401, "invalid_api_key", "The API key is invalid, expired or revoked."),
    InsufficientCredits => (402, "insufficient_credits", "The account does not have enough credits for this request."),
    InsufficientPermissions => (403, "insufficient_permissions", "The API key lacks the permission level this endpoint requires."),
    InvalidSignature => (403, "invalid_signature", "The signed URL is invalid."),
    UrlExpired => (403, "url_expired", "The signed URL has expired."),
    ResourceNotFound => (404, "resource_not_found", "The requested resource does not exist."),
    VoiceNotFound => (404, "voice_not_found", "The requested voice does not exist."),
    RouteNotFound => (404, "route_not_found", "No endpoint matches this path."),
    MethodNotAllowed => (405, "method_not_allowed", "This endpoint does not accept this HTTP method."),
    RequestTimeout => (408, "request_timeout", "The request body did not arrive in time; send it again."),
    ResourceAlreadyExists => (409, "resource_already_exists", "The resource already exists."),
    IdempotencyKeyInUse => (409, "idempotency_key_in_use", "A request with this Idempotency-Key is still being processed."),
    KeyLimitExceeded => (409, "key_limit_exceeded", "The account holds as many live API keys as it may; revoke one first."),
    JobNotCancellable => (409, "job_not_cancellable", "The job has already finished and cannot be cancelled."),
    JobNotCompleted => (409, "job_not_completed", "The job has not completed yet."),
    PayloadTooLarge => (413, "payload_too_large", "The request body is larger than this endpoint accepts."),
    UnsupportedMediaType => (415, "unsupported_media_type", "The request's content type is not supported here."),
    RangeNotSatisfiable => (416, "range_not_satisfiable", "The requested byte range lies outside the file."),
    UnreadableMedia => (422, "unreadable_media", "The file is audio or video that cannot be read (damaged or truncated)."),
    IdempotencyKeyReused => (422, "idempotency_key_reused", "This Idempotency-Key was already used with a different request."),
    UnprocessableEntity => (422, "unprocessable_entity", "The request is well-formed but cannot be processed."),
    InvalidRange => (422, "invalid_range", "A time range is empty or lies outside the media; `details.index` names it."),
    OutputLimitExceeded => (422, "output_limit_exceeded", "The request would make more output than its price covers; shorten it or slow it less."),
    UnsupportedPrompt => (422, "unsupported_prompt", "Nothing in the prompt names a sound this engine can make; `details.understood` lists what it can."),
    RateLimitExceeded => (429, "rate_limit_exceeded", "Too many requests for this account. Retry after the reset time."),
    ConcurrentJobsLimitExceeded => (429, "concurrent_jobs_limit_exceeded", "The account has too many jobs queued or running. Wait for one to finish."),
    ConnectionLimitExceeded => (429, "connection_limit_exceeded", "The account holds too many open connections. Reuse or close some, then retry."),
    SessionLimitExceeded => (429, "session_limit_exceeded", "The account holds as many live sessions as it may. Close one, then retry."),
    TokenLimitExceeded => (429, "token_limit_exceeded", "The account holds as many unused session tokens as it may. Use some or let them expire, then retry."),
    UpgradeRequired => (426, "upgrade_required", "This route is a WebSocket: send the upgrade headers."),
    NoSessionSlot => (503, "no_session_slot", "No worker has a free slot for a live session now. Retry shortly."),
    NoAudio => (422, "no_audio", "The file has no sound to work on."),
    NotVideo => (422, "not_video", "The file has no picture to work on."),
    NoSpeech => (422, "no_speech", "No speech was heard where the request needs some."),
    UnsupportedLanguagePair => (422, "unsupported_language_pair", "The engines here cannot dub or translate between these languages."),
    VoiceCannotSpeak => (422, "voice_cannot_speak", "The voice cannot speak this text or language."),
    IncompatibleFormat => (422, "incompatible_format", "The input cannot be copied into the requested format in fast mode; use mode accurate."),
    ClientDisconnected => (400, "client_disconnected", "The client closed the stream before the audio was complete."),
    Cancelled => (409, "cancelled", "The job was cancelled."),
    JobFailed => (500, "job_failed", "The job failed; see `details.error` for why. Credits were refunded."),
    SynthesisFailed => (500, "synthesis_failed", "The speech engine failed on this request."),
    EncodingFailed => (500, "encoding_failed", "The output could not be encoded."),
    RecognitionFailed => (500, "recognition_failed", "The speech recogniser failed on this input."),
    TranslationFailed => (500, "translation_failed", "The translator failed on this text."),
    AlignmentFailed => (500, "alignment_failed", "The words could not be aligned with the audio."),
    TrimFailed => (500, "trim_failed", "The trim could not be written."),
    RenderFailed => (500, "render_failed", "The video could not be rendered."),
    ExpansionFailed => (500, "expansion_failed", "The avatar could not be expanded."),
    GenerationFailed => (500, "generation_failed", "The generator failed on this request."),
    InvalidPayload => (500, "invalid_payload", "The job's stored request could not be read."),
    UnsupportedJobKind => (500, "unsupported_job_kind", "No worker here can run this kind of job."),
    WorkerLost => (500, "worker_lost", "The worker running the job stopped responding on every attempt."),
    TestFailure => (500, "test_failure", "A test job failed, as it was asked to."),
    StorageError => (503, "storage_error", "Storage was briefly unavailable while the job ran."),
    ModelUnavailable => (503, "model_unavailable", "The model this request names cannot be loaded here."),
    DubUnavailable => (503, "dub_unavailable", "Dubbing cannot run with the engines installed here."),
    TestTransient => (503, "test_transient", "A test job failed transiently, as it was asked to."),
    JobTimeout => (504, "job_timeout", "The job did not finish within its time limit."),
    InternalError => (500, "internal_error", "An internal error occurred. Quote the request id when reporting it."),
    EngineUnavailable => (503, "engine_unavailable", "The engine this request needs is not installed on this server."),
    ServiceUnavailable => (503, "service_unavailable", "The service is temporarily unavailable."),
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// An error as the API reports it: code, message and structured details.
/// The request id is added when the response is written.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Map<String, Value>,
}

impl ApiError {
    /// An error with the code's default message and no details.
    pub fn new(code: ErrorCode) -> Self {
        Self {
            code,
            message: code.default_message().to_owned(),
            details: Map::new(),
        }
    }

    /// Replaces the human message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// Adds one entry to `details`.
    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    /// A 400 `invalid_parameter` naming the parameter and the reason.
    pub fn invalid_parameter(parameter: &str, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Self::new(ErrorCode::InvalidParameter)
            .with_message(format!("Invalid parameter `{parameter}`: {reason}"))
            .with_detail("parameter", parameter)
            .with_detail("reason", reason)
    }

    /// A 422 `unprocessable_entity`: a well-formed `parameter` that cannot
    /// be processed, and why.
    pub fn unprocessable(parameter: &str, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Self::new(ErrorCode::UnprocessableEntity)
            .with_message(format!("`{parameter}`: {reason}."))
            .with_detail("parameter", parameter)
            .with_detail("reason", reason)
    }

    /// A 404 `resource_not_found` naming the kind of resource.
    pub fn not_found(resource: &str, id: &str) -> Self {
        Self::new(ErrorCode::ResourceNotFound)
            .with_message(format!("No {resource} with id `{id}` exists."))
            .with_detail("resource", resource)
            .with_detail("id", id)
    }

    /// A 404 `voice_not_found`: no voice by `id` in the catalog or the
    /// account's.
    pub fn voice_not_found(id: &str) -> Self {
        Self::new(ErrorCode::VoiceNotFound)
            .with_message(format!("No voice with id `{id}` exists."))
            .with_detail("parameter", "voiceId")
    }

    /// A 500 that hides its cause; the cause is for the log only.
    pub fn internal() -> Self {
        Self::new(ErrorCode::InternalError)
    }

    /// HTTP status of this error.
    pub fn status(&self) -> u16 {
        self.code.status()
    }

    /// The class of error as OpenAI's clients read it (`error.type`): its
    /// SDKs pick their exception by the status, and show this beside it.
    pub fn kind(&self) -> &'static str {
        match self.status() {
            401 => "authentication_error",
            402 => "insufficient_quota",
            403 => "permission_error",
            429 => "rate_limit_error",
            500.. => "server_error",
            _ => "invalid_request_error",
        }
    }

    /// The JSON body `{"error":{code,message,details,request_id,type,param}}`:
    /// the spec's members, and `type` and `param` (the offending parameter,
    /// when there is one) as OpenAI's clients read them, so that one body
    /// serves both kinds of client.
    pub fn body(&self, request_id: &str) -> Value {
        let mut error = serde_json::json!({
            "code": self.code,
            "message": self.message,
            "details": self.details,
            "request_id": request_id,
            "type": self.kind(),
        });
        if let Some(param) = self.details.get("parameter").filter(|p| p.is_string()) {
            error["param"] = param.clone();
        }
        serde_json::json!({ "error": error })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for ApiError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_statuses_are_errors() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            assert!(seen.insert(code.as_str()), "duplicate {}", code.as_str());
            assert!(code.status() >= 400);
        }
    }

    #[test]
    fn every_code_is_documented_with_its_status() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/errors.md"))
                .unwrap();
        for code in ErrorCode::ALL {
            let row = format!("| {} | `{}` |", code.status(), code.as_str());
            assert!(doc.contains(&row), "docs/errors.md lacks the row {row}");
        }
    }

    #[test]
    fn body_has_the_documented_shape() {
        let body = ApiError::invalid_parameter("text", "must not be empty").body("req_1");
        assert_eq!(body["error"]["code"], "invalid_parameter");
        assert_eq!(body["error"]["details"]["parameter"], "text");
        assert_eq!(body["error"]["request_id"], "req_1");
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert_eq!(body["error"]["param"], "text");
        let body = ApiError::new(ErrorCode::MissingApiKey).body("req_2");
        assert_eq!(body["error"]["type"], "authentication_error");
        assert!(body["error"].get("param").is_none(), "{body}");
    }
}
