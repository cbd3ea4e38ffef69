//! Every route of the API, each declared once.
//!
//! A documented route is its handler's `#[utoipa::path]`: the path, the
//! method, the key level (the operation's security requirement) and the
//! OpenAPI entry all come from that one attribute, gathered here with
//! `utoipa_axum::routes!`. Routes outside the document (the ElevenLabs
//! dialect, the test-jobs route) state their path and level here.

use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{on, MethodFilter, MethodRouter};
use mediagen_core::{JobKind, Level};
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::OpenApi;
use utoipa_axum::router::UtoipaMethodRouter;
use utoipa_axum::routes;

use crate::routes::{
    account, accounts, avatars, blobs, dubbing, elevenlabs, files, image, jobs, keys, models,
    openai, previews, realtime, sound, stt, test_jobs, tokens, tts, video, voice_changer,
    voice_design, voices, webhooks,
};
use crate::state::AppState;

/// One route: its method, its path under its family's prefix, what it
/// takes to call it and its handler.
pub struct Route {
    pub method: Method,
    pub path: String,
    /// The key level the route needs (`None`: no key, a signed URL).
    pub level: Option<Level>,
    pub handler: MethodRouter<AppState>,
    /// The kind of live session the route opens, where a single-use token
    /// of that kind may stand in for the key.
    pub token: Option<JobKind>,
}

impl Route {
    /// The route also takes a single-use token for a session of `kind`.
    fn or_token(&mut self, kind: JobKind) {
        self.token = Some(kind);
    }

    /// Routed at `path` rather than the documented one (a wildcard the
    /// document writes as a parameter).
    fn routed_at(&mut self, path: &str) {
        self.path = path.to_owned();
    }
}

/// Routes under one prefix, with the document's part they make.
pub struct Family {
    pub prefix: &'static str,
    pub routes: Vec<Route>,
    /// The paths and schemas of the family's documented routes.
    pub doc: OpenApi,
}

impl Family {
    fn new(prefix: &'static str) -> Self {
        Family {
            prefix,
            routes: Vec::new(),
            doc: OpenApi::default(),
        }
    }

    /// A route of the document: `#[utoipa::path]` says everything. A
    /// route with a key states one level (`security(("bearer" =
    /// ["write"]))`); one without is public only in a family that says so.
    fn documented(
        &mut self,
        (schemas, paths, handler): UtoipaMethodRouter<AppState>,
    ) -> &mut Route {
        let mut items = paths.paths.iter();
        let (path, item) = items.next().expect("a documented route has a path");
        assert!(items.next().is_none(), "one handler per documented route");
        let (method, operation) = only_operation(item);
        let level = level_of(operation);
        assert!(
            level.is_some() || self.prefix.is_empty(),
            "{method} {path} states no key level in its #[utoipa::path] security"
        );
        let routed = path
            .strip_prefix(self.prefix)
            .unwrap_or_else(|| panic!("{path} is not under {}", self.prefix));
        let mut part = OpenApi::default();
        part.paths = paths.clone();
        part.components
            .get_or_insert_with(Default::default)
            .schemas
            .extend(schemas);
        self.doc.merge(part);
        self.routes.push(Route {
            method,
            path: routed.to_owned(),
            level,
            handler,
            token: None,
        });
        self.routes.last_mut().unwrap()
    }

    /// A route outside the document, declared here.
    fn keyed<H, T>(
        &mut self,
        method: Method,
        path: &'static str,
        level: Level,
        handler: H,
    ) -> &mut Route
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        let filter = MethodFilter::try_from(method.clone()).expect("a routable method");
        self.routes.push(Route {
            method,
            path: path.to_owned(),
            level: Some(level),
            handler: on(filter, handler),
            token: None,
        });
        self.routes.last_mut().unwrap()
    }
}

