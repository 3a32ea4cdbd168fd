//! Block rendering, free of Python types: the fast path behind the `rendered` cost model.
//!
//! [`block`] renders one item exactly as `render_block` in `python/bugcontext/core/composer.py` (the
//! specification), byte for byte, for every valid UTF-8 input. A section is the concatenation
//! of its blocks.
//!
//! * **Markdown**: `### {path}:{start}-{end} ({label})\n{fence}{lang}\n{body}{nl}{fence}\n\n`,
//!   where `fence` is `max(3, longest backtick run in body + 1)` backticks, `lang` comes from
//!   the path's extension ([`language`]) and `nl` is empty when the body ends with `\n`.
//! * **XML**: `<snippet path=".." start=".." end=".." reason=".." label="..">{body}</snippet>\n`
//!   with `&`, `<`, `>` and `\r` escaped in the text, and also `"`, tab and `\n` in attributes.
//!   A string with a character XML 1.0 cannot carry (a control character other than tab, `\n`
//!   and `\r`, or U+FFFE/U+FFFF; a `&str` has no surrogates) is written as standard padded
//!   base64 of its UTF-8 bytes: the body with `encoding="base64"` as the last attribute, the
//!   path as `path-base64` in place of `path`.
//!
//! The body is the content, or with line numbers each line (split on `\n` only, keeping it; no
//! line after a final `\n`; an empty content is one empty line) prefixed with its line number,
//! right-aligned to the width of the last one, and `" | "`.
//!
//! Everything streams into one output `String`: the numbered body is never built apart, because
//! the prefixes hold no backtick, no character that needs escaping and no invalid character, so
//! the fence and the base64 decision can be read off the content itself.

use crate::engine::Reason;

/// The template a block is rendered in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Template {
    /// A `###` header and a fenced code block.
    Markdown,
    /// A `<snippet>` element.
    Xml,
}

impl Template {
    /// Parse the exact lowercase name (`"markdown"` or `"xml"`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "markdown" => Some(Self::Markdown),
            "xml" => Some(Self::Xml),
            _ => None,
        }
    }
}

/// The lowercase name of a reason, as written in the `reason` attribute.
pub fn reason_name(reason: Reason) -> &'static str {
    match reason {
        Reason::Failure => "failure",
        Reason::Reference => "reference",
        Reason::Search => "search",
    }
}

/// The `source_id` of a `reference` candidate that calls the failing function: it is labelled
/// [`CALLER_LABEL`] (`bugcontext.core.composer.CALLER_SOURCE`).
pub const CALLER_SOURCE: &str = "reference: caller of the failing function";
/// The label of a `reference` item whose `source_id` is [`CALLER_SOURCE`].
pub const CALLER_LABEL: &str = "caller of the failing function";

/// The label of an item: what the evidence is (by reason; a `reference` item that is a caller,
/// `caller`, is labelled so), and for an item from a failing file that too, e.g.
/// `"search hit in the failing file"`.
pub fn label(reason: Reason, failing: bool, caller: bool) -> &'static str {
    match (reason, failing, caller) {
        (Reason::Reference, false, true) => CALLER_LABEL,
        (Reason::Reference, true, true) => "caller of the failing function in the failing file",
        (Reason::Failure, false, _) => "failure evidence",
        (Reason::Reference, false, false) => "referenced definition",
        (Reason::Search, false, _) => "search hit",
        (Reason::Failure, true, _) => "failure evidence in the failing file",
        (Reason::Reference, true, false) => "referenced definition in the failing file",
        (Reason::Search, true, _) => "search hit in the failing file",
    }
}

/// The fence language tag for `path` (`""` if none): the text after the last `.` of the last
/// `/`-segment, unless that dot starts the segment, matched ASCII-case-insensitively.
pub fn language(path: &str) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some(dot) = name.rfind('.') else {
        return "";
    };
    if dot == 0 {
        return "";
    }
    let ext = &name[dot + 1..];
    if ext.len() > 4 || !ext.is_ascii() {
        return "";
    }
    let mut lower = [0u8; 4];
    for (l, b) in lower.iter_mut().zip(ext.bytes()) {
        *l = b.to_ascii_lowercase();
    }
    match &lower[..ext.len()] {
        b"py" | b"pyi" => "python",
        b"rs" => "rust",
        b"js" | b"mjs" | b"cjs" => "javascript",
        b"ts" => "typescript",
        b"tsx" => "tsx",
        b"jsx" => "jsx",
        b"go" => "go",
        b"java" => "java",
        b"kt" => "kotlin",
        b"c" | b"h" => "c",
        b"cc" | b"cpp" | b"cxx" | b"hpp" | b"hh" => "cpp",
        b"cs" => "csharp",
        b"rb" => "ruby",
        b"php" => "php",
        b"sh" | b"bash" => "bash",
        b"json" => "json",
        b"toml" => "toml",
        b"yaml" | b"yml" => "yaml",
        b"md" => "markdown",
        b"sql" => "sql",
        b"html" => "html",
        b"css" => "css",
        _ => "",
    }
}

