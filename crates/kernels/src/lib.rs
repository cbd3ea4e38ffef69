//! Numeric inner loops the engines run over every sample of a synthesis.
//! A crate of their own so that the workspace's test builds compile them
//! optimised (`[profile.dev.package.mediagen-kernels]`): unoptimised, a
//! vocoder's convolutions take minutes where they take milliseconds.

pub mod activation;
pub mod conv1d;
pub mod interleave;