/// The one operation of a documented route's path item, with its method.
fn only_operation(item: &PathItem) -> (Method, &Operation) {
    let ops = [
        (Method::GET, &item.get),
        (Method::POST, &item.post),
        (Method::PUT, &item.put),
        (Method::PATCH, &item.patch),
        (Method::DELETE, &item.delete),
    ];
    let mut found = ops
        .into_iter()
        .filter_map(|(m, op)| op.as_ref().map(|op| (m, op)));
    let first = found.next().expect("a documented route has an operation");
    assert!(found.next().is_none(), "one method per documented route");
    first
}

/// The key level an operation's security requirement names.
fn level_of(operation: &Operation) -> Option<Level> {
    let security = serde_json::to_value(operation.security.as_ref()?).ok()?;
    let scopes = security.get(0)?.get("bearer")?.as_array()?;
    let [scope] = scopes.as_slice() else {
        panic!("an operation states one key level, not {scopes:?}");
    };
    let scope = scope.as_str().unwrap_or_default();
    Some(Level::parse(scope).unwrap_or_else(|| panic!("unknown key level `{scope}`")))
}

/// A documented route.
macro_rules! doc {
    ($family:expr, $handler:path) => {
        $family.documented(routes!($handler))
    };
}

/// The `/v1` routes (the API and its OpenAI dialect).
pub fn v1(test_jobs: bool) -> Family {
    use openai::{images, realtime as openai_realtime, speech, transcription};
    let mut f = Family::new("/v1");
    doc!(f, account::get_account);
    doc!(f, account::ledger);
    doc!(f, files::upload);
    doc!(f, files::list);
    doc!(f, files::get);
    doc!(f, files::delete);
    doc!(f, tts::create);
    doc!(f, tts::stream);
    doc!(f, realtime::live_tts).or_token(JobKind::TtsRealtime);
    doc!(f, speech::speech);
    doc!(f, transcription::transcriptions);
    doc!(f, transcription::translations);
    doc!(f, images::generations);
    doc!(f, openai_realtime::transcription_session).or_token(JobKind::SttRealtime);
    doc!(f, stt::create);
    doc!(f, stt::languages);
    doc!(f, realtime::live_stt).or_token(JobKind::SttRealtime);
    doc!(f, tokens::create);
    doc!(f, video::trim);
    doc!(f, sound::create);
    doc!(f, sound::vocabulary);
    doc!(f, image::create);
    doc!(f, avatars::list);
    doc!(f, avatars::create);
    doc!(f, avatars::get);
    doc!(f, avatars::update);
    doc!(f, avatars::delete);
    doc!(f, avatars::expand);
    doc!(f, voices::list);
    doc!(f, voices::create);
    doc!(f, voices::get);
    doc!(f, voices::update);
    doc!(f, voices::delete);
    doc!(f, voice_design::design);
    doc!(f, voice_changer::change);
    doc!(f, dubbing::create);
    doc!(f, dubbing::languages);
    doc!(f, dubbing::edit_segments);
    doc!(f, models::list);
    doc!(f, models::get);
    doc!(f, jobs::list_jobs);
    doc!(f, jobs::get_job);
    doc!(f, jobs::cancel_job);
    doc!(f, keys::create_key);
    doc!(f, keys::list_keys);
    doc!(f, keys::revoke_key);
    doc!(f, webhooks::create);
    doc!(f, webhooks::list);
    doc!(f, webhooks::get);
    doc!(f, webhooks::delete);
    doc!(f, webhooks::request_secret);
    doc!(f, webhooks::rotate_request_secret);
    doc!(f, webhooks::deliveries);
    doc!(f, webhooks::redeliver);
    doc!(f, accounts::create_account);
    doc!(f, accounts::list_accounts);
    doc!(f, accounts::get_account);
    doc!(f, accounts::grant_credits);
    doc!(f, accounts::create_account_key);
    if test_jobs {
        // A test harness's route, left out of the document.
        f.keyed(Method::POST, "/test-jobs", Level::Write, test_jobs::create);
    }
    f
}

/// The routes without a key (signed URLs), at the root.
pub fn public() -> Family {
    let mut f = Family::new("");
    doc!(f, blobs::download).routed_at("/blobs/{*key}");
    doc!(f, previews::get);
    f
}

