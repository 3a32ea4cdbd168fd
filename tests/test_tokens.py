"""``TokenCounter``: counts equal tiktoken's, the cache, and the errors.

The equivalence tests compare with the ``tiktoken`` package (in the ``test`` extra) and are
skipped only when it is not installed. tiktoken never downloads anything here: its
``Encoding`` objects are built from the ``.tiktoken.gz`` vocabularies that the ``bpe-openai``
crate ships (the very data compiled into the extension), checked against the SHA-256 that
``tiktoken_ext.openai_public`` expects, with that module's patterns and special tokens.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import random
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bugcontext._core import TokenCounter
from hypothesis import given, settings
from hypothesis import strategies as st

ENCODINGS = ("o200k_base", "cl100k_base")
REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------
# tiktoken, built offline from the crate's data
# ---------------------------------------------------------------------------


def _bpe_openai_data_dir() -> Path:
    """The ``data/`` folder of the ``bpe-openai`` crate this repository builds with."""
    try:
        out = subprocess.run(
            ["cargo", "metadata", "--format-version", "1"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or exc
        pytest.fail(f"`cargo metadata` failed, cannot locate the bpe-openai crate: {detail}")
    for package in json.loads(out)["packages"]:
        if package["name"] == "bpe-openai":
            return Path(package["manifest_path"]).parent / "data"
    pytest.fail("bpe-openai is not among the crate's dependencies (`cargo metadata`)")


def _read_ranks(path: Path, expected_sha256: str) -> dict[bytes, int]:
    """Parse a ``.tiktoken.gz`` file (``base64-token rank`` lines) after checking its hash."""
    data = gzip.decompress(path.read_bytes())
    digest = hashlib.sha256(data).hexdigest()
    assert digest == expected_sha256, f"{path.name}: SHA-256 {digest}, tiktoken expects {expected_sha256}"
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@pytest.fixture(scope="module")
def tiktoken_encodings(request: pytest.FixtureRequest) -> dict[str, Any]:
    """``{name: tiktoken.Encoding}`` for both encodings, built without any network access."""
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed (it is in the `test` extra)")
    import tiktoken_ext.openai_public as openai_public

    data_dir = _bpe_openai_data_dir()
    encodings: dict[str, Any] = {}
    for name in ENCODINGS:

        def load(url: str, expected_hash: str | None = None, *, _name: str = name) -> dict[bytes, int]:
            assert url.endswith(f"/{_name}.tiktoken"), url
            assert expected_hash is not None
            return _read_ranks(data_dir / f"{_name}.tiktoken.gz", expected_hash)

        with pytest.MonkeyPatch.context() as mp:
            # The constructor looks the loader up in its module's globals at call time.
            mp.setattr(openai_public, "load_tiktoken_bpe", load)
            spec = getattr(openai_public, name)()
        encodings[name] = tiktoken.Encoding(
            spec["name"],
            pat_str=spec["pat_str"],
            mergeable_ranks=spec["mergeable_ranks"],
            special_tokens=spec["special_tokens"],
        )
    return encodings


@pytest.fixture(scope="module", params=ENCODINGS)
def pair(request: pytest.FixtureRequest, tiktoken_encodings: dict[str, Any]) -> tuple[TokenCounter, Any]:
    """A fresh ``TokenCounter`` and the tiktoken ``Encoding`` of the same name."""
    return TokenCounter(request.param), tiktoken_encodings[request.param]


def _tiktoken_counts(enc: Any, texts: list[str]) -> list[int]:
    return [len(enc.encode_ordinary(t)) for t in texts]


def _assert_same_counts(counter: TokenCounter, enc: Any, texts: list[str]) -> None:
    expected = _tiktoken_counts(enc, texts)
    got = counter.count(texts)
    bad = [(i, t[:80], g, e) for i, (t, g, e) in enumerate(zip(texts, got, expected, strict=True)) if g != e]
    assert not bad, f"{len(bad)} of {len(texts)} counts differ from tiktoken, first: {bad[:5]}"
    # count_one goes through the same cache and must agree.
    for text, e in list(zip(texts, expected, strict=True))[:50]:
        assert counter.count_one(text) == e


# ---------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------


def _source_files() -> list[Path]:
    """Python files of the standard library (a deterministic third of them) and this
    repository's Python and Rust sources."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    lib_files = sorted(
        p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts and "dist-packages" not in p.parts
    )
    own = sorted(
        p
        for pattern in ("python/**/*.py", "tests/*.py", "benches/*.py", "scripts/*.py", "src/**/*.rs")
        for p in REPO.glob(pattern)
    )
    return lib_files[::3] + own


