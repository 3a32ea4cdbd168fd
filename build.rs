//! Build script: with the `python` feature, the `Py_3_x` cfgs of the Python being built for, so
//! that the binding can use an interpreter's own API where it has one (`src/python/objects.rs`,
//! `optional_attr`).

fn main() {
    #[cfg(feature = "python")]
    pyo3_build_config::use_pyo3_cfgs();
}
