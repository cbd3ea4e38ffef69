//! Extractors that turn HTTP input into typed values or API errors.

use axum::body::to_bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{header, request::Parts};
use mediagen_core::{ApiError, ErrorCode, TypedId};
use serde::de::DeserializeOwned;

use crate::error::{too_large, Error};
use crate::middleware::{IdempotencyKey, Principal};
use crate::state::AppState;

/// A resource id from the path, parsed at the edge: text that cannot be an
/// id names nothing, so it answers the resource's 404.
pub struct PathId<T>(pub T);

impl<T: TypedId + Send> FromRequestParts<AppState> for PathId<T> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        let axum::extract::Path(text) =
            axum::extract::Path::<String>::from_request_parts(parts, state)
                .await
                .map_err(|_| Error::from(ApiError::new(ErrorCode::RouteNotFound)))?;
        T::parse_text(&text)
            .map(PathId)
            .ok_or_else(|| T::not_found(&text).into())
    }
}

/// An id named in a request body or form: text that cannot be an id names
/// nothing, so it answers the resource's 404 as an unknown id does.
pub fn client_id<T: TypedId>(text: &str) -> Result<T, Error> {
    T::parse_text(text).ok_or_else(|| T::not_found(text).into())
}

/// The authenticated caller. The level a route needs is declared once,
/// with the route (`app.rs`), and checked before any replay, cache or
/// reading of the body; a handler only learns who calls.
pub struct Auth {
    pub principal: Principal,
}

impl std::ops::Deref for Auth {
    type Target = Principal;
    fn deref(&self) -> &Principal {
        &self.principal
    }
}

impl FromRequestParts<AppState> for Auth {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Error> {
        let principal = parts
            .extensions
            .get::<Principal>()
            .cloned()
            .ok_or_else(|| Error::new(ErrorCode::MissingApiKey))?;
        Ok(Self { principal })
    }
}

/// The operator: an admin key of the operator account (accounts, credits).
pub struct Operator(pub Principal);

impl FromRequestParts<AppState> for Operator {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        let auth = Auth::from_request_parts(parts, state).await?;
        if !auth.is_operator {
            return Err(ApiError::new(ErrorCode::InsufficientPermissions)
                .with_message(
                    "Only admin keys of the operator account may manage accounts and credits.",
                )
                .with_detail("required", "operator")
                .into());
        }
        Ok(Self(auth.principal))
    }
}

/// Request options that ride in headers.
pub struct JobOptions {
    /// `Prefer: respond-async` forces a 202 answer.
    pub respond_async: bool,
    pub idempotency_key: Option<String>,
    /// The request's `webhookUrl` (a body member, set by
    /// [`JobOptions::with_webhook`] once checked).
    pub webhook_url: Option<String>,
}

impl JobOptions {
    /// Takes the request's `webhookUrl`: 400 unless it is an http(s) URL
    /// of at most 2048 characters, 422 when it does not parse or (unless
    /// `webhook_allow_private`) points at an internal network.
    pub fn with_webhook(mut self, state: &AppState, url: Option<String>) -> Result<Self, Error> {
        if let Some(url) = url {
            let allow = state.config.webhook_allow_private;
            let checked = crate::webhooks::target::check_url(&url, "webhookUrl", allow)?;
            self.webhook_url = Some(checked.to_string());
        }
        Ok(self)
    }
}

impl FromRequestParts<AppState> for JobOptions {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Error> {
        let respond_async = parts
            .headers
            .get_all("prefer")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|p| p.trim().eq_ignore_ascii_case("respond-async"));
        let idempotency_key = parts
            .extensions
            .get::<IdempotencyKey>()
            .map(|k| k.0.clone());
        Ok(Self {
            respond_async,
            idempotency_key,
            webhook_url: None,
        })
    }
}

/// A JSON body: 415 without a JSON content type, 413 beyond the JSON body
/// limit, 408 when it does not arrive whole within `upload_idle_seconds`,
/// 400 `invalid_json` when unparsable or when a member is named twice, and 400 `invalid_parameter`
/// naming the field when a value has the wrong type or is missing.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Error> {
        parse_json(&json_bytes(req, state).await?).map(ApiJson)
    }
}

/// Whether a request's body is JSON by its content type.
pub fn is_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let mime = v.split(';').next().unwrap_or("").trim();
            mime.eq_ignore_ascii_case("application/json") || mime.ends_with("+json")
        })
}

/// A JSON body's bytes, with [`ApiJson`]'s checks of its content type,
/// size and arrival.
pub async fn json_bytes(req: Request, state: &AppState) -> Result<axum::body::Bytes, Error> {
    if !is_json(req.headers()) {
        return Err(ApiError::new(ErrorCode::UnsupportedMediaType)
            .with_message("Send the request body as JSON with `Content-Type: application/json`.")
            .into());
    }
    // The body arrives whole within the upload idle time (408): a
    // client trickling a JSON body does not hold the request open.
    let within = std::time::Duration::from_secs_f64(state.config.upload_idle_seconds.max(0.1));
    tokio::time::timeout(
        within,
        to_bytes(req.into_body(), state.config.json_body_limit),
    )
    .await
    .map_err(|_| Error::from(mediagen_http::form::timed_out()))?
    .map_err(|_| too_large(state.config.json_body_limit))
}

