//! The digest's byte form (`bugcontext.core.digest`): a result's `digest` and `cache_key`.

use std::borrow::Cow;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyString};

use crate::digest::{self, Form};
use crate::engine::{self};

use super::guard::guard;

use super::candidate::Candidate;
use super::objects::{exact_int, optional_attr, surrogate_key, type_name};
use super::reader::{Item, Reader};
use super::result::BuildResult;

impl BuildResult {
    /// The digest's byte form over this result's items, cost model and failing files.
    ///
    /// The items' fields are read under the GIL; their contents are hashed (`H(content)`) with
    /// the GIL released, on the rayon pool when there is more than [`PARALLEL_HASH_BYTES`] of
    /// them. The `str` objects stay alive and unchanged meanwhile (the result holds them).
    pub(crate) fn compute_digest(&self, py: Python<'_>) -> PyResult<String> {
        let items = self.items.bind(py);
        // Provenance of each item (`None` when absent); with any, the v2 form carries it.
        let mut provenance = Vec::with_capacity(items.len());
        for item in items.iter() {
            provenance.push((
                present_attr(&item, intern!(py, "source_sha256"))?,
                present_attr(&item, intern!(py, "source_id"))?,
            ));
        }
        let any = provenance
            .iter()
            .any(|(sha, id)| sha.is_some() || id.is_some());
        let mut form = Form::new(if any {
            digest::RESULT_TAG_V2
        } else {
            digest::RESULT_TAG
        });
        cost_form(&mut form, self.cost.bind(py))?;
        files_form(&mut form, self.failure_files.bind(py))?;
        let mut fields = Vec::with_capacity(items.len());
        for item in items.iter() {
            let text = |name: &Bound<'_, PyString>| -> PyResult<Vec<u8>> {
                Ok(text_bytes(&item.getattr(name)?)?.into_owned())
            };
            let content = item.getattr(intern!(py, "content"))?;
            fields.push((
                text(intern!(py, "path"))?,
                item.getattr(intern!(py, "start"))?.extract::<u64>()?,
                item.getattr(intern!(py, "end"))?.extract::<u64>()?,
                content,
                text(intern!(py, "reason"))?,
            ));
        }
        let contents = fields
            .iter()
            .map(|f| text_bytes(&f.3))
            .collect::<PyResult<Vec<_>>>()?;
        let hashes = py.detach(|| digest::content_hashes(&contents, PARALLEL_HASH_BYTES));
        form.number(fields.len() as u64);
        for (((path, start, end, _, reason), hash), (sha, id)) in
            fields.iter().zip(&hashes).zip(&provenance)
        {
            form.text(path);
            form.number(*start);
            form.number(*end);
            form.hash(hash);
            form.text(reason);
            if any {
                provenance_form(&mut form, sha.as_ref(), id.as_ref())?;
            }
        }
        Ok(form.hex())
    }
}

/// Above this many content bytes, a digest hashes the contents on the rayon pool.
const PARALLEL_HASH_BYTES: usize = 1 << 20;

/// An attribute that may be absent: `None` for a missing attribute or a `None` value.
fn present_attr<'py>(
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(optional_attr(obj, name)?.filter(|v| !v.is_none()))
}

/// `O(source_sha256) O(source_id)` of the v2 byte form.
fn provenance_form(
    form: &mut Form,
    sha: Option<&Bound<'_, PyAny>>,
    id: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    form.optional(sha.map(text_bytes).transpose()?.as_deref());
    form.optional(id.map(text_bytes).transpose()?.as_deref());
    Ok(())
}

/// The bytes of a `str` (or subclass) in the digest's byte form: UTF-8, a lone surrogate as its
/// 3-byte form. Borrowed from the `str` when it is valid UTF-8.
fn text_bytes<'a>(value: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    let text = value.cast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!("digest: expected a str, not {}", type_name(value)))
    })?;
    match text.to_str() {
        Ok(s) => Ok(Cow::Borrowed(s.as_bytes())),
        Err(_) => surrogate_key(text).map(Cow::Owned),
    }
}

/// `COST` of the byte form, from a `bugcontext.Cost`.
fn cost_form(form: &mut Form, cost: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = cost.py();
    let optional = |name: &Bound<'_, PyString>| -> PyResult<Option<Vec<u8>>> {
        let value = cost.getattr(name)?;
        if value.is_none() {
            Ok(None)
        } else {
            text_bytes(&value).map(|b| Some(b.into_owned()))
        }
    };
    form.text(&text_bytes(&cost.getattr(intern!(py, "unit"))?)?);
    form.optional(optional(intern!(py, "encoding"))?.as_deref());
    form.optional(optional(intern!(py, "template"))?.as_deref());
    form.flag(cost.getattr(intern!(py, "line_numbers"))?.is_truthy()?);
    form.text(&text_bytes(&cost.getattr(intern!(py, "order"))?)?);
    Ok(())
}

