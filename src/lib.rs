//! bugcontext: rank, de-duplicate and pack code-context candidates for coding agents.
//!
//! * [`engine`]: the pure-Rust core (no Python types): path canonicalisation, the ranking key,
//!   and the selection loop over per-path sorted interval lists. Tested with `cargo test`.
//! * [`outline`]: the statement outline of Python source (the search source's chunks) without
//!   a syntax tree.
//! * [`secrets`]: secret detection in linear time (which byte ranges of a text are secrets).
//! * [`columnar`]: many independent builds over the columns of an Arrow table, one per group,
//!   in parallel.
//! * `python` (feature `python`, on by default): the one PyO3 binding module (`src/python/`) that reads Python
//!   candidates into compact rows, runs the engine with the GIL released, and builds the result
//!   from the caller's own objects. It is the `bugcontext._core` extension module.

pub mod columnar;
pub mod digest;
pub mod engine;
pub mod outline;
pub mod render;
pub mod secrets;
pub mod tokens;

#[cfg(feature = "python")]
mod python;