/// Parses JSON into `T`, naming the offending field on failure. A member
/// of the body set to `null` is the same as an absent one (optional fields
/// take their default; required ones are missing).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let mut value = mediagen_http::json::unique_value(&mut *de).map_err(|e| {
        Error::from(
            ApiError::new(ErrorCode::InvalidJson)
                .with_message(format!("The request body is not valid JSON: {e}")),
        )
    })?;
    // One JSON value and nothing after it: `{..}{..}` or trailing text is
    // not a body this API reads.
    de.end().map_err(|_| {
        Error::from(
            ApiError::new(ErrorCode::InvalidJson)
                .with_message("The request body has data after its JSON value."),
        )
    })?;
    let mut nulls = Vec::new();
    if let serde_json::Value::Object(members) = &mut value {
        members.retain(|k, v| {
            if v.is_null() {
                nulls.push(k.clone());
            }
            !v.is_null()
        });
    }
    whole_numbers(&mut value);
    // A null member is absent only if `T` has such a member: an unknown
    // name stays an error whatever its value.
    if !nulls.is_empty() {
        let known = known_members::<T>();
        for name in nulls {
            let unknown = match &known {
                Some(known) => !known.contains(&name),
                // The body with the name set to a value no member takes
                // (`{}` is no string, number or list) is refused as an
                // unknown field only if it is one (a type with a flattened
                // member lists no names, and names an unknown field last).
                None => {
                    let mut probe = value.clone();
                    if let serde_json::Value::Object(members) = &mut probe {
                        members.insert(name.clone(), serde_json::json!({}));
                    }
                    serde_json::from_value::<T>(probe)
                        .is_err_and(|e| e.to_string().starts_with("unknown field"))
                }
            };
            if unknown {
                return Err(ApiError::invalid_parameter(&name, "unknown parameter").into());
            }
        }
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        // An unknown member: a plain body's path ends with its name, a
        // body with a flattened member names it last, at its parent's.
        if let Some(field) = message
            .strip_prefix("unknown field `")
            .and_then(|m| m.split('`').next())
        {
            let name = if path == "." {
                field.to_owned()
            } else if path.rsplit('.').next() == Some(field) {
                path.clone()
            } else {
                format!("{path}.{field}")
            };
            return Error::from(ApiError::invalid_parameter(&name, "unknown parameter"));
        }
        // serde reports a missing field at its parent's path.
        let parameter = match message
            .strip_prefix("missing field `")
            .and_then(|m| m.split('`').next())
        {
            Some(field) if path == "." => field.to_owned(),
            Some(field) => format!("{path}.{field}"),
            None if path == "." => "body".to_owned(),
            None => path,
        };
        let reason = message
            .split(" at line ")
            .next()
            .unwrap_or(&message)
            .to_owned();
        Error::from(ApiError::invalid_parameter(&parameter, reason))
    })
}

/// The member names a body type `T` takes, as serde lists them when it
/// refuses a name no body uses (one probe, however many names are checked);
/// `None` when `T` takes any name or the list cannot be read.
fn known_members<T: DeserializeOwned>() -> Option<Vec<String>> {
    const NOBODY: &str = "\u{1}";
    let refusal = serde_json::from_value::<T>(serde_json::json!({ NOBODY: null }))
        .err()?
        .to_string();
    let rest = refusal.strip_prefix(&format!("unknown field `{NOBODY}`, "))?;
    if rest.starts_with("there are no fields") {
        return Some(Vec::new());
    }
    let list = rest
        .strip_prefix("expected one of ")
        .or_else(|| rest.strip_prefix("expected "))?;
    // serde writes `a`, `a` or `b`, and one of `a`, `b`, `c`.
    Some(
        list.split(", ")
            .flat_map(|part| part.split(" or "))
            .map(|n| n.trim_matches('`').to_owned())
            .collect(),
    )
}

/// Numbers written with a zero fraction (`5.0`, `-284.0`) are the integers
/// they equal, as JSON Schema counts them: an integer field takes them.
fn whole_numbers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            // Exactly representable as i64 (2^63 itself is not).
            if x.fract() == 0.0 && x >= i64::MIN as f64 && x < i64::MAX as f64 {
                *value = Value::from(x as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers),
        Value::Object(members) => members.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

/// Query parameters: 400 `invalid_parameter` naming the bad one.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned> FromRequestParts<AppState> for ApiQuery<T> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Error> {
        let query = parts.uri.query().unwrap_or("");
        let de = serde_urlencoded_de(query);
        de.map(ApiQuery)
    }
}