/// The ElevenLabs dialect's routes (under `/elevenlabs/v1`; not in the
/// document, which is the native API's: docs/compatibility.md lists them).
pub fn elevenlabs() -> Family {
    use elevenlabs::{account, realtime, speech, voices};
    use Level::{Read, Write};
    let mut f = Family::new("/elevenlabs/v1");
    f.keyed(
        Method::POST,
        "/text-to-speech/{voice_id}",
        Write,
        speech::speech,
    );
    f.keyed(
        Method::POST,
        "/text-to-speech/{voice_id}/stream",
        Write,
        speech::speech,
    );
    f.keyed(
        Method::POST,
        "/text-to-speech/{voice_id}/with-timestamps",
        Write,
        speech::with_timestamps,
    );
    f.keyed(
        Method::POST,
        "/text-to-speech/{voice_id}/stream/with-timestamps",
        Write,
        speech::with_timestamps,
    );
    f.keyed(
        Method::GET,
        "/text-to-speech/{voice_id}/stream-input",
        Write,
        realtime::stream_input,
    )
    .or_token(JobKind::TtsRealtime);
    f.keyed(Method::POST, "/speech-to-text", Write, speech::transcribe);
    f.keyed(
        Method::GET,
        "/speech-to-text/realtime",
        Write,
        realtime::live_stt,
    )
    .or_token(JobKind::SttRealtime);
    f.keyed(
        Method::POST,
        "/single-use-token/{token_type}",
        Write,
        realtime::token,
    );
    f.keyed(Method::POST, "/sound-generation", Write, speech::sound);
    f.keyed(Method::POST, "/text-to-voice/design", Write, voices::design);
    f.keyed(
        Method::POST,
        "/text-to-voice",
        Write,
        voices::create_from_design,
    );
    f.keyed(Method::GET, "/voices", Read, voices::list);
    f.keyed(Method::GET, "/voices/{voice_id}", Read, voices::get);
    f.keyed(Method::GET, "/user", Read, account::user);
    f.keyed(
        Method::GET,
        "/user/subscription",
        Read,
        account::subscription,
    );
    f
}

/// Every route that takes a key, as `(method, full path, level)`: what
/// the router checks.
pub fn levels(test_jobs: bool) -> Vec<(String, String, Level)> {
    let mut out = Vec::new();
    for family in [v1(test_jobs), elevenlabs()] {
        for r in family.routes {
            let level = r.level.expect("a keyed family's route has a level");
            out.push((
                r.method.to_string(),
                format!("{}{}", family.prefix, r.path),
                level,
            ));
        }
    }
    out
}

/// The paths and schemas of every documented route.
pub fn documented() -> OpenApi {
    let mut doc = v1(false).doc;
    doc.merge(public().doc);
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[utoipa::path(get, path = "/v1/unkeyed", responses((status = 200)))]
    async fn unkeyed() {}

    #[utoipa::path(get, path = "/v1/keyed", security(("bearer" = ["admin"])), responses((status = 200)))]
    async fn keyed() {}

    #[test]
    #[should_panic(expected = "states no key level")]
    fn a_keyed_route_states_its_level() {
        let mut f = Family::new("/v1");
        doc!(f, unkeyed);
    }

    #[test]
    fn the_level_and_path_come_from_the_attribute() {
        let mut f = Family::new("/v1");
        doc!(f, keyed).or_token(JobKind::SttRealtime);
        let r = &f.routes[0];
        assert_eq!(
            (r.method.as_str(), r.path.as_str(), r.level),
            ("GET", "/keyed", Some(Level::Admin))
        );
        assert_eq!(r.token, Some(JobKind::SttRealtime));
        assert!(f.doc.paths.paths.contains_key("/v1/keyed"));
        // Without a key only where the family says so.
        let mut public = Family::new("");
        doc!(public, unkeyed);
        assert_eq!(public.routes[0].level, None);
    }
}
