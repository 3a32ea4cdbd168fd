//! Python's logical lines, as far as statement bounds need them: each one's indentation,
//! first and last line, first word, whether it ends with `:`, and its `;`-separated parts.

/// The first word of a logical line (or of a part), as far as the outline needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Word {
    /// `def`, or `async def`.
    Def,
    Class,
    /// `import` or `from`.
    Import,
    /// `@`: a decorator.
    At,
    /// A clause that continues the statement before: `else`, `elif`, `except`, `finally`.
    Clause,
    /// A word that starts a compound statement: `if`, `for`, `while`, `try`, `with`,
    /// `async` (not before `def`), `match`, `case`, `lambda`.
    Compound,
    Other,
}

impl Word {
    pub(super) fn continues(self) -> bool {
        self == Word::Clause
    }

    /// Whether the word starts a statement that may not share its line with another.
    fn compound(self) -> bool {
        matches!(
            self,
            Word::Compound | Word::Clause | Word::Def | Word::Class | Word::At
        )
    }

    fn of(word: &[u8]) -> Word {
        match word {
            b"def" => Word::Def,
            b"class" => Word::Class,
            b"import" | b"from" => Word::Import,
            b"else" | b"elif" | b"except" | b"finally" => Word::Clause,
            b"if" | b"for" | b"while" | b"try" | b"with" | b"async" | b"match" | b"case"
            | b"lambda" => Word::Compound,
            _ => Word::Other,
        }
    }
}

/// One `;`-separated simple statement of a logical line: lines `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Part {
    pub start: u32,
    pub end: u32,
    pub import: bool,
}

/// One logical line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Logical {
    /// The column of its first token (spaces only).
    pub indent: usize,
    pub first_line: u32,
    /// The line of its last token.
    pub last_line: u32,
    pub first: Word,
    /// Whether its last token is a `:` outside brackets (a header whose body follows).
    pub colon: bool,
    /// Its `;`-separated simple statements (one, for a line without `;`).
    pub parts: Vec<Part>,
    /// The name a `def` or `class` line defines.
    pub name: String,
}

/// The state of the logical line being read.
struct Open {
    logical: Logical,
    brackets: Vec<u8>,
    /// Tokens read in the current part, and its first two words.
    tokens: usize,
    words: [Option<Word>; 2],
    part_start: u32,
    /// The part's first identifier (for the Python 2 checks) and whether the line holds a
    /// `:` or `,` outside brackets.
    first_name: Vec<u8>,
    colon_seen: bool,
    comma_seen: bool,
    /// Whether the token before was `def` or `class` (the next name is the one defined).
    naming: bool,
    /// What the token before was, for the checks of what may follow it.
    previous: Previous,
}

/// The token before, as far as the checks of what may follow it need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Previous {
    None,
    /// A hard keyword.
    Keyword,
    /// The name a `def` defines (a `(` must follow), or a `class` (a `(` or `:`).
    DefName,
    ClassName,
    Other,
}

/// Python's hard keywords.
fn keyword(name: &[u8]) -> bool {
    matches!(
        name,
        b"False"
            | b"None"
            | b"True"
            | b"and"
            | b"as"
            | b"assert"
            | b"async"
            | b"await"
            | b"break"
            | b"class"
            | b"continue"
            | b"def"
            | b"del"
            | b"elif"
            | b"else"
            | b"except"
            | b"finally"
            | b"for"
            | b"from"
            | b"global"
            | b"if"
            | b"import"
            | b"in"
            | b"is"
            | b"lambda"
            | b"nonlocal"
            | b"not"
            | b"or"
            | b"pass"
            | b"raise"
            | b"return"
            | b"try"
            | b"while"
            | b"with"
            | b"yield"
    )
}

fn name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The logical lines of `text`, or `None` where it is not read exactly.
pub(super) fn logical_lines(text: &[u8]) -> Option<Vec<Logical>> {
    let mut lexer = Lexer {
        text,
        at: 0,
        line: 1,
    };
    let mut out = Vec::new();
    while let Some(indent) = lexer.line_start()? {
        out.push(lexer.logical(indent)?);
    }
    Some(out)
}

