//! The contract every operation shares, written into each operation of the
//! OpenAPI document: the error responses the platform itself can give
//! (authentication, levels, rate limits, body and parameter checks,
//! idempotency, server faults), each with the error body's schema and the
//! codes it carries. Handlers document only their own (402, 404 of a named
//! resource, 422 of their checks); this fills in the rest, so the document
//! lists every status an operation can answer.

use mediagen_core::ErrorCode;
use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::{OpenApi, RefOr};
use utoipa::Modify;

pub struct Contract;

/// The error body: `{"error": {"code", "message", "details", "request_id"}}`.
fn error_schema() -> Schema {
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    let inner = ObjectBuilder::new()
        .property(
            "code",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(codes))
                .description(Some("Stable machine code (docs/errors.md).")),
        )
        .required("code")
        .property("message", ObjectBuilder::new().schema_type(Type::String))
        .required("message")
        .property(
            "details",
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .description(Some("What the client can fix: `parameter`, `limit`, …")),
        )
        .property("request_id", ObjectBuilder::new().schema_type(Type::String))
        .required("request_id");
    Schema::Object(
        ObjectBuilder::new()
            .property("error", inner)
            .required("error")
            .build(),
    )
}

/// The statuses and codes `op` (at `path`, by `method`) can answer from the
/// platform's own checks.
fn platform_errors(path: &str, method: &str, op: &Operation) -> Vec<(u16, Vec<ErrorCode>)> {
    use ErrorCode::*;
    let mut out: Vec<(u16, Vec<ErrorCode>)> = Vec::new();
    let body = op.request_body.as_ref();
    let multipart = body.is_some_and(|b| b.content.keys().any(|k| k.starts_with("multipart/")));
    let has_input = body.is_some() || op.parameters.as_ref().is_some_and(|p| !p.is_empty());
    if has_input {
        out.push((400, vec![InvalidParameter, InvalidJson]));
    }
    // Operations without a key requirement are the signed downloads.
    if op.security.as_ref().is_some_and(|s| !s.is_empty()) {
        out.push((401, vec![MissingApiKey, InvalidApiKey]));
        out.push((403, vec![InsufficientPermissions]));
        out.push((429, vec![RateLimitExceeded]));
    } else {
        out.push((403, vec![InvalidSignature, UrlExpired]));
    }
    if path.contains('{') {
        out.push((404, vec![ResourceNotFound]));
    }
    if multipart {
        out.push((408, vec![RequestTimeout]));
    }
    if method == "post" {
        out.push((409, vec![IdempotencyKeyInUse]));
        out.push((422, vec![IdempotencyKeyReused]));
    }
    if body.is_some() {
        out.push((413, vec![PayloadTooLarge]));
        out.push((415, vec![UnsupportedMediaType]));
    }
    out.push((500, vec![InternalError]));
    out.push((503, vec![ServiceUnavailable]));
    out
}

