//! The job runner.
//!
//! A [`Worker`] claims jobs from the jobs table with a lease, runs the
//! [`Pipeline`] registered for the job's kind in its own task (a panic
//! cannot kill the loop), extends the lease while it runs, and records the
//! outcome, which captures or refunds the job's credits. A job whose worker
//! dies is claimed again when its lease expires; a job that exhausts its
//! attempts is failed and refunded by the reaper.

mod pipeline;
pub mod retention;
mod runner;
pub mod session;
pub mod testing;

pub use pipeline::{public_error, JobContext, JobFailure, Pipeline, Registry, RequestPipeline};
pub use retention::Retention;
pub use runner::{Events, Worker, WorkerConfig};