def _read(path: Path) -> str:
    # surrogateescape keeps undecodable bytes as lone surrogates: more cases, not fewer.
    return path.read_text(encoding="utf-8", errors="surrogateescape")


@pytest.fixture(scope="module")
def source_texts() -> list[str]:
    files = _source_files()
    assert len(files) > 100, "expected the standard library's sources"
    texts = [_read(p) for p in files]
    # Slices at arbitrary offsets (mid-word, mid-indent, mid-CRLF), 1-3 KB like candidates.
    rng = random.Random(3)
    whole = "\n".join(texts)
    for _ in range(2000):
        start = rng.randrange(len(whole))
        texts.append(whole[start : start + rng.randint(1, 3000)])
    # The same code with Windows line endings and tab indentation.
    texts += [t.replace("\n", "\r\n") for t in texts[:200]]
    texts += [t.replace("    ", "\t") for t in texts[:200]]
    return texts


WHITESPACE = [
    "",
    " ",
    "\n",
    "\r\n",
    "\r",
    "\t",
    *(" " * n for n in (2, 3, 4, 7, 8, 15, 16, 17, 31, 64, 100, 257, 1000, 5000)),
    *("\n" * n for n in (2, 3, 10, 100)),
    *("\r\n" * n for n in (2, 3, 50)),
    *("\t" * n for n in (2, 5, 40)),
    "x" + " " * 300 + "y",
    "x" + " " * 300,
    " " * 300 + "y",
    "a  \n\t\n   ",
    "x\n  ",
    "x\n\n    ",
    "line\r\n    indented\r\n\r\n\r\n        deeper   \r\n",
    "  \n  \n  \n" * 40,
    " \t \t\n\u00a0\u3000\u2028\u2029\x0b\x0c\x85 end",
    "def f():\n    return 1\n    ",
    "\n".join(" " * (i % 24) + "x" for i in range(200)),
]

SPECIAL_TEXT = [
    "<|endoftext|>",
    "hello<|endoftext|>world",
    "<|endoftext|><|endoftext|>",
    "<|fim_prefix|>a<|fim_middle|>b<|fim_suffix|>c",
    "<|endofprompt|>",
    "< |endoftext| >",
    "<|endoftext",
]

UNICODE = [
    "日本語のテキストを数えます。東京都は首都です。",
    "中文文本，包括标点符号：“引号”与《书名号》。",  # noqa: RUF001
    "한국어 텍스트와 띄어쓰기",
    "混合 mixed テキスト text 123 ４５６",  # noqa: RUF001
    "😀🎉👩‍👩‍👧‍👦🏳️‍🌈👍🏽",
    "🙂" * 100,
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙 𝒳 = 𝟙",  # noqa: RUF001
    "\U0010ffff\U000e0001\U0001f9ea\U00020000𠀀𪚥",
    "e\u0301 n\u0303 \u0041\u030a combining: a\u0300\u0301\u0302\u0303",
    "Ünïcödé ßtraße Ωmega ДОБРЫЙ день",
    "עברית ערבית: مرحبا بالعالم",
    "हिन्दी पाठ; தமிழ்; ไทย",
    "\u200b\u200c\u200d\ufeff zero widths",
    "\x00\x01\x7f control \x1b[31mred\x1b[0m",
    "I'm you're it's we've they'll she'd I'M YOU'RE IT'S",
    "12345678901234567890 3.14159 1e-10 0xDEADBEEF",
    "a/b/c // slashes /// path/to/file.py:12",
    "```python\nprint('x')\n```\n````\n",
]

SURROGATES = [
    "\ud800",
    "\udfff",
    "a\ud800b",
    "a\udc00b",
    "\ud83d\ude00",  # a pair as two code points: tiktoken reads it as the emoji
    "x\ud83d\ude00y\ud83d",
    "\ud83d",
    "\udc00\ud800",
    "\ud800\ud800\udc00",
    "\udc00\udc00\udc00",
    "def f():\n    return '\udcff'\n",
    "\ufeff\ud800",
    "\ud800" * 100,
    "<|endoftext|>\ud800",
    "日本\udc80語",
    "\ufffd",
]


