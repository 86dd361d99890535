"""Offline text splitting for the IFEval checkers: words, sentences, NLTK-style word tokens.

The official checkers count

- words with NLTK's ``RegexpTokenizer(r"\\w+")``: every maximal run of ``\\w`` characters.
  :func:`count_words` is exactly that (``re.findall(r"\\w+")``), so word counts equal the official ones;
- sentences with NLTK's Punkt sentence tokenizer and its *trained English parameters*
  (``tokenizers/punkt/english.pickle``, or ``punkt_tab`` since NLTK 3.9, downloaded by NLTK at run
  time, which fails offline);
- words in all capitals on ``nltk.word_tokenize``: Punkt English sentences, then NLTK's word
  tokenizer (a set of regular-expression rules, no data) on each sentence.

Reference NLTK: 3.9.1 (the release IFEval harnesses moved to for ``punkt_tab``; 3.8.1, current at
publication, differs only in not collapsing newlines inside a sentence before splitting clitics).
Later releases changed details: 3.9.4 splits words at the dashes U+2012 to U+2015, 3.10.2 treats
curly quotes as closing punctuation in Punkt, and 3.10.3 matches ``\\w`` with the ``regex`` engine,
which also takes combining marks (so a Hindi or Thai word is one word there but several here and in
every earlier release).

:func:`split_sentences` runs the Punkt decision procedure (Kiss & Strunk 2006, as NLTK implements it:
candidate breaks after ``.``, ``?``, ``!``; a first pass by token type; a second pass with the
orthographic, sentence-starter and initial/ordinal heuristics; closing quotes and brackets realigned
to the sentence before) with hand-written parameters instead of the trained ones:

- ``ABBREVIATIONS``: common English abbreviations (the trained list is learned from a news corpus and
  is not reproduced here);
- ``SENTENCE_STARTERS``: common English words that start sentences; written capitalized after an
  abbreviation, an ellipsis or an initial they mark a sentence break (the trained model decides this
  from the orthographic context of each word in its corpus);
- no collocations.

Given the same parameters it returns the same sentence spans as NLTK 3.9.1's ``PunktSentenceTokenizer``
(checked on the 541 IFEval prompts and 20,000 generated texts), so a sentence count can differ from the
official one only where those parameters matter: a period after a word that one model takes for an
abbreviation and the other does not (``approx.``, ``Fig.``, a rare title), an ellipsis or initial
followed by a capitalized word, or a pair of words the trained model knows as a collocation. Everything
else (what is a candidate break, ``?``/``!`` always breaking, no break at a bare newline, ``1.`` of a
numbered list counting as a sentence when a capitalized word follows, decimal numbers, closing quotes)
follows the same procedure. :func:`word_tokens` applies the rules of NLTK 3.9.1's ``NLTKWordTokenizer``
(checked token for token) to each sentence; the count of all-capital words can differ from the official
one only where the sentence split does, since a clitic such as ``'S`` or ``N'T`` is split off a word
only before a sentence-final period.
"""

from __future__ import annotations

import re
import string

# --------------------------------------------------------------------------------------------------
# Words (exact)
# --------------------------------------------------------------------------------------------------

_WORD_RE = re.compile(r"\w+")


def count_words(text: str) -> int:
    """Number of maximal runs of word characters (``\\w``, Unicode): the official word count."""
    return len(_WORD_RE.findall(text))


# --------------------------------------------------------------------------------------------------
# Sentences: the Punkt decision procedure with hand-written parameters
# --------------------------------------------------------------------------------------------------

# Abbreviation types, lower case, without their final period (as Punkt stores them): a token
# "<abbreviation>." is not a sentence break unless the next word is a capitalized sentence starter.
ABBREVIATIONS = frozenset(
    """
    mr mrs ms messrs mme dr prof sr jr st mt ft rev hon gov sen rep pres gen col maj capt lt sgt cmdr adm
    inc ltd co corp bros dept univ assn est approx vs etc cf viz al ca ch vol vols pp fig figs eq eqs
    jan feb mar apr jun jul aug sep sept oct nov dec
    e.g i.e a.m p.m u.s u.k u.n e.u u.s.a b.c a.d ph.d m.d b.a m.a b.sc m.sc d.c l.a n.y
    """.split()
)

# Words that, capitalized after an abbreviation, an ellipsis or an initial, begin a new sentence.
SENTENCE_STARTERS = frozenset(
    """
    the a an this that these those there here it its he she they we you my our your his her their
    but and so or if when while in on at for with as after before however also then what how why where
    who which some many most all each every one two not no yes to from by of is are was were do does did
    let please thank thanks finally first second third next overall therefore thus although because
    since still yet now today just even both other such more another instead meanwhile moreover
    furthermore additionally unfortunately fortunately indeed besides otherwise
    """.split()
)

