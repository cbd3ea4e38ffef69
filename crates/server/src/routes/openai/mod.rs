//! OpenAI's API on our engines, for clients written for it
//! (`OpenAI(base_url="http://host:8080/v1", api_key=KEY)`;
//! docs/compatibility.md). Each route validates as OpenAI does
//! (`mediagen_jobs::openai`), runs our job, and answers in OpenAI's shape.

pub mod images;
pub mod realtime;
pub mod speech;
pub mod transcription;

pub use images::generations;
pub use realtime::transcription_session;
pub use speech::speech;
pub use transcription::{transcriptions, translations};