struct Lexer<'t> {
    text: &'t [u8],
    at: usize,
    line: u32,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.text.get(self.at + ahead).copied()
    }

    /// Past a line ending at `self.at` (`\n` or `\r\n`), if there is one; a lone `\r` is
    /// refused.
    fn newline(&mut self) -> Option<bool> {
        match self.peek(0) {
            Some(b'\n') => self.at += 1,
            Some(b'\r') if self.peek(1) == Some(b'\n') => self.at += 2,
            Some(b'\r') => return None,
            _ => return Some(false),
        }
        self.line += 1;
        Some(true)
    }

    /// Skip blank and comment lines; the indentation of the next logical line, or
    /// `Some(None)` at the end of the text.
    fn line_start(&mut self) -> Option<Option<usize>> {
        loop {
            let mut indent = 0;
            while self.peek(0) == Some(b' ') {
                indent += 1;
                self.at += 1;
            }
            match self.peek(0) {
                None => return Some(None),
                Some(b'\t' | 0x0c | b'\\') => return None,
                Some(b'#') => self.comment(),
                Some(b'\n' | b'\r') => {}
                Some(_) => return Some(Some(indent)),
            }
            self.newline()?;
        }
    }

    fn comment(&mut self) {
        while let Some(b) = self.peek(0) {
            if b == b'\n' || b == b'\r' {
                break;
            }
            self.at += 1;
        }
    }

    /// Read one logical line starting at its first token.
    fn logical(&mut self, indent: usize) -> Option<Logical> {
        let mut open = Open {
            logical: Logical {
                indent,
                first_line: self.line,
                last_line: self.line,
                first: Word::Other,
                colon: false,
                parts: Vec::new(),
                name: String::new(),
            },
            brackets: Vec::new(),
            tokens: 0,
            words: [None, None],
            part_start: self.line,
            first_name: Vec::new(),
            colon_seen: false,
            comma_seen: false,
            naming: false,
            previous: Previous::None,
        };
        loop {
            let Some(b) = self.peek(0) else {
                if !open.brackets.is_empty() {
                    return None;
                }
                break;
            };
            match b {
                b' ' | b'\t' | 0x0c => self.at += 1,
                b'\n' | b'\r' => {
                    self.newline()?;
                    if open.brackets.is_empty() {
                        break;
                    }
                }
                b'#' => self.comment(),
                b'\\' => {
                    self.at += 1;
                    if !self.newline()? || self.peek(0).is_none() {
                        return None;
                    }
                }
                _ => self.token(&mut open)?,
            }
        }
        self.end_part(&mut open)?;
        let mut logical = open.logical;
        logical.first = match logical.parts.len() {
            1 => logical.first,
            _ => Word::Other,
        };
        Some(logical)
    }

    /// Close the current `;`-separated part.
    fn end_part(&mut self, open: &mut Open) -> Option<()> {
        if open.naming || matches!(open.previous, Previous::DefName | Previous::ClassName) {
            return None; // `def f`, `class A` at the end of a line
        }
        if open.tokens == 0 {
            // `x = 1;` ends with a `;`; a line of `;` alone is refused.
            return (!open.logical.parts.is_empty()).then_some(());
        }
        let first = open.words[0].unwrap_or(Word::Other);
        let first = match (first, open.words[1]) {
            (Word::Compound, Some(Word::Def)) => Word::Def, // `async def`
            (first, _) => first,
        };
        if open.logical.parts.is_empty() {
            open.logical.first = first;
        } else if first.compound() || open.logical.colon {
            return None; // `x = 1; if y: z`
        }
        // Python 2: `except E, e:`, `raise E, "text"`; `print x` and `exec code`.
        if open.comma_seen && matches!(open.first_name.as_slice(), b"except" | b"raise") {
            return None;
        }
        open.logical.parts.push(Part {
            start: open.part_start,
            end: open.logical.last_line,
            import: first == Word::Import,
        });
        Some(())
    }

    /// One token at `self.at` (not a blank, a line ending, a comment or a backslash).
    fn token(&mut self, open: &mut Open) -> Option<()> {
        let start_line = self.line;
        let b = self.peek(0)?;
        let name_next = b.is_ascii_alphabetic() || b == b'_';
        match open.previous {
            Previous::DefName if b != b'(' => return None,
            Previous::ClassName if b != b'(' && b != b':' => return None,
            Previous::Keyword
                if b == b'='
                    && self.peek(1) != Some(b'=')
                    && open.tokens == 1
                    && matches!(open.first_name.as_slice(), b"async" | b"await") =>
            {
                return None; // `async = 1`
            }
            _ if open.naming && !name_next => return None,
            _ => {}
        }
        let mut previous = Previous::Other;
        let mut word = None;
        let mut colon = false;
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let from = self.at;
                while self.peek(0).is_some_and(name_byte) {
                    self.at += 1;
                }
                let name = &self.text[from..self.at];
                if matches!(self.peek(0), Some(b'"' | b'\'')) {
                    self.string(prefix(name)?)?;
                } else {
                    if open.tokens == 1 && matches!(open.first_name.as_slice(), b"print" | b"exec")
                    {
                        return None; // `print x`: Python 2
                    }
                    word = Some(Word::of(name));
                    if open.naming {
                        if keyword(name) {
                            return None; // `def async():`
                        }
                        if open.logical.name.is_empty() {
                            open.logical.name = String::from_utf8_lossy(name).into_owned();
                        }
                        previous = match open.words[0] {
                            Some(Word::Class) => Previous::ClassName,
                            _ => Previous::DefName,
                        };
                    } else if keyword(name) {
                        previous = Previous::Keyword;
                    }
                    if open.tokens == 1
                        && open.first_name.as_slice() == b"async"
                        && !matches!(name, b"def" | b"for" | b"with")
                    {
                        return None;
                    }
                    if open.tokens == 0 {
                        open.first_name = name.to_vec();
                    }
                }
            }
            b'"' | b'\'' => {
                if open.tokens == 1 && matches!(open.first_name.as_slice(), b"print" | b"exec") {
                    return None; // `print "x"`: Python 2
                }
                self.string(Prefix::default())?;
            }
            b'0'..=b'9' => self.number()?,
            b'.' if self.peek(1).is_some_and(|d| d.is_ascii_digit()) => self.number()?,
            b'.' if self.peek(1) == Some(b'.') && self.peek(2) == Some(b'.') => self.at += 3,
            b'.' if self.peek(1) == Some(b'.') && open.words[0] != Some(Word::Import) => {
                return None; // `x..y` (`from .. import` is a relative import)
            }
            b'(' | b'[' | b'{' => {
                open.brackets.push(b);
                self.at += 1;
            }
            b')' | b']' | b'}' => {
                let opener = match b {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                if open.brackets.pop() != Some(opener) {
                    return None;
                }
                self.at += 1;
            }
            b':' if self.peek(1) == Some(b'=') => self.at += 2,
            b':' => {
                self.at += 1;
                if open.brackets.is_empty() {
                    colon = true;
                    open.colon_seen = true;
                }
            }
            b';' if open.brackets.is_empty() => {
                self.at += 1;
                if open.colon_seen || open.words[0].is_some_and(Word::compound) {
                    return None;
                }
                self.end_part(open)?;
                open.tokens = 0;
                open.words = [None, None];
                open.first_name.clear();
                open.comma_seen = false;
                // The next part starts at its first token (set below, when it comes).
                open.part_start = 0;
                return Some(());
            }
            b'@' if open.tokens == 0 && open.logical.parts.is_empty() => {
                self.at += 1;
                word = Some(Word::At);
                if !matches!(
                    self.peek(0),
                    Some(b' ' | b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'(')
                ) {
                    return None;
                }
            }
            b',' => {
                self.at += 1;
                if open.brackets.is_empty() {
                    open.comma_seen = true;
                }
            }
            b'<' if self.peek(1) == Some(b'>') => return None, // Python 2's `<>`
            b'!' if self.peek(1) != Some(b'=') => return None,
            b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' | b'~' | b'<' | b'>' | b'='
            | b'!' | b'.' | b'@' => self.at += 1,
            _ => return None, // `$`, `?`, a backtick, a control or non-ASCII byte
        }
        if open.tokens == 0 {
            if open.part_start == 0 {
                open.part_start = start_line;
            }
            open.words[0] = Some(word.unwrap_or(Word::Other));
        } else if open.tokens == 1 {
            open.words[1] = Some(word.unwrap_or(Word::Other));
        }
        open.naming = open.tokens <= 1 && matches!(word, Some(Word::Def | Word::Class));
        open.previous = previous;
        open.tokens += 1;
        open.logical.last_line = self.line;
        open.logical.colon = colon;
        Some(())
    }

    /// A number: digits, letters, `_` and `.`, and a sign after an exponent's `e`; a
    /// decimal with a leading zero (`0777`, Python 2's octal) is refused.
    fn number(&mut self) -> Option<()> {
        let from = self.at;
        while let Some(b) = self.peek(0) {
            let sign = matches!(b, b'+' | b'-')
                && matches!(self.text[self.at - 1], b'e' | b'E')
                && !self.text[from..self.at].starts_with(b"0x")
                && !self.text[from..self.at].starts_with(b"0X");
            if !(name_byte(b) || b == b'.' || sign) {
                break;
            }
            self.at += 1;
        }
        let number = &self.text[from..self.at];
        let octal = number.len() > 1
            && number[0] == b'0'
            && number.iter().all(|b| b.is_ascii_digit() || *b == b'_')
            && number.iter().any(|b| (b'1'..=b'9').contains(b));
        (!octal).then_some(())
    }

    /// A string whose opening quote is at `self.at`, to past its closing quote.
    fn string(&mut self, prefix: Prefix) -> Option<()> {
        let quote = self.peek(0)?;
        let triple = self.peek(1) == Some(quote) && self.peek(2) == Some(quote);
        self.at += if triple { 3 } else { 1 };
        // In an f-string: the depth of `{` fields, and whether the field holds anything.
        let mut depth = 0usize;
        let mut field_empty = false;
        loop {
            let b = self.peek(0)?;
            if b == quote
                && (!triple || (self.peek(1) == Some(quote) && self.peek(2) == Some(quote)))
            {
                if depth > 0 {
                    return None;
                }
                self.at += if triple { 3 } else { 1 };
                return Some(());
            }
            match b {
                b'\\' => {
                    if depth > 0 {
                        return None;
                    }
                    self.at += 1;
                    if !self.newline()? {
                        self.at += 1;
                    }
                }
                b'\n' | b'\r' => {
                    if !triple {
                        return None;
                    }
                    self.newline()?;
                }
                b'{' if prefix.format => {
                    if depth == 0 && self.peek(1) == Some(b'{') {
                        self.at += 2;
                    } else {
                        depth += 1;
                        field_empty = true;
                        self.at += 1;
                    }
                }
                b'}' if prefix.format => {
                    if depth == 0 {
                        if self.peek(1) != Some(b'}') {
                            return None;
                        }
                        self.at += 2;
                    } else {
                        if field_empty {
                            return None;
                        }
                        depth -= 1;
                        self.at += 1;
                    }
                }
                b'"' | b'\'' if depth > 0 && b != quote => {
                    // A string inside a field, of the other quote: to its end, on this line.
                    self.at += 1;
                    loop {
                        match self.peek(0)? {
                            b'\n' | b'\r' | b'\\' => return None,
                            c if c == b => break,
                            _ => self.at += 1,
                        }
                    }
                    self.at += 1;
                    field_empty = false;
                }
                b'"' | b'\'' | b'#' if depth > 0 => return None,
                _ => {
                    if depth > 0 && !matches!(b, b' ' | b'\t') {
                        field_empty = false;
                    }
                    self.at += 1;
                }
            }
        }
    }
}

/// A string's prefix: whether it is an f-string.
#[derive(Clone, Copy, Debug, Default)]
struct Prefix {
    format: bool,
}

/// The prefix `name` right before a quote, or `None` if it is not one of Python 3's
/// (`r`, `u`, `b`, `f`, `br`, `rb`, `fr`, `rf`, in any case).
fn prefix(name: &[u8]) -> Option<Prefix> {
    let lower: Vec<u8> = name.iter().map(u8::to_ascii_lowercase).collect();
    match lower.as_slice() {
        b"r" | b"u" | b"b" | b"br" | b"rb" => Some(Prefix { format: false }),
        b"f" | b"fr" | b"rf" => Some(Prefix { format: true }),
        _ => None,
    }
}
