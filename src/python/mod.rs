//! The PyO3 binding: the only place where Rust meets Python.
//!
//! `build` reads each candidate once, while attached to the interpreter, into a compact
//! [`Row`](crate::engine::Row) (validating it exactly as `reference.py` does), then releases
//! the GIL to rank and pack with [`engine::build`](crate::engine::build), then builds the
//! result from the caller's own objects: a `Candidate` whose path is already canonical is
//! returned as is, and its strings are never copied. No panic can cross into Python: the
//! engine has none on valid rows, and every Python-side failure is a `PyErr`.
//!
//! What lives where:
//!
//! * `candidate.rs`: the `Candidate` class; `build_input.rs`: `BuildInput`; `result.rs`:
//!   `Omission`, `Block`, `BuildResult`.
//! * `reader.rs`: reading candidates (any of their shapes) into rows (`access.rs`: the fields of a
//!   caller's class, read by its layout); `fields.rs`: validating
//!   one field's value; `errors.rs`: raising the package's typed errors.
//! * `build.rs`: the `build` entry point (read, run the engine detached, assemble the result);
//!   `verify.rs`: checking candidates against their files (stale rows); `costing.rs`: costs
//!   other than characters; `batch.rs`: many builds at once (`build_many`).
//! * `byte_form.rs`: the digest's byte form (`BuildResult.digest`, `cache_key`).
//! * `tokens.rs`, `render.rs`, `secrets.rs`, `table.rs`: the token counter, the block renderer,
//!   secret detection, Arrow tables; `guard.rs`: no panic crosses into Python;
//!   `objects.rs`: small helpers on Python objects.

use pyo3::prelude::*;

use crate::digest;
use crate::engine::MAX_LINE;

use build_input::BuildInput;
use candidate::Candidate;
use result::{Block, BuildResult, Omission};

mod access;
mod batch;
mod build;
mod build_input;
mod byte_form;
mod candidate;
mod costing;
mod errors;
mod fields;
mod guard;
mod objects;
mod outline;
mod reader;
mod render;
mod result;
mod secrets;
mod table;
mod tokens;
mod verify;

/// The `bugcontext._core` extension module.
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Candidate>()?;
    m.add_class::<Omission>()?;
    m.add_class::<BuildResult>()?;
    m.add_class::<BuildInput>()?;
    m.add_class::<Block>()?;
    build::register(m)?;
    byte_form::register(m)?;
    batch::register(m)?;
    m.add("MAX_LINE", MAX_LINE)?;
    m.add("POLICY_VERSION", digest::POLICY_VERSION)?;
    tokens::register(m)?;
    render::register(m)?;
    secrets::register(m)?;
    outline::register(m)?;
    table::register(m)?;
    guard::register(m)?;
    Ok(())
}