fn serde_urlencoded_de<T: DeserializeOwned>(query: &str) -> Result<T, Error> {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let mut map = serde_json::Map::new();
    for (k, v) in pairs {
        map.insert(k, serde_json::Value::String(v));
    }
    let value = serde_json::Value::Object(map);
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        let parameter = if path == "." {
            "query".to_owned()
        } else {
            path
        };
        ApiError::invalid_parameter(&parameter, message).into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        text: String,
        n: Option<u32>,
    }

    #[test]
    fn whole_floats_are_integers() {
        let b: Body = parse_json(br#"{"text": "a", "n": 5.0}"#).unwrap();
        assert_eq!(b.n, Some(5));
        let e = parse_json::<Body>(br#"{"text": "a", "n": 5.5}"#).unwrap_err();
        assert_eq!(e.api.details["parameter"], "n");
        // Parsed exactly (serde_json's float_roundtrip): 16 digits and a
        // zero fraction are still a whole number.
        #[derive(serde::Deserialize)]
        struct Seed {
            seed: u64,
        }
        let s: Seed = parse_json(br#"{"seed": 1952943182550307.0}"#).unwrap();
        assert_eq!(s.seed, 1_952_943_182_550_307);
        let e = parse_json::<Body>(br#"{"text": "a", "n": 1e300}"#).unwrap_err();
        assert_eq!(e.api.details["parameter"], "n");
    }

    #[test]
    fn json_errors_name_the_parameter() {
        let e = parse_json::<Body>(br#"{"n": 1}"#).unwrap_err();
        assert_eq!(e.api.details["parameter"], "text");
        let e = parse_json::<Body>(br#"{"text": "a", "n": "x"}"#).unwrap_err();
        assert_eq!(e.api.details["parameter"], "n");
        let e = parse_json::<Body>(br#"{"text": "a", "#).unwrap_err();
        assert_eq!(e.api.code, ErrorCode::InvalidJson);
    }

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Three {
        a: Option<u8>,
        b: Option<u8>,
        c: Option<u8>,
    }

    #[test]
    fn null_members_are_absent_but_unknown_names_stay_errors() {
        assert_eq!(
            known_members::<Three>(),
            Some(vec!["a".to_owned(), "b".to_owned(), "c".to_owned()])
        );
        assert!(parse_json::<Three>(br#"{"a": null, "c": null}"#).is_ok());
        let e = parse_json::<Three>(br#"{"a": null, "d": null}"#).unwrap_err();
        assert_eq!(e.api.details["parameter"], "d");
        let b: Body = parse_json(br#"{"text": "a", "n": null}"#).unwrap();
        assert_eq!(b.n, None);
        let e = parse_json::<Body>(br#"{"text": "a", "": null}"#).unwrap_err();
        assert_eq!(e.api.details["parameter"], "");
        let e = parse_json::<Body>(br#"{"text": "a", "colour": null}"#).unwrap_err();
        assert_eq!(e.api.details["parameter"], "colour");
        assert_eq!(
            known_members::<Body>(),
            Some(vec!["text".to_owned(), "n".to_owned()])
        );
        let e = parse_json::<Body>(br#"{"text": null}"#).unwrap_err();
        assert_eq!(
            e.api.details["parameter"], "text",
            "a required member set to null is missing"
        );
    }

    /// A body with the shared job members flattened in.
    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Flat {
        text: String,
        #[serde(flatten)]
        job: mediagen_core::JobFields,
    }

    #[test]
    fn a_flattened_body_names_unknown_members_too() {
        assert_eq!(known_members::<Flat>(), None);
        let b: Flat = parse_json(br#"{"text": "a", "dryRun": true, "webhookUrl": null}"#).unwrap();
        assert_eq!(b.job.dry_run, Some(true));
        for body in [
            &br#"{"text": "a", "colour": "red"}"#[..],
            br#"{"text": "a", "colour": null}"#,
            br#"{"colour": null, "text": "a", "dryRun": false}"#,
        ] {
            let e = parse_json::<Flat>(body).unwrap_err();
            assert_eq!(
                e.api.details["parameter"],
                "colour",
                "{}",
                String::from_utf8_lossy(body)
            );
            assert_eq!(e.api.details["reason"], "unknown parameter");
        }
        // Unknown in a body of the plain kind: named the same way.
        let e = parse_json::<Body>(br#"{"text": "a", "colour": 1}"#).unwrap_err();
        assert_eq!(e.api.details["parameter"], "colour");
        // The shared members themselves, read alone, are named.
        let e = parse_json::<mediagen_core::JobFields>(br#"{"text": "a", "dryRun": "yes"}"#)
            .unwrap_err();
        assert_eq!(e.api.details["parameter"], "dryRun");
    }
}