# ---------------------------------------------------------------------------
# Equivalence with tiktoken
# ---------------------------------------------------------------------------


def test_source_code_counts_equal_tiktoken(pair: tuple[TokenCounter, Any], source_texts: list[str]) -> None:
    counter, enc = pair
    _assert_same_counts(counter, enc, source_texts)


@pytest.mark.parametrize(
    "texts",
    [WHITESPACE, SPECIAL_TEXT, UNICODE, SURROGATES],
    ids=["whitespace", "special-token-text", "unicode", "lone-surrogates"],
)
def test_corpus_counts_equal_tiktoken(pair: tuple[TokenCounter, Any], texts: list[str]) -> None:
    counter, enc = pair
    combined = [a + b for a in texts[:12] for b in texts[:12]]
    _assert_same_counts(counter, enc, texts + combined)


def test_mixed_documents_equal_tiktoken(pair: tuple[TokenCounter, Any], source_texts: list[str]) -> None:
    """Code with the hard cases spliced in at random places."""
    counter, enc = pair
    rng = random.Random(7)
    pieces = WHITESPACE + SPECIAL_TEXT + UNICODE + SURROGATES
    texts = []
    for _ in range(500):
        doc = source_texts[rng.randrange(len(source_texts))][:2000]
        for _ in range(rng.randint(1, 5)):
            at = rng.randint(0, len(doc))
            doc = doc[:at] + rng.choice(pieces) + doc[at:]
        texts.append(doc)
    _assert_same_counts(counter, enc, texts)


def test_special_tokens_are_ordinary_text(tiktoken_encodings: dict[str, Any]) -> None:
    for name, enc in tiktoken_encodings.items():
        counter = TokenCounter(name)
        n = counter.count_one("<|endoftext|>")
        assert n == len(enc.encode_ordinary("<|endoftext|>")) > 1
        assert n == len(enc.encode("<|endoftext|>", disallowed_special=()))


def test_surrogates_follow_tiktokens_replacement() -> None:
    """Lone surrogates count as U+FFFD, a split pair as its astral character (as tiktoken)."""
    for name in ENCODINGS:
        counter = TokenCounter(name)
        for text in SURROGATES:
            fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            assert counter.count_one(text) == TokenCounter(name).count_one(fixed), repr(text)
        assert counter.count_one("\ud83d\ude00") == counter.count_one("😀")


_ALPHABET = st.characters(codec=None, categories=None) | st.sampled_from(
    [" ", "\n", "\r\n", "\t", "'", "s", "d", "x", "1", "日", "😀", "\ud800", "\udc00", "<|endoftext|>"]
)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.lists(_ALPHABET, max_size=60).map("".join), max_size=8))
def test_random_text_counts_equal_tiktoken(tiktoken_encodings: dict[str, Any], texts: list[str]) -> None:
    for name, enc in tiktoken_encodings.items():
        assert TokenCounter(name).count(texts) == _tiktoken_counts(enc, texts)


# ---------------------------------------------------------------------------
# The cache
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ENCODINGS)
def test_cache_returns_same_counts_and_grows_only_for_new_texts(name: str) -> None:
    counter = TokenCounter(name)
    assert counter.cache_size == 0
    texts = ["def f():\n    pass\n", "", "x = 1", "def f():\n    pass\n", "日本語", "\ud800"]
    first = counter.count(texts)
    assert counter.cache_size == 5  # the repeated text once
    assert counter.count(texts) == first
    assert counter.count(tuple(reversed(texts))) == first[::-1]
    assert counter.cache_size == 5
    assert [counter.count_one(t) for t in texts] == first
    assert counter.cache_size == 5
    assert counter.count(["x = 1", "x = 2"]) == [first[2], counter.count_one("x = 2")]
    assert counter.cache_size == 6
    # Keyed by the text that is counted: a lone surrogate counts as U+FFFD, so they share one.
    assert counter.count_one("\ufffd") == first[5]
    assert counter.cache_size == 6
    counter.clear_cache()
    assert counter.cache_size == 0
    assert counter.count(texts) == first
    assert counter.cache_size == 5


def test_cache_is_per_counter_and_per_encoding() -> None:
    text = "😀🎉 日本語のテキスト"
    o200k, cl100k = TokenCounter("o200k_base"), TokenCounter("cl100k_base")
    assert o200k.count_one(text) != cl100k.count_one(text)
    assert TokenCounter("o200k_base").cache_size == 0
    assert o200k.cache_size == cl100k.cache_size == 1


