//! The contract every operation shares, written into each operation of the
//! OpenAPI document: the error responses the platform itself can give
//! (authentication, levels, rate limits, body and parameter checks,
//! idempotency, server faults), each with the error body's schema and the
//! codes it carries. Handlers document only their own (402, 404 of a named
//! resource, 422 of their checks); this fills in the rest, so the document
//! lists every status an operation can answer.

use mediagen_core::{ErrorCode, JobKind};
use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::{OpenApi, RefOr};
use utoipa::Modify;

pub struct Contract;

/// The error body: `{"error": {"code", "message", "details", "request_id",
/// "type", "param"}}`.
fn error_schema() -> Schema {
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    let inner = ObjectBuilder::new()
        .property(
            "code",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(codes))
                .description(Some("Stable machine code: one of these, never renamed.")),
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
        .required("request_id")
        .property(
            "type",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some([
                    "invalid_request_error",
                    "authentication_error",
                    "insufficient_quota",
                    "permission_error",
                    "rate_limit_error",
                    "server_error",
                ]))
                .description(Some("The class of error, as OpenAI's clients read it.")),
        )
        .required("type")
        .property(
            "param",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(
                    "The offending parameter, when there is one (`details.parameter`).",
                )),
        );
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
fn paging(path: &str, op: &mut Operation) {
    use crate::routes::{avatars, voices};
    use utoipa::openapi::schema::{KnownFormat, SchemaFormat};
    let Some(params) = op.parameters.as_mut() else {
        return;
    };
    let listed: &[(&str, &[&str])] = match path {
        "/v1/avatars" => &avatars::LIST_CHOICES,
        "/v1/voices" => &voices::LIST_CHOICES,
        _ => &[],
    };
    let kinds: Vec<&str> = JobKind::ALL.iter().map(|k| k.name()).collect();
    for p in params.iter_mut() {
        let choices: Option<&[&str]> = match p.name.as_str() {
            "gender" => Some(&["female", "male", "neutral"]),
            "status" => Some(&["queued", "processing", "completed", "failed", "cancelled"]),
            "kind" if path == "/v1/jobs" => Some(&kinds),
            name => listed.iter().find(|(n, _)| *n == name).map(|(_, c)| *c),
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

/// The component names of the request bodies, each with whether it is
/// JSON (or a multipart form).
fn request_schemas(openapi: &OpenApi) -> Vec<(String, bool)> {
    let mut names = Vec::new();
    for item in openapi.paths.paths.values() {
        for op in [&item.get, &item.post, &item.put, &item.patch, &item.delete]
            .into_iter()
            .flatten()
        {
            let Some(body) = &op.request_body else {
                continue;
            };
            for (kind, content) in &body.content {
                if let Some(RefOr::Ref(r)) = &content.schema {
                    if let Some(name) = r.ref_location.rsplit('/').next() {
                        names.push((name.to_owned(), kind == "application/json"));
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
        match property {
            RefOr::T(Schema::Object(p)) => {
                if let SchemaType::Type(t) = &p.schema_type {
                    if *t != Type::Null {
                        p.schema_type = SchemaType::Array(vec![t.clone(), Type::Null]);
                    }
                }
            }
            RefOr::T(Schema::Array(a)) => {
                if matches!(a.schema_type, SchemaType::Type(Type::Array)) {
                    a.schema_type = SchemaType::Array(vec![Type::Array, Type::Null]);
                }
            }
            _ => {}
        }
    }
}

/// The component names `schema`'s properties refer to (directly or as
/// array items).
fn referenced(schema: &Schema) -> Vec<String> {
    let Schema::Object(object) = schema else {
        return Vec::new();
    };
    let name = |r: &RefOr<Schema>| match r {
        RefOr::Ref(r) => r.ref_location.rsplit('/').next().map(str::to_owned),
        RefOr::T(Schema::Array(a)) => match &a.items {
            utoipa::openapi::schema::ArrayItems::RefOrSchema(item) => match item.as_ref() {
                RefOr::Ref(r) => r.ref_location.rsplit('/').next().map(str::to_owned),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    };
    object.properties.values().filter_map(name).collect()
}

/// A body that flattens a shared member type (`JobFields`) is written by
/// utoipa as the `allOf` of that type's object and the body's own; the
/// document writes the one object the body reads (its members, its
/// required ones, its description).
fn inline_flattened(schema: &mut Schema) {
    use utoipa::openapi::schema::Object;
    let Schema::AllOf(all) = schema else {
        return;
    };
    let mut parts: Vec<&Object> = Vec::new();
    for item in &all.items {
        match item {
            RefOr::T(Schema::Object(o)) => parts.push(o),
            _ => return,
        }
    }
    let Some((own, shared)) = parts.split_last() else {
        return;
    };
    let mut object = (*own).clone();
    for part in shared {
        for (name, property) in &part.properties {
            object.properties.insert(name.clone(), property.clone());
        }
        object.required.extend(part.required.iter().cloned());
    }
    object.description = all.description.clone();
    *schema = Schema::Object(object);
}

/// Every body refuses members (or form parts) it does not define (each
/// body type denies unknown fields), and so do the objects inside it: the
/// document says so.
fn closed(schema: &mut Schema) {
    use utoipa::openapi::schema::AdditionalProperties;
    if let Schema::Object(object) = schema {
        object.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(false)));
    }
}

/// The forms that may name an uploaded file (`fileId`) in a JSON body
/// instead of carrying a `file` part: those `media_input` reads.
fn by_file_id_forms() -> [String; 5] {
    use mediagen_jobs::{avatar, dub, stt, video, voice};
    use utoipa::ToSchema;
    [
        stt::SpeechToTextForm::name(),
        video::VideoTrimForm::name(),
        voice::VoiceChangerForm::name(),
        dub::DubbingForm::name(),
        avatar::AvatarExpansionForm::name(),
    ]
    .map(|name| name.into_owned())
}

/// The JSON form of a multipart form (see [`by_file_id_forms`]): the
/// `file` part becomes `fileId`, the id of an uploaded file.
fn by_file_id(form: &Schema) -> Option<Schema> {
    let Schema::Object(form) = form else {
        return None;
    };
    let mut json = form.clone();
    json.properties.remove("file")?;
    json.properties.insert(
        "fileId".into(),
        RefOr::T(Schema::Object(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .description(Some("The id of a file uploaded with `POST /v1/files` (404 when the account has none by it)."))
                .build(),
        )),
    );
    for name in json.required.iter_mut() {
        if name == "file" {
            *name = "fileId".into();
        }
    }
    Some(Schema::Object(json))
}

/// Adds the JSON alternative to the operations whose multipart form may
/// name an uploaded file instead, and sends a form's lists of objects as
/// JSON text parts (how the handlers read them).
fn media_bodies(openapi: &mut OpenApi) {
    use utoipa::openapi::encoding::EncodingBuilder;
    let components = openapi.components.get_or_insert_with(Default::default);
    let mut lists: Vec<(String, Vec<String>)> = Vec::new();
    let by_file_id_forms = by_file_id_forms();
    for name in &by_file_id_forms {
        let Some(RefOr::T(form)) = components.schemas.get(name) else {
            continue;
        };
        if let Some(json) = by_file_id(form) {
            components
                .schemas
                .insert(format!("{name}ByFileId"), RefOr::T(json));
        }
    }
    for (name, schema) in components.schemas.iter() {
        if let RefOr::T(Schema::Object(o)) = schema {
            let objects: Vec<String> = o
                .properties
                .iter()
                .filter(|(_, p)| matches!(p, RefOr::T(Schema::Array(_))))
                .filter(|(_, p)| !referenced_items_are_binary(p))
                .map(|(k, _)| k.clone())
                .collect();
            if !objects.is_empty() {
                lists.push((name.clone(), objects));
            }
        }
    }
    for item in openapi.paths.paths.values_mut() {
        for (_, op) in operations(item) {
            let Some(body) = op.request_body.as_mut() else {
                continue;
            };
            let Some(form) = body.content.get_mut("multipart/form-data") else {
                continue;
            };
            let Some(RefOr::Ref(r)) = &form.schema else {
                continue;
            };
            let name = r.ref_location.rsplit('/').next().unwrap_or("").to_owned();
            if let Some((_, props)) = lists.iter().find(|(n, _)| *n == name) {
                for p in props {
                    form.encoding.insert(
                        p.clone(),
                        EncodingBuilder::new()
                            .content_type(Some("application/json"))
                            .build(),
                    );
                }
            }
            if by_file_id_forms.contains(&name) {
                let json = ContentBuilder::new()
                    .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                        format!("{name}ByFileId"),
                    ))))
                    .build();
                body.content.insert("application/json".into(), json);
            }
        }
    }
}

/// True for an array of binary strings (files), sent as file parts.
fn referenced_items_are_binary(p: &RefOr<Schema>) -> bool {
    use utoipa::openapi::schema::{ArrayItems, KnownFormat, SchemaFormat};
    let RefOr::T(Schema::Array(a)) = p else {
        return false;
    };
    match &a.items {
        ArrayItems::RefOrSchema(item) => matches!(
            item.as_ref(),
            RefOr::T(Schema::Object(o))
                if o.format == Some(SchemaFormat::KnownFormat(KnownFormat::Binary))
        ),
        _ => false,
    }
}

/// A unique operation id from the method and path: `GET
/// /v1/voices/{id}` is `getVoicesById`, `POST /v1/text-to-speech`
/// `postTextToSpeech` (handler names repeat across modules: `get`,
/// `create`…, and links and client generators need them unique).
fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_owned();
    for segment in path.split('/').filter(|s| !s.is_empty() && *s != "v1") {
        let (by, words) = match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(param) => ("By", param),
            None => ("", segment),
        };
        id.push_str(by);
        for word in words.split(['-', '_']) {
            let mut chars = word.chars();
            if let Some(first) = chars.next() {
                id.extend(first.to_uppercase());
                id.push_str(chars.as_str());
            }
        }
    }
    id
}

/// Links from what a POST creates to the operations on it: the resource at
/// `{path}/{id}` and below it (its id is the answer's `id`), and for a job
/// answer its status and cancellation. Stateful checks (schemathesis)
/// follow them; no link leads from a list, so nothing reaches the caller's
/// own key.
fn links(openapi: &mut OpenApi) {
    use utoipa::openapi::link::LinkBuilder;
    let mut targets: Vec<(String, String, String)> = Vec::new(); // (path, param, operationId)
    for (path, item) in openapi.paths.paths.iter_mut() {
        for (method, _) in operations(item) {
            if let Some(param) = path
                .rsplit_once("/{")
                .and_then(|(_, p)| p.split_once('}'))
                .map(|(p, _)| p.to_owned())
            {
                targets.push((path.clone(), param, operation_id(method, path)));
            }
        }
    }
    for (path, item) in openapi.paths.paths.iter_mut() {
        let Some(op) = item.post.as_mut() else {
            continue;
        };
        let job = ["200", "202"].iter().any(|s| {
            matches!(op.responses.responses.get(*s), Some(RefOr::T(r))
                if r.content.values().any(|c| matches!(&c.schema,
                    Some(RefOr::Ref(r)) if r.ref_location.ends_with("/JobView"))))
        });
        for (status, response) in op.responses.responses.iter_mut() {
            let RefOr::T(response) = response else {
                continue;
            };
            if !status.starts_with('2') || response.content.is_empty() {
                continue;
            }
            for (target, param, id) in &targets {
                let child = target
                    .strip_prefix(path.as_str())
                    .is_some_and(|rest| rest.starts_with(&format!("/{{{param}}}")));
                let of_job = job && target.starts_with("/v1/jobs/{");
                let of_dub = job && path == "/v1/dubbing" && target.starts_with("/v1/dubbing/{");
                if child || of_job || of_dub {
                    let link = LinkBuilder::new()
                        .operation_id(id.clone())
                        .parameter(param.clone(), "$response.body#/id")
                        .build();
                    response.links.insert(id.clone(), RefOr::T(link));
                }
            }
        }
    }
}

impl Modify for Contract {
    fn modify(&self, openapi: &mut OpenApi) {
        if let Some(components) = openapi.components.as_mut() {
            components.schemas.values_mut().for_each(|s| {
                if let RefOr::T(schema) = s {
                    inline_flattened(schema)
                }
            });
        }
        media_bodies(openapi);
        let bodies = request_schemas(openapi);
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut inner = Vec::new();
        for (name, json) in &bodies {
            if let Some(RefOr::T(schema)) = components.schemas.get_mut(name) {
                if *json {
                    nullable_optionals(schema);
                }
                closed(schema);
                inner.extend(referenced(schema));
            }
        }
        for name in inner {
            if let Some(RefOr::T(schema)) = components.schemas.get_mut(&name) {
                closed(schema);
            }
        }
        components
            .schemas
            .insert("Error".into(), RefOr::T(error_schema()));
        links(openapi);
        let error = || {
            ContentBuilder::new()
                .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                    "Error",
                ))))
                .build()
        };
        for (path, item) in openapi.paths.paths.iter_mut() {
            for (method, op) in operations(item) {
                op.operation_id = Some(operation_id(method, path));
                paging(path, op);
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