/// The path as written in a Markdown header: line breaks and other control characters (`Cc`,
/// U+2028, U+2029) as `\uXXXX`, as Python's `header_path` does.
fn push_header_path(out: &mut String, path: &str) {
    for c in path.chars() {
        let code = u32::from(c);
        if code < 0x20 || (0x7f..=0x9f).contains(&code) || c == '\u{2028}' || c == '\u{2029}' {
            out.push_str(&format!("\\u{code:04x}"));
        } else {
            out.push(c);
        }
    }
}

/// Render one block (see the module documentation): identical to Python's
/// `bugcontext.core.composer.render_block(path, start, end, content, reason, failing=failing,
/// template=..., line_numbers=line_numbers, source_id=...)`, `caller` telling that the
/// `source_id` is [`CALLER_SOURCE`].
#[allow(clippy::too_many_arguments)] // the fields of a block, mirroring the Python API
pub fn block(
    path: &str,
    start: u32,
    end: u32,
    content: &str,
    reason: Reason,
    failing: bool,
    caller: bool,
    template: Template,
    line_numbers: bool,
) -> String {
    let mut out = String::new();
    block_into(
        &mut out,
        path,
        start,
        end,
        content,
        reason,
        failing,
        caller,
        template,
        line_numbers,
    );
    out
}

/// [`block`], appended to `out` (to render a section into one buffer, or reuse one).
#[allow(clippy::too_many_arguments)] // the output and the fields of a block
pub fn block_into(
    out: &mut String,
    path: &str,
    start: u32,
    end: u32,
    content: &str,
    reason: Reason,
    failing: bool,
    caller: bool,
    template: Template,
    line_numbers: bool,
) {
    let numbering = line_numbers.then(|| Numbering::new(content, start));
    let tag = label(reason, failing, caller);
    match template {
        Template::Markdown => {
            let ticks = fence_len(content);
            out.reserve(content.len() + path.len() + 2 * ticks + 64);
            out.push_str("### ");
            push_header_path(out, path);
            out.push(':');
            push_u64(out, u64::from(start));
            out.push('-');
            push_u64(out, u64::from(end));
            out.push_str(" (");
            out.push_str(tag);
            out.push_str(")\n");
            push_backticks(out, ticks);
            out.push_str(language(path));
            out.push('\n');
            match &numbering {
                Some(n) => n.for_each_piece(content, |piece| out.push_str(piece)),
                None => out.push_str(content),
            }
            // The numbered body ends with "\n" exactly when the content does.
            if !content.ends_with('\n') {
                out.push('\n');
            }
            push_backticks(out, ticks);
            out.push_str("\n\n");
        }
        Template::Xml => {
            out.reserve(content.len() + path.len() + 96);
            if xml_invalid(path) {
                out.push_str("<snippet path-base64=\"");
                let mut b64 = Base64::default();
                b64.push(out, path.as_bytes());
                b64.finish(out);
            } else {
                out.push_str("<snippet path=\"");
                escape(out, path, true);
            }
            out.push_str("\" start=\"");
            push_u64(out, u64::from(start));
            out.push_str("\" end=\"");
            push_u64(out, u64::from(end));
            out.push_str("\" reason=\"");
            out.push_str(reason_name(reason));
            out.push_str("\" label=\"");
            out.push_str(tag);
            if xml_invalid(content) {
                out.push_str("\" encoding=\"base64\">");
                let mut b64 = Base64::default();
                match &numbering {
                    Some(n) => n.for_each_piece(content, |piece| b64.push(out, piece.as_bytes())),
                    None => b64.push(out, content.as_bytes()),
                }
                b64.finish(out);
            } else {
                out.push_str("\">");
                match &numbering {
                    Some(n) => n.for_each_piece(content, |piece| escape(out, piece, false)),
                    None => escape(out, content, false),
                }
            }
            out.push_str("</snippet>\n");
        }
    }
}