/// `FILES` of the byte form.
fn files_form(form: &mut Form, files: &Bound<'_, PyAny>) -> PyResult<()> {
    let files: Vec<Bound<'_, PyAny>> = files.try_iter()?.collect::<PyResult<_>>()?;
    form.number(files.len() as u64);
    for f in &files {
        form.text(&text_bytes(f)?);
    }
    Ok(())
}

/// The cache key of an input (see `bugcontext.core.digest`): the candidates are read and validated
/// exactly as `build` reads them, then hashed in input order with the budget, the canonical
/// failing files and the cost model.
///
/// With `verify` (a build's reader), the reader is called as `build` calls it (once per
/// canonical path, in order of first appearance) and its state ends the form: `S("verified")
/// U(p)` and, per path, `O(hex SHA-256 of the bytes)` (`0x00` for `None`). When some score is
/// an `int` or `-0.0`, `S("scores") U(n)` and each candidate's exact score (`score_form`) come
/// before it, after the groups.
#[pyfunction]
#[pyo3(signature = (candidates, budget, failure_files, max_total_chars, cost, verify=None))]
fn cache_key<'py>(
    py: Python<'py>,
    candidates: &Bound<'py, PyAny>,
    budget: u64,
    failure_files: Vec<Bound<'py, PyString>>,
    max_total_chars: u64,
    cost: Bound<'py, PyAny>,
    verify: Option<Bound<'py, PyAny>>,
) -> PyResult<String> {
    guard("cache_key", || {
        let n = candidates.len()?;
        let mut reader = Reader::new(n, max_total_chars);
        for (index, obj) in candidates.try_iter()?.enumerate() {
            reader.read(&obj?, index)?;
        }
        let candidates = owned_candidates(py, &reader)?;
        let any = candidates.iter().any(|c| c.has_provenance(py));
        let mut form = Form::new(if any {
            digest::INPUT_TAG_V2
        } else {
            digest::INPUT_TAG
        });
        cost_form(&mut form, &cost)?;
        form.number(budget);
        form.number(failure_files.len() as u64);
        for f in &failure_files {
            form.text(&text_bytes(f)?);
        }
        rows_form(py, &mut form, &reader, &candidates, any)?;
        groups_form(&mut form, &reader);
        scores_form(py, &mut form, &candidates)?;
        if let Some(verify) = verify {
            verified_form(&mut form, &verify, &reader, &candidates)?;
        }
        Ok(form.hex())
    })
}

/// Each item the reader kept, as a `Candidate` (sharing the objects it holds).
fn owned_candidates(py: Python<'_>, reader: &Reader<'_>) -> PyResult<Vec<Candidate>> {
    let candidate = |item: &Item<'_>| -> PyResult<Candidate> {
        let c = match item {
            Item::Same(obj) => obj.cast::<Candidate>()?.get(),
            Item::New(c) => c,
            Item::Taken => return Err(PyRuntimeError::new_err("bugcontext: item taken")),
        };
        Ok(Candidate {
            path: c.path.clone_ref(py),
            start: c.start.clone_ref(py),
            end: c.end.clone_ref(py),
            content: c.content.clone_ref(py),
            reason: c.reason.clone_ref(py),
            score: c.score.clone_ref(py),
            group: c.group.clone_ref(py),
            source_sha256: c.source_sha256.clone_ref(py),
            source_id: c.source_id.clone_ref(py),
        })
    };
    reader.items.iter().map(candidate).collect()
}

