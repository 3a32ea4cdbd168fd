//! The statement outline of Python source, free of Python types: the line ranges of the
//! module's statements and, recursively, of its classes' bodies, as `ast.parse` would give
//! them (`lineno` with decorators, `end_lineno`), without building a syntax tree.
//!
//! The search source cuts every Python file into chunks at these statements; building a
//! whole `ast` tree of every file was the larger part of a cold index of a large repository.
//!
//! **What it reads.** A lexer of Python's tokens that matter for statement bounds (strings
//! of every prefix and quote, f-string fields, comments, brackets, backslash continuations,
//! `;`, `:` and indentation) and the block structure they imply. **When it gives up.** Any
//! text it cannot read exactly as the interpreter would gives `None`, and the caller parses
//! the file with `ast` instead: a tab or form feed in indentation, a character outside
//! strings and comments that is not ASCII, a lone `\r`, an unterminated string or bracket,
//! an f-string field holding its own quote, a backslash or a comment (the grammar of Python
//! 3.12 and of 3.11 differ there), an unexpected indent or dedent, a compound statement
//! after `;`, and some Python 2 forms (`print "x"`, `except E, e:`, `0777`, `ur""`, `<>`,
//! backticks). A file it reads that `ast` would refuse for a reason of grammar alone is
//! outlined as if it parsed; the Python tests hold the two equal on every file that parses.

mod lexer;
#[cfg(test)]
mod tests;

use lexer::{Logical, Word, logical_lines};

/// A statement's kind.
pub const FUNCTION: u8 = 0;
pub const CLASS: u8 = 1;
pub const IMPORT: u8 = 2;
pub const OTHER: u8 = 3;

/// One statement: lines `start..=end` (1-based, closed; `start` is the first decorator's line
/// for a decorated definition), its [`kind`](FUNCTION), `depth`, the number of classes
/// around it (0 for a module-level statement), and the name a function or class defines
/// (empty for other statements).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    pub depth: u32,
    pub kind: u8,
    pub start: u32,
    pub end: u32,
    pub name: String,
}

/// The statements of the module and of its classes' bodies (recursively, not those of a
/// function's body or of an `if`'s), in file order, a class before its body; `None` when the
/// text is not read exactly (see the module's documentation).
pub fn outline(text: &[u8]) -> Option<Vec<Statement>> {
    let lines = logical_lines(text)?;
    let mut out = Vec::new();
    let mut at = 0;
    if let Some(first) = lines.first() {
        if first.indent != 0 {
            return None;
        }
        block(&lines, &mut at, 0, Some(0), &mut out)?;
    }
    (at == lines.len()).then_some(out)
}

/// Read the block of statements at `indent` from `lines[*at]` on, to the first line less
/// indented; with `report` (their depth), push them and their classes' bodies to `out`.
/// Returns the last line of the block.
fn block(
    lines: &[Logical],
    at: &mut usize,
    indent: usize,
    report: Option<u32>,
    out: &mut Vec<Statement>,
) -> Option<u32> {
    let mut last = None;
    while let Some(line) = lines.get(*at) {
        if line.indent < indent {
            break;
        }
        if line.indent > indent || line.first.continues() {
            return None; // an unexpected indent; an `else` with no statement to continue
        }
        last = Some(statement(lines, at, indent, report, out)?);
    }
    last
}

/// Read one statement at `lines[*at]` (its decorators, its body and its `else`/`elif`/
/// `except`/`finally` clauses). Returns its last line.
fn statement(
    lines: &[Logical],
    at: &mut usize,
    indent: usize,
    report: Option<u32>,
    out: &mut Vec<Statement>,
) -> Option<u32> {
    let start = lines[*at].first_line;
    while lines[*at].first == Word::At {
        if lines[*at].parts.len() > 1 || lines[*at].colon {
            return None;
        }
        *at += 1;
        let next = lines.get(*at)?;
        if next.indent != indent || !matches!(next.first, Word::At | Word::Def | Word::Class) {
            return None;
        }
    }
    let line = &lines[*at];
    if line.parts.len() > 1 {
        // Simple statements separated by `;`: each one its own statement.
        if let Some(depth) = report {
            for part in &line.parts {
                let kind = if part.import { IMPORT } else { OTHER };
                out.push(Statement {
                    depth,
                    kind,
                    start: part.start,
                    end: part.end,
                    name: String::new(),
                });
            }
        }
        *at += 1;
        return Some(line.last_line);
    }
    let kind = match line.first {
        Word::Def => FUNCTION,
        Word::Class => CLASS,
        Word::Import => IMPORT,
        _ => OTHER,
    };
    let slot = report.map(|depth| {
        let name = if matches!(kind, FUNCTION | CLASS) {
            line.name.clone()
        } else {
            String::new()
        };
        out.push(Statement {
            depth,
            kind,
            start,
            end: 0,
            name,
        });
        out.len() - 1
    });
    let inner = match report {
        Some(depth) if kind == CLASS => Some(depth + 1),
        _ => None,
    };
    let mut end = clause(lines, at, indent, inner, out)?;
    if kind == OTHER {
        while lines
            .get(*at)
            .is_some_and(|l| l.indent == indent && l.first.continues())
        {
            end = clause(lines, at, indent, None, out)?;
        }
    }
    if let Some(slot) = slot {
        out[slot].end = end;
    }
    Some(end)
}

/// Read the logical line `lines[*at]` and, when it ends with `:`, its indented body (with
/// `report`, the body's statements are pushed at that depth). Returns the last line.
fn clause(
    lines: &[Logical],
    at: &mut usize,
    indent: usize,
    report: Option<u32>,
    out: &mut Vec<Statement>,
) -> Option<u32> {
    let line = &lines[*at];
    *at += 1;
    if !line.colon {
        return Some(line.last_line);
    }
    let body = lines.get(*at).filter(|l| l.indent > indent)?;
    block(lines, at, body.indent, report, out)
}
