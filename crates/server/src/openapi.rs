//! The OpenAPI document served at `/v1/openapi.json`.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::contract::Contract;

use crate::route_table;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "`Authorization: Bearer <API_KEY>`: a 64-character key (`mg_live_…`). \
                         The scope listed on each operation is the minimum key level: read \
                         (every GET), write (creating jobs and resources), admin (keys; accounts \
                         and credits for the operator account). Missing, malformed, unknown, \
                         expired or revoked key: 401. Level too low: 403.",
                    ))
                    .build(),
            ),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Mediagen API",
        description = "Self-hostable voice, avatar, video and content generation (the DesignCombo API).\n\n\
            Errors: every error body is `{\"error\": {\"code\", \"message\", \"details\", \"request_id\", \"type\", \"param\"}}` \
            (`type` and `param` as OpenAI's clients read them); every `code` is listed, with what it means, in the `Error` schema below. Every response carries `X-Request-Id`; \
            authenticated responses carry `X-RateLimit-Limit`, `X-RateLimit-Remaining`, \
            `X-RateLimit-Reset` (Unix seconds) and `X-RateLimit-Reset-Time` (ISO 8601).\n\n\
            Jobs: capability endpoints answer 200 with the finished job when it finishes within the \
            server's sync wait, otherwise 202 with the queued job (poll `GET /v1/jobs/{id}`). \
            `Prefer: respond-async` forces 202. `Idempotency-Key` on any POST makes retries safe. \
            `dryRun: true` in a billable request returns the price without creating a job.\n\n\
            Durations are in seconds.",
        license(name = "MIT OR Apache-2.0")
    ),
    tags(
        (name = "voice", description = "Text-to-speech, the voice catalog and the engines"),
        (name = "account", description = "The caller's account, credits and limits"),
        (name = "jobs", description = "Job status, listing and cancellation"),
        (name = "keys", description = "API keys (admin)"),
        (name = "webhooks", description = "Webhook endpoints and their deliveries (admin; Standard Webhooks)"),
        (name = "accounts", description = "Accounts and credits (operator account's admin keys)"),
        (name = "files", description = "Uploaded input files and signed result URLs"),
        (name = "video", description = "Video trimming"),
        (name = "avatars", description = "The avatar catalog, uploaded avatars and avatar expansion"),
        (name = "content", description = "Sound and image generation from text prompts"),
    )
)]
pub struct ApiDoc;

/// The document: its info and tags, every documented route's paths and
/// schemas (from the route table, [`route_table::documented`]), then the
/// security scheme and the platform's shared contract written in.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.merge(route_table::documented());
    Security.modify(&mut doc);
    Contract.modify(&mut doc);
    doc
}

/// The document as served: JSON, built once. utoipa 5.5 writes a link's
/// `operationId`, `operationRef` and `requestBody` in snake case; they are
/// renamed here to the specification's names.
pub fn json() -> &'static serde_json::Value {
    static DOC: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        let mut doc = serde_json::to_value(document()).unwrap_or_default();
        fix_links(&mut doc);
        doc
    })
}

fn fix_links(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(links)) = map.get_mut("links") {
                for link in links.values_mut() {
                    if let Value::Object(link) = link {
                        for (from, to) in [
                            ("operation_id", "operationId"),
                            ("operation_ref", "operationRef"),
                            ("request_body", "requestBody"),
                        ] {
                            if let Some(v) = link.remove(from) {
                                link.insert(to.into(), v);
                            }
                        }
                    }
                }
            }
            map.values_mut().for_each(fix_links);
        }
        Value::Array(items) => items.iter_mut().for_each(fix_links),
        _ => {}
    }
}
