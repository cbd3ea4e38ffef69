//! The Mediagen HTTP API (axum) and the `mediagen` command.

pub mod app;
pub mod avatars;
pub mod config;
pub mod contract;
pub mod edge;
pub mod error;
pub mod extract;
pub mod jobs;
pub mod keycache;
pub mod media_input;
pub mod metrics;
pub mod middleware;
pub mod openapi;
pub mod ratelimit;
pub mod route_table;
pub mod routes;
pub mod scratch;
pub mod state;
pub mod streaming;
pub mod submission;
pub mod upload;
pub mod voices;
pub mod webhooks;

pub use app::Application;
pub use config::Config;