_SENT_END_CHARS = (".", "?", "!")
# Characters that cannot occur inside a word token (Punkt's "NonWord" class, "?" and "!" included).
_NON_WORD = "[)\";}\\]*:@'({\\[?!]"
# Multi-character punctuation: dashes, ellipses, spaced ellipses.
_MULTI_CHAR = r"(?:\-{2,}|\.{2,}|(?:\.\s){2,}\.)"
# A word token cannot begin with one of these.
_WORD_START = "[^\\(\"\\`{\\[:;&\\#\\*@\\)}\\]\\-,]"

_PUNKT_WORD_RE = re.compile(
    rf"""(
        {_MULTI_CHAR}
        |
        (?={_WORD_START})\S+?
        (?=\s|$|{_NON_WORD}|{_MULTI_CHAR}|,(?=$|\s|{_NON_WORD}|{_MULTI_CHAR}))
        |
        \S
    )""",
    re.UNICODE | re.VERBOSE,
)
# A candidate break: an end character followed by a non-word character, or by whitespace and a token.
_CANDIDATE_RE = re.compile(
    rf"[.?!](?=(?P<after_tok>{_NON_WORD}|\s+(?P<next_tok>\S+)))",
    re.UNICODE,
)
# Closing punctuation at the start of the next sentence that belongs to the one before.
_REALIGN_RE = re.compile(r"[\"')\]}]+?(?:\s+|(?=--)|$)", re.MULTILINE)

_NUMERIC_RE = re.compile(r"^-?[\.,]?\d[\d,\.-]*\.?$")
_ELLIPSIS_RE = re.compile(r"\.\.+$")
_INITIAL_RE = re.compile(r"[^\W\d]\.$", re.UNICODE)
_PUNCTUATION_TOKENS = frozenset(";:,.!?")


class _Token:
    __slots__ = ("tok", "type", "period_final", "sentbreak", "abbr", "ellipsis")

    def __init__(self, tok: str):
        self.tok = tok
        self.type = _NUMERIC_RE.sub("##number##", tok.lower())
        self.period_final = tok.endswith(".")
        self.sentbreak = False
        self.abbr = False
        self.ellipsis = False

    @property
    def type_no_period(self) -> str:
        return self.type[:-1] if len(self.type) > 1 and self.type[-1] == "." else self.type

    @property
    def type_no_sentperiod(self) -> str:
        return self.type_no_period if self.sentbreak else self.type


def _punkt_tokens(text: str) -> list[_Token]:
    return [_Token(t) for line in text.split("\n") if line.strip() for t in _PUNKT_WORD_RE.findall(line)]


def _first_pass(tok: _Token) -> None:
    """Decisions by the token alone: '.', '?', '!' break; '..' is an ellipsis; 'word.' breaks unless
    'word' is a known abbreviation."""
    t = tok.tok
    if t in _SENT_END_CHARS:
        tok.sentbreak = True
    elif _ELLIPSIS_RE.match(t):
        tok.ellipsis = True
    elif tok.period_final and not t.endswith(".."):
        stem = t[:-1].lower()
        if stem in ABBREVIATIONS or stem.split("-")[-1] in ABBREVIATIONS:
            tok.abbr = True
        else:
            tok.sentbreak = True


def _starts_sentence(tok: _Token) -> bool | None:
    """The orthographic heuristic: True (starts a sentence), False (does not) or None (unknown).
    Punctuation and lower-case words do not start sentences; a capitalized common sentence starter
    does; anything else is unknown."""
    if tok.tok in _PUNCTUATION_TOKENS or tok.tok[0].islower():
        return False
    if tok.tok[0].isupper() and tok.type_no_sentperiod in SENTENCE_STARTERS:
        return True
    return None


def _second_pass(tok: _Token, nxt: _Token) -> None:
    """Decisions from the next token, for tokens ending in a period."""
    if not tok.period_final:
        return
    is_initial = bool(_INITIAL_RE.match(tok.tok))
    if (tok.abbr or tok.ellipsis) and not is_initial:
        # An abbreviation or ellipsis also ends the sentence when the next word starts one.
        if _starts_sentence(nxt) is True:
            tok.sentbreak = True
            return
    if is_initial or tok.type_no_period == "##number##":
        # An initial or an ordinal ("J.", "1.") does not end the sentence when the next word does not
        # start one; nor does an initial before a capitalized word that is not a sentence starter.
        starts = _starts_sentence(nxt)
        if starts is False or (starts is None and is_initial and nxt.tok[0].isupper()):
            tok.sentbreak = False
            tok.abbr = True


def _context_has_break(context: str) -> bool:
    """Whether the tokens around a candidate contain a sentence break followed by another token."""
    tokens = _punkt_tokens(context)
    for tok in tokens:
        _first_pass(tok)
    for tok, nxt in zip(tokens, tokens[1:]):
        _second_pass(tok, nxt)
    return any(tok.sentbreak for tok in tokens[:-1])


