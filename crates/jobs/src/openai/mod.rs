//! OpenAI's API read as ours, for clients written for it
//! (`OpenAI(base_url="http://host:8080/v1", api_key=KEY)`;
//! docs/compatibility.md): each route's body validated as OpenAI validates
//! it, mapped to our request, and our results rendered in OpenAI's shapes.

pub mod image;
pub mod models;
pub mod realtime;
pub mod speech;
pub mod transcription;

use mediagen_core::ApiError;

/// An error of our checks with OpenAI's parameter names (`names`: ours,
/// theirs): in `details.parameter`, and so in `param`, and in the message.
pub fn openai_names(error: ApiError, names: &[(&str, &str)]) -> ApiError {
    let Some(ours) = error.details.get("parameter").and_then(|p| p.as_str()) else {
        return error;
    };
    let Some((ours, theirs)) = names.iter().find(|(o, _)| *o == ours).copied() else {
        return error;
    };
    let message = error
        .message
        .replace(&format!("`{ours}`"), &format!("`{theirs}`"));
    error.with_message(message).with_detail("parameter", theirs)
}
