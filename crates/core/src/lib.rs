//! The scheduling engine of wasmsched.
pub mod fixture;
