"""IFEval (Zhou et al. 2023, "Instruction-Following Evaluation for Large Language Models"), offline.

What is implemented
- `CHECKERS` (checkers.py): the 25 instruction ids of the published 541 prompts, each a named, tested
  function `CHECKERS[id](response, **kwargs) -> bool` taking the official argument names
  (`num_words`, `relation`, `let_frequency`, ...) with the semantics of google-research's
  `instruction_following_eval/instructions.py` ("less than": count < N; "at least": count >= N; exact
  counts where the official check is exact). This is an independent implementation of those documented
  semantics, not a copy of that code; nothing from the data is executed (keywords, section splitters
  and postscript markers are used as regular expressions, as the official checks use them).
  An unknown instruction id or bad arguments raise a one-line ValueError naming the prompt key and the
  instruction; where the official code would silently draw a random argument, this raises too.
- Strict and loose evaluation (scoring.py) exactly as `evaluation_lib.py`: loose tries eight variants of
  the response (as is, without its first line, its last line, both; each also with `*` removed) and
  an instruction is followed if any non-blank variant passes; a blank response follows nothing.
- `load_ifeval(path, limit=None)`, `score(prompts, responses)`: prompt-level and instruction-level
  strict and loose accuracy, counts, per-instruction-id and per-category accuracy, and one record per
  prompt (what each checker said), so a caller can save records and resume (`score(..., previous=)`,
  or `evaluate_prompt` + `aggregate`).

Where scores can differ from the official ones, and why
(the official checkers depend on NLTK data that is downloaded at run time, and on the NLTK release;
the reference here is NLTK 3.9.1, the first release with the punkt_tab data that current IFEval
harnesses download; 3.8.1, current at publication, tokenizes the same but for one whitespace detail;
see text.py)
- Word counts (`length_constraints:number_words`): none. The official count is NLTK's
  `RegexpTokenizer(r"\\w+")`, i.e. the number of `\\w+` runs, which is what `text.count_words` does.
  (NLTK >= 3.10.3 compiles it with the `regex` engine, whose `\\w` also takes combining marks: a Hindi
  or Thai word counts once there and as several pieces here and with every earlier NLTK.)
- Sentence counts (`length_constraints:number_sentences`): the official count uses NLTK's Punkt
  tokenizer with its trained English model, which cannot be had offline. `text.count_sentences` runs
  the same Punkt decision procedure (identical sentence spans to NLTK 3.9.1's `PunktSentenceTokenizer`
  given the same parameters, on the 541 prompts and 20,000 generated texts) with hand-written
  parameters: common English abbreviations and common sentence-starting words, no collocations. Counts
  can differ only around a period after a word one model reads as an abbreviation and the other does
  not, an ellipsis or an initial followed by a capitalized word, and the trained model's collocations.
  Both count a numbered list's "1." before a capitalized word as a sentence and never break at a bare
  newline.
- All-capital word counts (`change_case:capital_word_frequency`): the official count is over
  `nltk.word_tokenize` tokens (Punkt English sentences, then NLTK's word tokenizer rules). The rules are
  reproduced (token for token against NLTK 3.9.1); the count depends on the sentence split only in
  that a clitic ("'S", "N'T", "'M") is split off before a sentence-final period, so it can differ only
  where the sentence split does (or with NLTK >= 3.9.4, which also splits at em and en dashes:
  "WORLD—WIDE" is two capital words there, one here).
- Language (`language:response_language`, and the English test inside `change_case:english_capital`
  and `change_case:english_lowercase`): `langdetect`, as in the official code, fully offline (its
  profiles ship with the package). langdetect samples n-grams at random, so the official answer for a
  short or mixed-language text can change from run to run; here the seed is fixed (0), on a private
  detector, so scores are reproducible. An undetectable text (no letters) counts as followed, as in
  the official code.
- `keywords:letter_frequency` takes any single character, as the current google-research code does
  (the data asks for "#" and "!"); the josejg/instruction_following_eval repackaging (the source of the
  shared data file) replaces a non-letter by a random letter instead.
- Arguments whose value is None are ignored, so the Hugging Face copy of the data (which lists every
  argument as null where unused) loads too.

Verification: with the Punkt parameters made equal (the official `count_sentences` and
`nltk.word_tokenize` given this module's abbreviations and sentence starters) and langdetect seeded
alike, the official checkers and evaluation loop (google-research semantics) and this module agree on
all 53,376 strict and loose instruction results of 17,312 responses (the 541 prompts, echoed, empty,
and 30 random responses each built from fragments that hit every checker) under NLTK 3.9.1.
"""

from judge_rl.evaluation.ifeval.checkers import CHECKERS, INSTRUCTION_IDS, RELATIONS, Checker, get_checker
from judge_rl.evaluation.ifeval.scoring import (
    LOOSE_VARIANTS,
    IFEvalPrompt,
    aggregate,
    evaluate_prompt,
    load_ifeval,
    loose_variants,
    make_prompt,
    response_for,
    score,
)

__all__ = [
    "CHECKERS",
    "INSTRUCTION_IDS",
    "LOOSE_VARIANTS",
    "RELATIONS",
    "Checker",
    "IFEvalPrompt",
    "aggregate",
    "evaluate_prompt",
    "get_checker",
    "load_ifeval",
    "loose_variants",
    "make_prompt",
    "response_for",
    "score",
]