fn describe(codes: &[ErrorCode]) -> String {
    codes
        .iter()
        .map(|c| format!("`{}`", c.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn operations(item: &mut PathItem) -> Vec<(&'static str, &mut Operation)> {
    let mut out = Vec::new();
    for (method, op) in [
        ("get", item.get.as_mut()),
        ("post", item.post.as_mut()),
        ("put", item.put.as_mut()),
        ("patch", item.patch.as_mut()),
        ("delete", item.delete.as_mut()),
    ] {
        if let Some(op) = op {
            out.push((method, op));
        }
    }
    out
}

/// Query parameters as the server reads them: `page` and `limit`
/// (`PageParams::parse`), and the filters that take one of a few values.
fn paging(op: &mut Operation) {
    use utoipa::openapi::schema::{KnownFormat, SchemaFormat};
    let Some(params) = op.parameters.as_mut() else {
        return;
    };
    for p in params.iter_mut() {
        let choices: Option<&[&str]> = match p.name.as_str() {
            "gender" => Some(&["female", "male", "neutral"]),
            "status" => Some(&["queued", "processing", "completed", "failed", "cancelled"]),
            _ => None,
        };
        if let Some(choices) = choices {
            let schema = ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(choices.to_vec()))
                .build();
            p.schema = Some(RefOr::T(Schema::Object(schema)));
            continue;
        }
        let (min, max, default, text) = match p.name.as_str() {
            "page" => (1, i64::from(i32::MAX), 1, "Page number, from 1."),
            "limit" => (
                1,
                i64::from(mediagen_core::page::MAX_LIMIT),
                i64::from(mediagen_core::page::DEFAULT_LIMIT),
                "Items per page, 1–100.",
            ),
            _ => continue,
        };
        let schema = ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
            .minimum(Some(min))
            .maximum(Some(max))
            .default(Some(default.into()))
            .build();
        p.schema = Some(RefOr::T(Schema::Object(schema)));
        p.description = Some(text.into());
    }
}

/// The component names of the JSON request bodies.
fn request_schemas(openapi: &OpenApi) -> Vec<String> {
    let mut names = Vec::new();
    for item in openapi.paths.paths.values() {
        for op in [&item.get, &item.post, &item.put, &item.patch, &item.delete]
            .into_iter()
            .flatten()
        {
            let Some(body) = &op.request_body else {
                continue;
            };
            for content in body.content.values() {
                if let Some(RefOr::Ref(r)) = &content.schema {
                    if let Some(name) = r.ref_location.rsplit('/').next() {
                        names.push(name.to_owned());
                    }
                }
            }
        }
    }
    names
}

/// Optional members of a JSON body may be `null` (read as absent, see
/// `extract::parse_json`): the document says so.
fn nullable_optionals(schema: &mut Schema) {
    use utoipa::openapi::schema::SchemaType;
    let Schema::Object(object) = schema else {
        return;
    };
    for (name, property) in object.properties.iter_mut() {
        if object.required.contains(name) {
            continue;
        }
        if let RefOr::T(Schema::Object(p)) = property {
            if let SchemaType::Type(t) = &p.schema_type {
                if *t != Type::Null {
                    p.schema_type = SchemaType::Array(vec![t.clone(), Type::Null]);
                }
            }
        }
    }
}

impl Modify for Contract {
    fn modify(&self, openapi: &mut OpenApi) {
        let bodies = request_schemas(openapi);
        let components = openapi.components.get_or_insert_with(Default::default);
        for name in bodies {
            if let Some(RefOr::T(schema)) = components.schemas.get_mut(&name) {
                nullable_optionals(schema);
            }
        }
        components
            .schemas
            .insert("Error".into(), RefOr::T(error_schema()));
        let error = || {
            ContentBuilder::new()
                .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                    "Error",
                ))))
                .build()
        };
        for (path, item) in openapi.paths.paths.iter_mut() {
            for (method, op) in operations(item) {
                paging(op);
                // Every operation that reads a body needs one.
                if let Some(body) = op.request_body.as_mut() {
                    body.required = Some(utoipa::openapi::Required::True);
                }
                for (status, codes) in platform_errors(path, method, op) {
                    let key = status.to_string();
                    match op.responses.responses.get_mut(&key) {
                        Some(RefOr::T(r)) => {
                            if r.content.is_empty() {
                                r.content.insert("application/json".into(), error());
                            }
                            if !r.description.contains(codes[0].as_str()) {
                                r.description = format!("{} {}", r.description, describe(&codes))
                                    .trim()
                                    .to_owned();
                            }
                        }
                        Some(RefOr::Ref(_)) => {}
                        None => {
                            let r = ResponseBuilder::new()
                                .description(describe(&codes))
                                .content("application/json", error())
                                .build();
                            op.responses.responses.insert(key, RefOr::T(r));
                        }
                    }
                }
                // Every other error status a handler named carries the same
                // body.
                for (status, r) in op.responses.responses.iter_mut() {
                    if let RefOr::T(r) = r {
                        let failing = status.starts_with('4') || status.starts_with('5');
                        if failing && r.content.is_empty() {
                            r.content.insert("application/json".into(), error());
                        }
                    }
                }
            }
        }
    }
}