/// The fence length for `text`: one more than its longest run of backticks, at least 3.
fn fence_len(text: &str) -> usize {
    let (mut longest, mut run) = (0usize, 0usize);
    for &b in text.as_bytes() {
        if b == b'`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    (longest + 1).max(3)
}

fn push_backticks(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n('`', n));
}

fn push_u64(out: &mut String, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    // ASCII digits only.
    out.push_str(std::str::from_utf8(&buf[i..]).unwrap_or_default());
}

fn digits(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 10 {
        v /= 10;
        n += 1;
    }
    n
}

/// The line-number prefixes of one content.
struct Numbering {
    start: u64,
    width: usize,
}

impl Numbering {
    fn new(content: &str, start: u32) -> Self {
        let newlines = content.bytes().filter(|&b| b == b'\n').count();
        // Lines: one per "\n", plus the unterminated rest (an empty content is one line).
        let lines = newlines + usize::from(!content.ends_with('\n'));
        let start = u64::from(start);
        Self {
            start,
            width: digits(start + lines as u64 - 1),
        }
    }

    /// Call `f` with the pieces of the numbered body in order: each line's prefix, then the line
    /// (with its `\n`).
    fn for_each_piece(&self, content: &str, mut f: impl FnMut(&str)) {
        let mut prefix = String::with_capacity(self.width + 3);
        let mut number = self.start;
        let mut rest = content;
        loop {
            prefix.clear();
            let pad = self.width - digits(number);
            prefix.extend(std::iter::repeat_n(' ', pad));
            push_u64(&mut prefix, number);
            prefix.push_str(" | ");
            f(&prefix);
            match rest.find('\n') {
                Some(i) => {
                    f(&rest[..=i]);
                    rest = &rest[i + 1..];
                    if rest.is_empty() {
                        return;
                    }
                }
                None => {
                    f(rest);
                    return;
                }
            }
            number += 1;
        }
    }
}

/// Whether `text` holds a character XML 1.0 cannot carry: a C0 control other than tab, `\n`,
/// `\r`, or U+FFFE / U+FFFF (UTF-8 `EF BF BE` / `EF BF BF`).
fn xml_invalid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| {
        (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r'))
            || (b == 0xEF && bytes[i + 1] == 0xBF && bytes[i + 2] >= 0xBE)
    })
}

/// Append `text` escaped for XML character data (`&`, `<`, `>`, `\r`) or, with `attr`, for a
/// double-quoted attribute value (also `"`, tab and `\n`).
fn escape(out: &mut String, text: &str, attr: bool) {
    let mut done = 0;
    for (i, b) in text.bytes().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'\r' => "&#13;",
            b'"' if attr => "&quot;",
            b'\t' if attr => "&#9;",
            b'\n' if attr => "&#10;",
            _ => continue,
        };
        out.push_str(&text[done..i]);
        out.push_str(rep);
        done = i + 1;
    }
    out.push_str(&text[done..]);
}

/// A streaming standard base64 encoder (with `=` padding), fed in chunks.
#[derive(Default)]
struct Base64 {
    carry: [u8; 2],
    carried: usize,
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn push_quad(out: &mut String, chunk: [u8; 3], len: usize) {
    let n = (u32::from(chunk[0]) << 16) | (u32::from(chunk[1]) << 8) | u32::from(chunk[2]);
    for k in 0..4 {
        if k <= len {
            out.push(B64[((n >> (18 - 6 * k)) & 63) as usize] as char);
        } else {
            out.push('=');
        }
    }
}

impl Base64 {
    fn push(&mut self, out: &mut String, mut bytes: &[u8]) {
        if self.carried > 0 {
            let need = 3 - self.carried;
            if bytes.len() < need {
                self.carry[self.carried..self.carried + bytes.len()].copy_from_slice(bytes);
                self.carried += bytes.len();
                return;
            }
            let mut chunk = [0u8; 3];
            chunk[..self.carried].copy_from_slice(&self.carry[..self.carried]);
            chunk[self.carried..].copy_from_slice(&bytes[..need]);
            push_quad(out, chunk, 3);
            bytes = &bytes[need..];
            self.carried = 0;
        }
        let mut chunks = bytes.chunks_exact(3);
        for c in &mut chunks {
            push_quad(out, [c[0], c[1], c[2]], 3);
        }
        let rem = chunks.remainder();
        self.carry[..rem.len()].copy_from_slice(rem);
        self.carried = rem.len();
    }