/// The candidates in input order: `U(n)` then, per candidate, its canonical path, line range,
/// `H(content)` (hashed with the GIL released), reason and score, and its provenance when
/// `any` candidate has some.
fn rows_form(
    py: Python<'_>,
    form: &mut Form,
    reader: &Reader<'_>,
    candidates: &[Candidate],
    any: bool,
) -> PyResult<()> {
    let contents = candidates
        .iter()
        .map(|c| text_bytes(c.content.bind(py)))
        .collect::<PyResult<Vec<_>>>()?;
    let hashes = py.detach(|| digest::content_hashes(&contents, PARALLEL_HASH_BYTES));
    form.number(reader.rows.len() as u64);
    for ((row, c), hash) in reader.rows.iter().zip(candidates).zip(&hashes) {
        form.text(&text_bytes(c.path.bind(py))?);
        form.number(u64::from(row.start));
        form.number(u64::from(row.end));
        form.hash(hash);
        form.text(row.reason.name().as_bytes());
        form.score(row.score);
        if any {
            let some = |v: &Py<PyAny>| (!v.is_none(py)).then(|| v.bind(py).clone());
            provenance_form(
                form,
                some(&c.source_sha256).as_ref(),
                some(&c.source_id).as_ref(),
            )?;
        }
    }
    Ok(())
}

/// The partition into groups (`bugcontext.core.digest`): each candidate's dense group id + 1,
/// when some candidate has a group.
fn groups_form(form: &mut Form, reader: &Reader<'_>) {
    if reader.n_groups() > 0 {
        form.text(b"groups");
        form.number(reader.rows.len() as u64);
        for row in &reader.rows {
            form.number(if row.group == engine::NO_GROUP {
                0
            } else {
                u64::from(row.group) + 1
            });
        }
    }
}

/// Exact scores (`bugcontext.core.digest`): the type and value the result carries, when some
/// score is not a float other than `-0.0`.
fn scores_form(py: Python<'_>, form: &mut Form, candidates: &[Candidate]) -> PyResult<()> {
    let scores = candidates
        .iter()
        .map(|c| score_form(c.score.bind(py)))
        .collect::<PyResult<Vec<_>>>()?;
    if scores.iter().any(|s| !matches!(s, ScoreForm::Float)) {
        form.text(b"scores");
        form.number(scores.len() as u64);
        for s in &scores {
            match s {
                ScoreForm::Float => form.raw(&[0]),
                ScoreForm::NegativeZero => form.raw(&[1]),
                ScoreForm::Int(digits) => {
                    form.raw(&[2]);
                    form.text(digits.as_bytes());
                }
            }
        }
    }
    Ok(())
}

/// The verify reader's state: each file's SHA-256 as the reader returned it, once per
/// canonical path in order of first appearance.
fn verified_form(
    form: &mut Form,
    verify: &Bound<'_, PyAny>,
    reader: &Reader<'_>,
    candidates: &[Candidate],
) -> PyResult<()> {
    let py = verify.py();
    let mut seen = vec![false; reader.paths.ids.len()];
    let mut hashes = Vec::new();
    for (row, c) in reader.rows.iter().zip(candidates) {
        let slot = &mut seen[row.path as usize];
        if *slot {
            continue;
        }
        *slot = true;
        let path = c.path.bind(py);
        let got = verify.call1((path,))?;
        if got.is_none() {
            hashes.push(None);
        } else if let Ok(bytes) = got.cast::<pyo3::types::PyBytes>() {
            use sha2::{Digest, Sha256};
            let hex: String = Sha256::digest(bytes.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            hashes.push(Some(hex));
        } else {
            return Err(PyTypeError::new_err(format!(
                "verify: the reader must return bytes or None, not {} (for {})",
                type_name(&got),
                path.repr()?
            )));
        }
    }
    form.text(b"verified");
    form.number(hashes.len() as u64);
    for h in &hashes {
        form.optional(h.as_ref().map(String::as_bytes));
    }
    Ok(())
}

/// A candidate's score in the key's `"scores"` extension (see `bugcontext.core.digest`).
enum ScoreForm {
    /// A float other than `-0.0`: its bits are already in the form.
    Float,
    /// `-0.0` (the form's `F` wrote `0.0`).
    NegativeZero,
    /// An `int`: its decimal digits, `-` first when negative.
    Int(String),
}

/// The exact form of a validated score (an exact `int` or `float`, as the reader keeps it).
fn score_form(score: &Bound<'_, PyAny>) -> PyResult<ScoreForm> {
    if let Ok(f) = score.cast::<PyFloat>() {
        let v = f.value();
        return Ok(if v == 0.0 && v.is_sign_negative() {
            ScoreForm::NegativeZero
        } else {
            ScoreForm::Float
        });
    }
    // An int (`bool` is refused by validation): `int.__repr__`, which runs no Python code of
    // a subclass (the reader keeps an exact copy of a subclass's value anyway).
    let exact = exact_int(score)?;
    Ok(ScoreForm::Int(exact.repr()?.to_str()?.to_owned()))
}

/// Add `cache_key` to the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cache_key, m)?)?;
    Ok(())
}
