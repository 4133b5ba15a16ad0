//! The layout manifest: `manifest` reads the YAML into a validated
//! [`model::Layout`], reporting every violation with its position in the
//! vocabulary of `diag`, which every producer of findings shares.

pub mod diag;
pub mod manifest;
pub mod model;