def test_counts_from_many_threads_agree() -> None:
    counter = TokenCounter("o200k_base")
    texts = [f"def f{i}(x):\n    return x * {i}\n" * (i % 7 + 1) for i in range(400)]
    expected = TokenCounter("o200k_base").count(texts)
    results: list[list[int]] = []

    def work(seed: int) -> None:
        order = list(range(len(texts)))
        random.Random(seed).shuffle(order)
        got = counter.count([texts[i] for i in order])
        results.append([got[order.index(i)] for i in range(len(texts))])

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 8
    assert counter.cache_size == len(set(texts))


def test_accepts_any_iterable_of_str_and_str_subclasses() -> None:
    class S(str):
        def encode(self, *args: Any, **kwargs: Any) -> bytes:
            raise AssertionError("not called")

    counter = TokenCounter("cl100k_base")
    expected = counter.count(["ab c", "d\ud800"])
    assert counter.count(("ab c", "d\ud800")) == expected
    assert counter.count(t for t in ["ab c", "d\ud800"]) == expected
    assert counter.count([S("ab c"), S("d\ud800")]) == expected
    assert counter.count([]) == []


# ---------------------------------------------------------------------------
# API and errors
# ---------------------------------------------------------------------------


def test_encoding_and_repr() -> None:
    for name in ENCODINGS:
        counter = TokenCounter(name)
        assert counter.encoding == name
        assert repr(counter) == f"TokenCounter({name!r})"
    assert TokenCounter(encoding="o200k_base").encoding == "o200k_base"
    assert TokenCounter("o200k_base").count_one("") == 0


def test_is_immutable() -> None:
    counter = TokenCounter("o200k_base")
    with pytest.raises(AttributeError):
        counter.encoding = "cl100k_base"  # type: ignore[misc]


@pytest.mark.parametrize("bad", ["p50k_base", "gpt2", "O200K_BASE", "", " cl100k_base", "o200k_base\ud800"])
def test_unknown_encoding_is_a_value_error_naming_the_accepted_ones(bad: str) -> None:
    with pytest.raises(ValueError, match=r"unknown encoding .*'o200k_base' or 'cl100k_base'"):
        TokenCounter(bad)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: TokenCounter(None), r"encoding must be a str"),  # type: ignore[arg-type]
        (lambda: TokenCounter(b"o200k_base"), r"encoding must be a str"),  # type: ignore[arg-type]
        (lambda: TokenCounter(), r"encoding"),  # type: ignore[call-arg]
        (lambda: TokenCounter("o200k_base").count("abc"), r"not a str"),
        (lambda: TokenCounter("o200k_base").count(["a", 1]), r"texts\[1\] must be a str, not int"),  # type: ignore[list-item]
        (lambda: TokenCounter("o200k_base").count([b"a"]), r"texts\[0\] must be a str, not bytes"),  # type: ignore[list-item]
        (lambda: TokenCounter("o200k_base").count(None), r"not iterable"),  # type: ignore[arg-type]
        (lambda: TokenCounter("o200k_base").count_one(None), r"text"),  # type: ignore[arg-type]
        (lambda: TokenCounter("o200k_base").count_one(["a"]), r"text"),  # type: ignore[arg-type]
    ],
)
def test_type_errors(call: Callable[[], object], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        call()


def test_errors_leave_the_cache_untouched() -> None:
    counter = TokenCounter("o200k_base")
    with pytest.raises(TypeError):
        counter.count(["a", "b", 3])  # type: ignore[list-item]
    assert counter.cache_size == 0


def test_error_raised_while_iterating_propagates() -> None:
    def texts() -> Any:
        yield "a"
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        TokenCounter("o200k_base").count(texts())


def test_no_network_needed() -> None:
    """The encodings are compiled in: counting works with sockets disabled."""
    code = (
        "import socket\n"
        "def deny(*a, **k): raise OSError('network disabled')\n"
        "socket.socket = deny; socket.create_connection = deny; socket.getaddrinfo = deny\n"
        "from bugcontext._core import TokenCounter\n"
        "print(TokenCounter('o200k_base').count_one('hello world'),"
        " TokenCounter('cl100k_base').count_one('hello world'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2", "2"]