    fn finish(self, out: &mut String) {
        if self.carried > 0 {
            let mut chunk = [0u8; 3];
            chunk[..self.carried].copy_from_slice(&self.carry[..self.carried]);
            push_quad(out, chunk, self.carried);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(path: &str, start: u32, content: &str, line_numbers: bool) -> String {
        block(
            path,
            start,
            start + 1,
            content,
            Reason::Search,
            false,
            false,
            Template::Markdown,
            line_numbers,
        )
    }

    fn xml(path: &str, content: &str, line_numbers: bool) -> String {
        block(
            path,
            3,
            4,
            content,
            Reason::Reference,
            false,
            false,
            Template::Xml,
            line_numbers,
        )
    }

    fn b64(bytes: &[u8]) -> String {
        let mut out = String::new();
        let mut enc = Base64::default();
        enc.push(&mut out, bytes);
        enc.finish(&mut out);
        out
    }

    #[test]
    fn markdown_block() {
        assert_eq!(
            block(
                "src/a.py",
                10,
                20,
                "x = 1\n",
                Reason::Failure,
                false,
                false,
                Template::Markdown,
                false
            ),
            "### src/a.py:10-20 (failure evidence)\n```python\nx = 1\n```\n\n"
        );
        assert_eq!(
            md("Makefile", 1, "all:", false),
            "### Makefile:1-2 (search hit)\n```\nall:\n```\n\n"
        );
        assert_eq!(
            md("a.rs", 1, "", false),
            "### a.rs:1-2 (search hit)\n```rust\n\n```\n\n"
        );
    }

    #[test]
    fn backtick_fences() {
        assert_eq!(fence_len(""), 3);
        assert_eq!(fence_len("``"), 3);
        assert_eq!(fence_len("a ``` b"), 4);
        assert_eq!(fence_len("`````\n`"), 6);
        let out = md("x.md", 1, "```\n````", false);
        assert_eq!(
            out,
            "### x.md:1-2 (search hit)\n`````markdown\n```\n````\n`````\n\n"
        );
    }

    #[test]
    fn languages() {
        assert_eq!(language("a/b.py"), "python");
        assert_eq!(language("a/b.PYI"), "python");
        assert_eq!(language("a.b/c"), "");
        assert_eq!(language("a/.bashrc"), "");
        assert_eq!(language("x.bash"), "bash");
        assert_eq!(language("x.hpp"), "cpp");
        assert_eq!(language("x."), "");
        assert_eq!(language("x.pyx"), "");
        assert_eq!(language("x.p\u{e9}"), "");
        assert_eq!(language("x.yaml"), "yaml");
        assert_eq!(language("x.jsonl"), "");
    }

    #[test]
    fn every_language_tag() {
        // The whole table (the same as `_BLOCK_LANGUAGES` in python/bugcontext/core/composer.py).
        let table = [
            ("py", "python"),
            ("pyi", "python"),
            ("rs", "rust"),
            ("js", "javascript"),
            ("mjs", "javascript"),
            ("cjs", "javascript"),
            ("ts", "typescript"),
            ("tsx", "tsx"),
            ("jsx", "jsx"),
            ("go", "go"),
            ("java", "java"),
            ("kt", "kotlin"),
            ("c", "c"),
            ("h", "c"),
            ("cc", "cpp"),
            ("cpp", "cpp"),
            ("cxx", "cpp"),
            ("hpp", "cpp"),
            ("hh", "cpp"),
            ("cs", "csharp"),
            ("rb", "ruby"),
            ("php", "php"),
            ("sh", "bash"),
            ("bash", "bash"),
            ("json", "json"),
            ("toml", "toml"),
            ("yaml", "yaml"),
            ("yml", "yaml"),
            ("md", "markdown"),
            ("sql", "sql"),
            ("html", "html"),
            ("css", "css"),
        ];
        for (ext, tag) in table {
            assert_eq!(language(&format!("d/f.{ext}")), tag, "{ext}");
            assert_eq!(
                language(&format!("f.{}", ext.to_ascii_uppercase())),
                tag,
                "{ext}"
            );
        }
        assert_eq!(language("f.txt"), "");
        assert_eq!(language("f.pyw"), "");
    }

    #[test]
    fn header_path_escapes_control_characters() {
        // Cc (U+0000-U+001F, U+007F-U+009F), U+2028 and U+2029 as \uXXXX; space, U+00A0 and
        // the other characters as they are.
        let path = "a b\n\u{1f}\u{7f}\u{80}\u{9f}\u{a0}\u{2027}\u{2028}\u{2029}\u{202a}~.py";
        assert_eq!(
            md(path, 1, "x", false),
            "### a b\\u000a\\u001f\\u007f\\u0080\\u009f\u{a0}\u{2027}\\u2028\\u2029\u{202a}~.py\
             :1-2 (search hit)\n```python\nx\n```\n\n"
        );
    }

    #[test]
    fn labels() {
        assert_eq!(label(Reason::Failure, false, false), "failure evidence");
        assert_eq!(
            label(Reason::Reference, false, false),
            "referenced definition"
        );
        assert_eq!(label(Reason::Search, false, false), "search hit");
        assert_eq!(
            label(Reason::Failure, true, false),
            "failure evidence in the failing file"
        );
        assert_eq!(
            label(Reason::Reference, true, false),
            "referenced definition in the failing file"
        );
        assert_eq!(
            label(Reason::Search, true, false),
            "search hit in the failing file"
        );
        assert_eq!(
            label(Reason::Reference, false, true),
            "caller of the failing function"
        );
        assert_eq!(
            label(Reason::Reference, true, true),
            "caller of the failing function in the failing file"
        );
        // Only a reference item is a caller.
        assert_eq!(label(Reason::Search, false, true), "search hit");
        assert_eq!(
            label(Reason::Failure, true, true),
            "failure evidence in the failing file"
        );
        let out = block(
            "f.py",
            1,
            1,
            "",
            Reason::Search,
            true,
            false,
            Template::Xml,
            false,
        );
        assert_eq!(
            out,
            "<snippet path=\"f.py\" start=\"1\" end=\"1\" reason=\"search\" \
             label=\"search hit in the failing file\"></snippet>\n"
        );
    }

    #[test]
    fn line_numbers() {
        assert_eq!(
            md("a.py", 9, "a\nb\n", true),
            "### a.py:9-10 (search hit)\n```python\n 9 | a\n10 | b\n```\n\n"
        );
        assert_eq!(
            md("a.py", 9, "a\n\nb", true),
            "### a.py:9-10 (search hit)\n```python\n 9 | a\n10 | \n11 | b\n```\n\n"
        );
        // An empty content is one empty line; a lone "\n" is one line.
        assert_eq!(
            md("a.py", 7, "", true),
            "### a.py:7-8 (search hit)\n```python\n7 | \n```\n\n"
        );
        assert_eq!(
            md("a.py", 7, "\n", true),
            "### a.py:7-8 (search hit)\n```python\n7 | \n```\n\n"
        );
        // "\r" is not a line break.
        assert_eq!(
            md("a.py", 1, "a\rb\r\nc", true),
            "### a.py:1-2 (search hit)\n```python\n1 | a\rb\r\n2 | c\n```\n\n"
        );
        // The width is the digits of the last number: three from 100 on, five from 10000 on.
        assert_eq!(
            md("a.py", 99, "a\nb\nc\n", true),
            "### a.py:99-100 (search hit)\n```python\n 99 | a\n100 | b\n101 | c\n```\n\n"
        );
        assert_eq!(
            md("a.py", 9999, "a\nb", true),
            "### a.py:9999-10000 (search hit)\n```python\n 9999 | a\n10000 | b\n```\n\n"
        );
        // Near the top of the line range the numbers go past u32.
        let top = u32::MAX;
        let out = block(
            "a",
            top,
            top,
            "x\ny",
            Reason::Search,
            false,
            false,
            Template::Markdown,
            true,
        );
        assert!(out.contains("\n4294967295 | x\n4294967296 | y\n"), "{out}");
    }

    #[test]
    fn crlf_and_escaping() {
        assert_eq!(
            xml("a.py", "if a < b && c > d:\r\n  s = \"]]>\"\n", false),
            "<snippet path=\"a.py\" start=\"3\" end=\"4\" reason=\"reference\" \
             label=\"referenced definition\">if a &lt; b &amp;&amp; c &gt; d:&#13;\n  \
             s = \"]]&gt;\"\n</snippet>\n"
        );
        assert_eq!(
            xml("we\"ird\t<p>&\r\n.py", "\t", false),
            "<snippet path=\"we&quot;ird&#9;&lt;p&gt;&amp;&#13;&#10;.py\" start=\"3\" end=\"4\" \
             reason=\"reference\" label=\"referenced definition\">\t</snippet>\n"
        );
        // Markdown takes CRLF content verbatim; it does not end with "\n" only if it doesn't.
        assert_eq!(
            md("a.py", 1, "a\r\n", false),
            "### a.py:1-2 (search hit)\n```python\na\r\n```\n\n"
        );
        assert_eq!(
            md("a.py", 1, "a\r", false),
            "### a.py:1-2 (search hit)\n```python\na\r\n```\n\n"
        );
    }

    #[test]
    fn base64_encoder() {
        assert_eq!(b64(b""), "");
        assert_eq!(b64(b"f"), "Zg==");
        assert_eq!(b64(b"fo"), "Zm8=");
        assert_eq!(b64(b"foo"), "Zm9v");
        assert_eq!(b64(b"foobar"), "Zm9vYmFy");
        assert_eq!(b64(&[0xff, 0xfe, 0x00, 0x01]), "//4AAQ==");
        // Fed in uneven chunks, the same text.
        let data: Vec<u8> = (0..=255u8).collect();
        for split in [1usize, 2, 4, 5, 7] {
            let mut out = String::new();
            let mut enc = Base64::default();
            for c in data.chunks(split) {
                enc.push(&mut out, c);
            }
            enc.finish(&mut out);
            assert_eq!(out, b64(&data));
        }
    }

    #[test]
    fn control_characters_go_base64() {
        assert!(xml_invalid("\0"));
        assert!(xml_invalid("a\u{1b}[0m"));
        assert!(xml_invalid("\u{fffe}"));
        assert!(xml_invalid("\u{ffff}"));
        assert!(!xml_invalid(
            "\t\n\r \u{7f}\u{85}\u{fffd}\u{fdd0}\u{10ffff}\u{efbf}"
        ));
        // U+FFFD (EF BF BD) is valid wherever it stands, first or after others.
        assert!(!xml_invalid("\u{fffd}"));
        assert!(!xml_invalid("ab\u{fffd}"));
        assert!(xml_invalid("\u{fffd}\u{fffe}"));
        assert_eq!(
            xml("a.py", "\u{1b}[31m", false),
            "<snippet path=\"a.py\" start=\"3\" end=\"4\" reason=\"reference\" \
             label=\"referenced definition\" encoding=\"base64\">G1szMW0=</snippet>\n"
        );
        // The numbered body is what is encoded: "3 | \x00\n" and "4 | ".
        let out = xml("a.py", "\0\n", true);
        assert!(
            out.ends_with(&format!(">{}</snippet>\n", b64(b"3 | \0\n"))),
            "{out}"
        );
        assert_eq!(
            xml("a\u{ffff}.py", "", false),
            format!(
                "<snippet path-base64=\"{}\" start=\"3\" end=\"4\" reason=\"reference\" \
                 label=\"referenced definition\"></snippet>\n",
                b64("a\u{ffff}.py".as_bytes())
            )
        );
    }

    #[test]
    fn numbered_xml_escapes_each_line() {
        assert_eq!(
            xml("a.py", "<a>\n&", true),
            "<snippet path=\"a.py\" start=\"3\" end=\"4\" reason=\"reference\" \
             label=\"referenced definition\">3 | &lt;a&gt;\n4 | &amp;</snippet>\n"
        );
    }

    #[test]
    fn appends_to_a_buffer() {
        let mut out = String::from("x");
        block_into(
            &mut out,
            "a",
            1,
            1,
            "b",
            Reason::Search,
            false,
            false,
            Template::Markdown,
            false,
        );
        assert_eq!(out, "x### a:1-1 (search hit)\n```\nb\n```\n\n");
        assert_eq!(Template::parse("xml"), Some(Template::Xml));
        assert_eq!(Template::parse("markdown"), Some(Template::Markdown));
        assert_eq!(Template::parse("Markdown"), None);
    }
}