def _candidates(text: str):
    """(match, context) for each candidate break. Of several candidates with no whitespace between them
    ("wow!!!", 'said."Then') only the last is kept; its context starts at the word before the first."""
    previous_start, previous_stop, previous = 0, 0, None
    for match in _CANDIDATE_RE.finditer(text):
        before = text[previous_stop : match.start()]
        last_space = max((i for i, c in enumerate(before) if c in string.whitespace), default=0)
        start = previous_stop + last_space + 1 if last_space else previous_start
        if previous is not None and previous_stop <= start:
            yield previous, text[previous_start:previous_stop] + previous.group() + previous.group("after_tok")
        previous_start, previous_stop, previous = start, match.start(), match
    if previous is not None:
        yield previous, text[previous_start:previous_stop] + previous.group() + previous.group("after_tok")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, Punkt-style (see the module docstring)."""
    raw: list[tuple[int, int]] = []
    last_break = 0
    for match, context in _candidates(text):
        if _context_has_break(context):
            raw.append((last_break, match.end()))
            last_break = match.start("next_tok") if match.group("next_tok") else match.end()
    raw.append((last_break, len(text.rstrip())))

    spans: list[tuple[int, int]] = []
    realign = 0
    for i, (start, stop) in enumerate(raw):
        start += realign
        if i + 1 == len(raw):
            if text[start:stop]:
                spans.append((start, stop))
            continue
        next_start, next_stop = raw[i + 1]
        m = _REALIGN_RE.match(text[next_start:next_stop])
        if m:
            spans.append((start, next_start + len(m.group(0).rstrip())))
            realign = m.end()
        else:
            realign = 0
            if text[start:stop]:
                spans.append((start, stop))
    return spans


def split_sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


def count_sentences(text: str) -> int:
    return len(sentence_spans(text))


# --------------------------------------------------------------------------------------------------
# Word tokens, as nltk.word_tokenize makes them (its rules, applied to each sentence)
# --------------------------------------------------------------------------------------------------

_CLOSERS = "\\]\\)}>\"'\xbb\u201d\u2019 "

_STARTING_QUOTES = [
    (re.compile("([\xab\u201c\u2018\u201e]|[`]+)"), r" \1 "),
    (re.compile(r'^"'), "``"),
    (re.compile("(``)"), r" \1 "),
    (re.compile("([ \\(\\[{<])(\"|'{2})"), r"\1 `` "),
    (re.compile(r"(?i)(')(?!re|ve|ll|m|t|s|d|n)(\w)\b"), r"\1 \2"),
]
_PUNCTUATION = [
    (re.compile(f"([^\\.])(\\.)([{_CLOSERS}]*)\\s*$"), r"\1 \2 \3 "),
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}"), r" \g<0> "),
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    (re.compile("([^\\.])(\\.)([\\]\\)}>\"']*)\\s*$"), r"\1 \2\3 "),
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"[*]"), r" \g<0> "),
]
_BRACKETS = (re.compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> ")
_DOUBLE_DASH = (re.compile(r"--"), r" -- ")
_ENDING_QUOTES = [
    (re.compile("([\xbb\u201d\u2019])"), r" \1 "),
    (re.compile(r"''"), " '' "),
    (re.compile(r'"'), " '' "),
    (re.compile(r"\s+"), " "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
]
# Contractions split in two: cannot, d'ye, gimme, gonna, gotta, lemme, more'n, wanna; 'tis, 'twas.
_CONTRACTIONS = [
    re.compile(p)
    for p in (
        r"(?i)\b(can)(not)\b",
        r"(?i)\b(d)('ye)\b",
        r"(?i)\b(gim)(me)\b",
        r"(?i)\b(gon)(na)\b",
        r"(?i)\b(got)(ta)\b",
        r"(?i)\b(lem)(me)\b",
        r"(?i)\b(more)('n)\b",
        r"(?i)\b(wan)(na)(?=\s)",
        r"(?i) ('t)(is)\b",
        r"(?i) ('t)(was)\b",
    )
]


def _tokenize_sentence(text: str) -> list[str]:
    for pattern, repl in _STARTING_QUOTES:
        text = pattern.sub(repl, text)
    for pattern, repl in _PUNCTUATION:
        text = pattern.sub(repl, text)
    for pattern, repl in (_BRACKETS, _DOUBLE_DASH):
        text = pattern.sub(repl, text)
    text = f" {text} "
    for pattern, repl in _ENDING_QUOTES:
        text = pattern.sub(repl, text)
    for pattern in _CONTRACTIONS:
        text = pattern.sub(r" \1 \2 ", text)
    return text.split()


def word_tokens(text: str) -> list[str]:
    """The tokens ``nltk.word_tokenize`` gives: sentences (see :func:`split_sentences`), then NLTK's word
    tokenizer rules on each."""
    return [tok for sentence in split_sentences(text) for tok in _tokenize_sentence(sentence)]


def count_capital_words(text: str) -> int:
    """Number of word tokens in all capitals (``str.isupper``: "I", "NASA", "DON'T" split as "DO" +
    "N'T", "COVID-19")."""
    return sum(1 for tok in word_tokens(text) if tok.isupper())
