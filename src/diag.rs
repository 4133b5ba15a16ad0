//! Diagnostics with source positions, shared by every parser in the crate.
