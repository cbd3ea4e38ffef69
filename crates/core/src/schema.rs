//! OpenAPI schemas of values that several requests take (an audio format,
//! a sample rate, a webhook address): written once, used by the request
//! types' derived schemas and by the server's document.

/// The audio formats a request that makes audio may ask for.
pub fn audio_format_schema() -> utoipa::openapi::schema::Object {
    let names: Vec<&str> = crate::format::AudioFormat::ALL
        .iter()
        .map(|f| f.as_str())
        .collect();
    one_of_strings(&names)
}

/// `webhookUrl` of a request that makes a job: where that job's end is
/// sent, signed as Standard Webhooks.
pub fn webhook_url_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(8))
        .max_length(Some(2048))
        .pattern(Some("^[Hh][Tt][Tt][Pp][Ss]?://"))
        .description(Some(
            "This job's own webhook: its `job.completed`, `job.failed` or \
             `job.cancelled` event is sent there, signed with the account's request \
             secret (`GET /v1/webhooks/default/secret`), retried as an endpoint's \
             are. An address on an internal network: 422 (unless the server allows \
             them).",
        ))
        .build()
}

/// Every sample rate some audio format takes (which ones a format takes:
/// the field's description; another is 422).
pub fn sample_rate_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    let mut rates: Vec<u32> = crate::format::AudioFormat::ALL
        .iter()
        .flat_map(|f| f.sample_rates().iter().copied())
        .collect();
    rates.sort_unstable();
    rates.dedup();
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .enum_values(Some(rates))
        .build()
}

/// The schema of a `gender`: female, male or neutral.
pub fn gender_schema() -> utoipa::openapi::schema::Object {
    one_of_strings(&["female", "male", "neutral"])
}

/// A string schema taking one of `values`.
pub fn one_of_strings(values: &[&str]) -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.to_vec()))
        .build()
}
