//! The cost of each candidate under the build's cost model, computed before packing.
//!
//! The unit is characters (code points) or tokens of an encoding; the text costed is the content
//! or, with a template, the candidate's rendered block (`crate::render`). Token counts go
//! through the builder's `TokenCounter` (cached by content hash, counted with the GIL released),
//! in chunks so that rendered blocks of a large build are never all held at once.

use std::borrow::Cow;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::candidate::Candidate;
use super::reader::Item;
use super::tokens::{TokenCounter, text_for_counting};
use crate::engine::Row;
use crate::render::{self, Template};

/// Candidates costed per call into the token counter.
const CHUNK: usize = 1024;

/// Set `row.cost` for every candidate according to `cost` (a `bugcontext.Cost`); `failing`
/// tells, per path id, whether the path is a failing file (its blocks are labelled so). Returns the
/// content lengths (characters) when the cost is something else, `None` when it is the
/// content length itself (then `row.cost` is left as read).
pub(super) fn apply(
    py: Python<'_>,
    cost: &Bound<'_, PyAny>,
    counter: Option<&TokenCounter>,
    rows: &mut [Row],
    items: &[Item<'_>],
    failing: &[bool],
) -> PyResult<Option<Vec<u64>>> {
    let template = cost.getattr(intern!(py, "template"))?;
    let template = if template.is_none() {
        None
    } else {
        let name: Cow<'_, str> = template.extract()?;
        Some(Template::parse(&name).ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "unknown template {}",
                super::errors::shown(&format!("{name:?}"))
            ))
        })?)
    };
    if template.is_none() && counter.is_none() {
        return Ok(None);
    }
    let line_numbers: bool = cost.getattr(intern!(py, "line_numbers"))?.extract()?;
    let lengths = rows.iter().map(|row| row.cost).collect();

    for (rows, items) in rows.chunks_mut(CHUNK).zip(items.chunks(CHUNK)) {
        // Between chunks, a pending signal (Ctrl-C) ends the build: nothing is half-written,
        // the rows being local to the build.
        py.check_signals()?;
        let costs = match (template, counter) {
            (None, None) => return Ok(None),
            (None, Some(counter)) => {
                let contents = items
                    .iter()
                    .map(|item| fields(py, item).map(|(_, content)| content))
                    .collect::<PyResult<Vec<_>>>()?;
                counter.count_strings(py, &contents)?
            }
            (Some(template), counter) => {
                let blocks = rows
                    .iter()
                    .zip(items)
                    .map(|(row, item)| {
                        let failing = failing[row.path as usize];
                        block(py, row, item, failing, template, line_numbers)
                    })
                    .collect::<PyResult<Vec<_>>>()?;
                match counter {
                    Some(counter) => {
                        let texts = blocks
                            .iter()
                            .map(Text::for_counting)
                            .collect::<PyResult<Vec<_>>>()?;
                        counter.count_texts(py, &texts)
                    }
                    None => blocks
                        .iter()
                        .map(Text::chars)
                        .collect::<PyResult<Vec<_>>>()?,
                }
            }
        };
        for (row, cost) in rows.iter_mut().zip(costs) {
            row.cost = cost;
        }
    }
    Ok(Some(lengths))
}

/// The canonical path and the content of a candidate as it will be returned.
fn fields<'py>(
    py: Python<'py>,
    item: &Item<'py>,
) -> PyResult<(Bound<'py, PyString>, Bound<'py, PyString>)> {
    let candidate = candidate(item)?;
    let path = candidate.path.bind(py).cast::<PyString>()?.clone();
    let content = candidate.content.bind(py).cast::<PyString>()?.clone();
    Ok((path, content))
}

/// The candidate an item holds.
fn candidate<'a>(item: &'a Item<'_>) -> PyResult<&'a Candidate> {
    match item {
        Item::Same(obj) => Ok(obj.cast::<Candidate>()?.get()),
        Item::New(c) => Ok(c),
        Item::Taken => {
            let problem = "bugcontext: a candidate was costed after it was taken";
            Err(pyo3::exceptions::PyRuntimeError::new_err(problem))
        }
    }
}

/// A rendered block: built in Rust, or (for text with lone surrogates) by the Python renderer.
enum Text<'py> {
    Rust(String),
    Python(Bound<'py, PyString>),
}

impl Text<'_> {
    /// Its length in characters (code points).
    fn chars(&self) -> PyResult<u64> {
        Ok(match self {
            Text::Rust(s) => s.chars().count() as u64,
            Text::Python(s) => s.len()? as u64,
        })
    }

    /// The text whose tokens are counted (tiktoken's handling of lone surrogates).
    fn for_counting(&self) -> PyResult<Cow<'_, str>> {
        match self {
            Text::Rust(s) => Ok(Cow::Borrowed(s.as_str())),
            Text::Python(s) => text_for_counting(s),
        }
    }
}

/// The rendered block of one candidate: in Rust when its path and content have a UTF-8 form,
/// else (lone surrogates) by the Python renderer.
fn block<'py>(
    py: Python<'py>,
    row: &Row,
    item: &Item<'py>,
    failing: bool,
    template: Template,
    line_numbers: bool,
) -> PyResult<Text<'py>> {
    let (path, content) = fields(py, item)?;
    let source_id = candidate(item)?.source_id.bind(py).clone();
    if let (Ok(p), Ok(c)) = (path.to_str(), content.to_str()) {
        let (start, end, reason) = (row.start, row.end, row.reason);
        let caller = super::render::is_caller(&source_id);
        let text = render::block(
            p,
            start,
            end,
            c,
            reason,
            failing,
            caller,
            template,
            line_numbers,
        );
        return Ok(Text::Rust(text));
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item(intern!(py, "failing"), failing)?;
    kwargs.set_item(intern!(py, "source_id"), source_id)?;
    let name = match template {
        Template::Markdown => "markdown",
        Template::Xml => "xml",
    };
    kwargs.set_item(intern!(py, "template"), name)?;
    kwargs.set_item(intern!(py, "line_numbers"), line_numbers)?;
    let args = (
        path,
        row.start,
        row.end,
        content,
        render::reason_name(row.reason),
    );
    let text = py
        .import(intern!(py, "bugcontext.core.composer"))?
        .call_method(intern!(py, "render_block"), args, Some(&kwargs))?;
    Ok(Text::Python(text.cast_into::<PyString>()?))
}
