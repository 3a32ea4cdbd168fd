use super::*;

fn spans(text: &str) -> Option<Vec<(u32, u8, u32, u32)>> {
    outline(text.as_bytes()).map(|found| {
        found
            .into_iter()
            .map(|s| (s.depth, s.kind, s.start, s.end))
            .collect()
    })
}

fn names(text: &str) -> Vec<String> {
    outline(text.as_bytes())
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect()
}

#[test]
fn definitions_are_named() {
    assert_eq!(
        names("@d\nasync def run(x): pass\nclass A(B):\n    def m(self): pass\nx = 1\n"),
        ["run", "A", "m", ""]
    );
}

#[test]
fn definitions_classes_and_their_members() {
    let text = "import os\n\n@dec\ndef f(a,\n      b):\n    return (a +\n            b)\n    # trailing comment\n\nclass C(B):\n    \"\"\"Doc\n    string.\"\"\"\n    x = 1\n\n    @property\n    async def g(self): pass\n\n    class D:\n        def h(self):\n            if x:\n                pass\n";
    assert_eq!(
        spans(text),
        Some(vec![
            (0, IMPORT, 1, 1),
            (0, FUNCTION, 3, 7),
            (0, CLASS, 10, 21),
            (1, OTHER, 11, 12),
            (1, OTHER, 13, 13),
            (1, FUNCTION, 15, 16),
            (1, CLASS, 18, 21),
            (2, FUNCTION, 19, 21),
        ])
    );
}

#[test]
fn clauses_semicolons_and_continuations() {
    let text = "if a:\n    x = 1\nelif b: y = 2\nelse:\n    z = 3\nimport os; v = [1,\n 2]\nw = 1 + \\\n    2\ntry:\n    pass\nexcept (A, B) as e:\n    pass\nfinally:\n    q = f'{w!r:>{n}} {d[\"k\"]}'\n";
    assert_eq!(
        spans(text),
        Some(vec![
            (0, OTHER, 1, 5),
            (0, IMPORT, 6, 6),
            (0, OTHER, 6, 7),
            (0, OTHER, 8, 9),
            (0, OTHER, 10, 15),
        ])
    );
}

#[test]
fn what_is_not_read_exactly_gives_none() {
    for text in [
        "def f():\n\treturn 1\n",        // a tab in indentation
        "x = 'open\n",                   // an unterminated string
        "x = (1,\n",                     // an unterminated bracket
        "  x = 1\n",                     // an indented first line
        "x = 1\n    y = 2\n",            // an unexpected indent
        "if x:\ny = 1\n",                // a header without its body
        "def f():\n    pass\n  x = 1\n", // a dedent to no level
        "print 'x'\n",                   // Python 2
        "except E, e:\n",                // Python 2
        "x = 0777\n",                    // Python 2
        "x = ur'a'\n",                   // Python 2
        "x = `y`\n",                     // Python 2
        "x = f'{a[\"k\"]}'\n"
            .replace('"', "'")
            .as_str()
            .to_owned()
            .leak(), // its own quote
        "x = f'{}'\n",                   // an empty field
        "x = f'}'\n",                    // a single `}`
        "x = 1\ry = 2\n",                // a lone carriage return
        "x = 1; if y: z\n",              // a compound statement after `;`
        "if y: z; x = 1\n",              // `;` after a compound header
        "caf\u{e9} = 1\n",               // a name that is not ASCII
        "else:\n    pass\n",             // a clause with nothing to continue
        "x = (1]\n",                     // brackets that do not match
        "def toto # no parameters\n",    // `def` without `(`
        "class A extends B {}\n",        // a class without `(` or `:`
        "def async():\n    pass\n",      // a keyword defined
        "async = 'foo'\n",               // a keyword assigned to
        "async x\n",                     // `async` before no def, for or with
        "raise m.E..\n",                 // `..` outside an import
    ] {
        assert_eq!(spans(text), None, "{text:?}");
    }
}

#[test]
fn empty_and_comment_only_texts_have_no_statements() {
    assert_eq!(spans(""), Some(vec![]));
    assert_eq!(spans("# only\n\n   # comments\n"), Some(vec![]));
    assert_eq!(spans("x = 1"), Some(vec![(0, OTHER, 1, 1)]));
    assert_eq!(
        spans("from .. import a\ndef f(x: int | None = None) -> None: ...\n"),
        Some(vec![(0, IMPORT, 1, 1), (0, FUNCTION, 2, 2)])
    );
}
