"""Policy prompts with verifiable constraints, and a seeded generator of instruction-following prompts.

A `PolicyPrompt` is what a policy is trained on and what its rewards read:

  prompt_id           a unique id
  prompt              the request (for a multi-turn conversation: the last user turn; see `messages`)
  instruction_id_list IFEval instruction ids checked by rules (`judge_rl.evaluation.ifeval.CHECKERS`)
  kwargs              one argument object per instruction, validated by its checker when the prompt is
                      built (stored as the checker's cleaned arguments: None-valued ones dropped)
  rubric              `Criterion`s in the RuscaRL/HealthBench format (criterion text, points, tags);
                      points may be negative (a criterion describing a flaw), never zero
  reference           a reference answer, or None
  soft_constraints    constraints in words for an LLM judge (VerIF's "[llm]" checks); () when none
  messages            the whole conversation (chat messages ending with a user turn) when the prompt is
                      multi-turn, else None (then the conversation is one user turn: `prompt`)
  meta                free-form provenance (generator: base task, split, seed)

The generator (`generate_policy_prompts`) composes one of `BASE_TASKS` (short stories, explanations,
lists, letters, descriptions, advice, poems, comparisons: all written for this module, one sentence, no
commas) with 1 to 3 compatible constraints (`compatible`) drawn from `GENERATED_INSTRUCTION_IDS` (24 of
IFEval's 25 instruction ids: all but `detectable_format:constrained_response`, which needs a yes/no
question; response languages from `LANGUAGES`), each phrased with new wording (`constraint_instruction`). Nothing is
copied from IFEval's 541 prompts (tests/policy/tasks/test_prompts.py checks that no generated prompt equals or
contains one of them, and that no constraint sentence occurs in them).

Its rubric has one positive criterion per constraint (`criterion_text`, a sentence a judge can check;
`CONSTRAINT_POINTS` each, tagged `axis:instruction_following` and `instruction_id:<id>`), one for the
quality of the task itself (`QUALITY_POINTS`, tagged `axis:task_quality`), and, for about half of the
prompts, one negative criterion (`NEGATIVE_CRITERIA`, e.g. padding, -2).

Train and test are disjoint by base task: a task's split is fixed by a hash of its id (`task_split`),
about one task in five is a test task. Generation is deterministic given (n, seed, split, options).
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field
from numbers import Real
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

from judge_rl.evaluation.ifeval import CHECKERS as _IFEVAL_CHECKERS
from judge_rl.evaluation.ifeval.checkers import get_checker

Message = dict[str, str]
Split = Literal["train", "test"]
ROLES = ("system", "user", "assistant")


# --------------------------------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Criterion:
    """One rubric item (RuscaRL/HealthBench): met or not; `points` > 0 rewards, < 0 penalizes (the
    criterion then describes a flaw and is "met" when the response has it)."""

    criterion: str
    points: float
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.criterion, str) or not self.criterion.strip():
            raise ValueError(f"criterion must be a non-empty string, got {self.criterion!r}")
        p = self.points
        if isinstance(p, bool) or not isinstance(p, Real) or not math.isfinite(float(p)) or float(p) == 0.0:
            raise ValueError(f"criterion points must be a finite non-zero number, got {p!r}")
        tags = self.tags
        if isinstance(tags, str) or not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags):
            raise ValueError(f"criterion tags must be a list of strings, got {tags!r}")
        object.__setattr__(self, "points", float(p))
        object.__setattr__(self, "tags", tuple(tags))

    def to_dict(self) -> dict[str, Any]:
        return {"criterion": self.criterion, "points": self.points, "tags": list(self.tags)}


def _check_messages(messages: Any) -> tuple[Message, ...]:
    if not isinstance(messages, (list, tuple)) or not messages:
        raise ValueError("messages must be a non-empty list of {role, content} objects")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or set(m) - {"role", "content"} or "role" not in m or "content" not in m:
            raise ValueError(f"message {i} must be an object with exactly 'role' and 'content'")
        if m["role"] not in ROLES:
            raise ValueError(f"message {i} role must be one of {', '.join(ROLES)}, got {m['role']!r}")
        if not isinstance(m["content"], str) or not m["content"].strip():
            raise ValueError(f"message {i} content must be a non-empty string")
        out.append({"role": m["role"], "content": m["content"]})
    if out[-1]["role"] != "user":
        raise ValueError(f"the last message must be a user turn, got {out[-1]['role']!r}")
    return tuple(out)


@dataclass(frozen=True)
class PolicyPrompt:
    """A training prompt for a policy and everything its rewards need (see the module docstring).
    Built only valid: a bad field raises a one-line ValueError."""

    prompt_id: str
    prompt: str
    instruction_id_list: tuple[str, ...] = ()
    kwargs: tuple[dict[str, Any], ...] = ()
    rubric: tuple[Criterion, ...] = ()
    reference: str | None = None
    soft_constraints: tuple[str, ...] = ()
    messages: tuple[Message, ...] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f"prompt {self.prompt_id!r}: "
        if not isinstance(self.prompt_id, str) or not self.prompt_id.strip():
            raise ValueError(f"prompt_id must be a non-empty string, got {self.prompt_id!r}")
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise ValueError(f"{where}prompt must be a non-empty string")
        ids, kwargs = self.instruction_id_list, self.kwargs
        if isinstance(ids, str) or not isinstance(ids, (list, tuple)):
            raise ValueError(f"{where}instruction_id_list must be a list of instruction ids")
        if not isinstance(kwargs, (list, tuple)) or len(kwargs) != len(ids):
            raise ValueError(f"{where}kwargs must be a list with one object per instruction ({len(ids)})")
        clean = tuple(get_checker(i, where).arguments(k, where) for i, k in zip(ids, kwargs))
        object.__setattr__(self, "instruction_id_list", tuple(ids))
        object.__setattr__(self, "kwargs", clean)
        rubric = self.rubric
        if not isinstance(rubric, (list, tuple)) or not all(isinstance(c, Criterion) for c in rubric):
            raise ValueError(f"{where}rubric must be a list of Criterion")
        object.__setattr__(self, "rubric", tuple(rubric))
        if self.reference is not None and (not isinstance(self.reference, str) or not self.reference.strip()):
            raise ValueError(f"{where}reference must be a non-empty string or None")
        soft = self.soft_constraints
        if isinstance(soft, str) or not isinstance(soft, (list, tuple)):
            raise ValueError(f"{where}soft_constraints must be a list of strings")
        if not all(isinstance(s, str) and s.strip() for s in soft):
            raise ValueError(f"{where}soft_constraints must be non-empty strings")
        object.__setattr__(self, "soft_constraints", tuple(soft))
        if self.messages is not None:
            try:
                messages = _check_messages(self.messages)
            except ValueError as e:
                raise ValueError(f"{where}{e}") from None
            if messages[-1]["content"] != self.prompt:
                raise ValueError(f"{where}prompt must be the content of the last user message")
            object.__setattr__(self, "messages", messages)
        if not isinstance(self.meta, Mapping):
            raise ValueError(f"{where}meta must be an object")

    def chat(self) -> list[Message]:
        """The conversation the policy answers: `messages`, or one user turn holding `prompt`."""
        if self.messages is not None:
            return [dict(m) for m in self.messages]
        return [{"role": "user", "content": self.prompt}]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable form (`from_dict` reads it back; store it as JSON text in parquet, whose
        struct columns would otherwise merge the argument objects)."""
        return {
            "prompt_id": self.prompt_id,
            "prompt": self.prompt,
            "instruction_id_list": list(self.instruction_id_list),
            "kwargs": [dict(k) for k in self.kwargs],
            "rubric": [c.to_dict() for c in self.rubric],
            "reference": self.reference,
            "soft_constraints": list(self.soft_constraints),
            "messages": None if self.messages is None else [dict(m) for m in self.messages],
            "meta": dict(self.meta),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PolicyPrompt":
        """Inverse of `to_dict`; only `prompt_id` and `prompt` are required."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a policy prompt must be an object, got {type(data).__name__}")
        known = {"prompt_id", "prompt", "instruction_id_list", "kwargs", "rubric", "reference",
                 "soft_constraints", "messages", "meta"}  # fmt: skip
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown policy prompt field(s) {', '.join(unknown)}")
        for name in ("prompt_id", "prompt"):
            if name not in data:
                raise ValueError(f"policy prompt is missing {name!r}")
        rubric = data.get("rubric") or []
        if not isinstance(rubric, (list, tuple)):
            raise ValueError("rubric must be a list of {criterion, points, tags} objects")
        return cls(
            prompt_id=data["prompt_id"],
            prompt=data["prompt"],
            instruction_id_list=tuple(data.get("instruction_id_list") or ()),
            kwargs=tuple(data.get("kwargs") or ()),
            rubric=tuple(criterion_from_dict(c) for c in rubric),
            reference=data.get("reference"),
            soft_constraints=tuple(data.get("soft_constraints") or ()),
            messages=data.get("messages"),
            meta=dict(data.get("meta") or {}),
        )


def criterion_from_dict(data: Any) -> Criterion:
    """A Criterion from `{"criterion", "points"[, "tags"]}`; a one-line ValueError otherwise."""
    if not isinstance(data, Mapping):
        raise ValueError(f"a rubric item must be an object with criterion and points, got {data!r}")
    unknown = sorted(set(data) - {"criterion", "points", "tags"})
    if unknown:
        raise ValueError(f"unknown rubric item field(s) {', '.join(unknown)}")
    for name in ("criterion", "points"):
        if name not in data:
            raise ValueError(f"rubric item is missing {name!r}")
    tags = data.get("tags")
    return Criterion(data["criterion"], data["points"], () if tags is None else tags)


# --------------------------------------------------------------------------------------------------
# Base tasks (written for this module; one sentence each, no commas, so a constraint that repeats the
# request or forbids commas never conflicts with the request itself)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BaseTask:
    """A request without constraints; `keywords`: topical words a good answer naturally uses (the
    keyword constraints draw from them)."""

    task_id: str
    text: str
    keywords: tuple[str, ...]

    @property
    def quality_criterion(self) -> str:
        return f'The response carries out the request "{self.text}" well: it is on topic, accurate and complete.'


def _t(task_id: str, text: str, *keywords: str) -> BaseTask:
    return BaseTask(task_id, text, keywords)


BASE_TASKS: tuple[BaseTask, ...] = (
    # stories
    _t("story-lighthouse", "Write a short story about a lighthouse keeper who finds a message in a bottle.",
       "lighthouse", "bottle", "waves"),
    _t("story-robot-garden", "Write a short story about a retired robot that learns to grow tomatoes.",
       "robot", "tomatoes", "garden"),
    _t("story-night-train", "Write a short story about two strangers who share the last seat on a night train.",
       "train", "strangers", "night"),
    _t("story-baker", "Write a short story about a baker whose bread makes people remember their childhood.",
       "bread", "oven", "memory"),
    _t("story-library-map", "Write a short story about a child who discovers a map hidden inside a library book.",
       "map", "library", "treasure"),
    _t("story-snowed-in", "Write a short story about a mountain village cut off by a snowstorm.",
       "snow", "village", "mountain"),
    _t("story-clockmaker", "Write a short story about a clockmaker who can pause time for one minute a day.",
       "clock", "minute", "time"),
    _t("story-lost-dog", "Write a short story about a dog that finds its way home across a busy city.",
       "dog", "city", "home"),
    # explanations
    _t("explain-tides", "Explain why the ocean has tides.", "moon", "gravity", "ocean"),
    _t("explain-vaccines", "Explain how vaccines train the immune system.", "immune", "antibodies", "vaccine"),
    _t("explain-compound-interest",
       "Explain how compound interest works to someone opening their first savings account.",
       "interest", "savings", "growth"),
    _t("explain-photosynthesis", "Explain how plants turn sunlight into food.", "sunlight", "leaves", "energy"),
    _t("explain-rainbows", "Explain why rainbows appear after rain.", "light", "droplets", "colors"),
    _t("explain-encryption", "Explain what public key encryption is and why websites use it.",
       "key", "encryption", "secure"),
    _t("explain-inflation", "Explain what inflation is and why prices rise over time.", "prices", "money", "inflation"),
    _t("explain-seasons", "Explain why Earth has seasons.", "tilt", "sun", "seasons"),
    _t("explain-recycling", "Explain what happens to a plastic bottle after it goes into a recycling bin.",
       "plastic", "recycling", "factory"),
    # lists
    _t("list-houseplants", "List houseplants that survive in low light.", "plant", "light", "water"),
    _t("list-study-habits", "List habits that help students remember what they study.", "study", "memory", "sleep"),
    _t("list-camping", "List what to pack for a weekend camping trip in the mountains.", "tent", "water", "jacket"),
    _t("list-rainy-day", "List activities a family can enjoy indoors on a rainy day.", "family", "games", "rain"),
    _t("list-kitchen-safety", "List basic safety rules for cooking with children.", "kitchen", "knife", "safety"),
    _t("list-interview-questions", "List questions a candidate could ask at the end of a job interview.",
       "team", "role", "interview"),
    _t("list-bird-watching", "List tips for someone starting bird watching.", "birds", "binoculars", "morning"),
    # letters and messages
    _t("letter-neighbor", "Write a letter to a new neighbor inviting them to a street picnic.",
       "neighbor", "picnic", "street"),
    _t("letter-landlord", "Write an email to a landlord asking for a leaking tap to be repaired.",
       "tap", "repair", "leak"),
    _t("letter-teacher", "Write a thank you note to a teacher who helped you learn to read.",
       "teacher", "reading", "thank"),
    _t("letter-council", "Write a message to the town council proposing more bike lanes.", "bike", "council", "lanes"),
    _t("letter-future-self", "Write a letter to yourself to be opened in ten years.", "future", "years", "hope"),
    _t("letter-damaged-parcel", "Write an email to an online shop about a parcel that arrived damaged.",
       "parcel", "refund", "damaged"),
    # descriptions
    _t("describe-market", "Describe a busy morning at an outdoor fruit market.", "fruit", "market", "morning"),
    _t("describe-volcano", "Describe what a visitor sees and hears near an active volcano.",
       "lava", "smoke", "volcano"),
    _t("describe-coral-reef", "Describe life on a coral reef.", "coral", "fish", "reef"),
    _t("describe-old-library", "Describe an old library at closing time.", "books", "shelves", "quiet"),
    _t("describe-space-station", "Describe a typical day for an astronaut on a space station.",
       "astronaut", "station", "orbit"),
    _t("describe-lantern-festival", "Describe a lantern festival on a summer night.", "lanterns", "night", "festival"),
    # advice
    _t("advice-sleep", "Give practical advice for falling asleep more easily.", "sleep", "screen", "routine"),
    _t("advice-student-budget", "Give practical advice for a student making a monthly budget.",
       "budget", "spending", "savings"),
    _t("advice-public-speaking", "Give advice to someone nervous about speaking in public.",
       "audience", "practice", "breathe"),
    _t("advice-first-marathon", "Give advice to someone training for their first marathon.",
       "training", "pace", "rest"),
    _t("advice-adult-language", "Give advice for learning a new language as an adult.",
       "language", "practice", "words"),
    _t("advice-remote-focus", "Give advice for staying focused while working from home.", "focus", "desk", "breaks"),
    # poems
    _t("poem-autumn-morning", "Write a poem about the first cold morning of autumn.", "leaves", "autumn", "frost"),
    _t("poem-city-midnight", "Write a poem about a city after midnight.", "streets", "lights", "midnight"),
    _t("poem-grandmother-kitchen", "Write a poem about the kitchen of a grandmother who loves to cook.",
       "kitchen", "soup", "grandmother"),
    _t("poem-fisherman", "Write a poem about a fisherman waiting for the tide.", "fisherman", "tide", "boat"),
    # comparisons
    _t("compare-train-plane", "Compare traveling by train and by plane for a trip of five hundred kilometers.",
       "train", "plane", "travel"),
    _t("compare-cat-dog", "Compare keeping a cat and keeping a dog in a small apartment.", "cat", "dog", "apartment"),
    _t("compare-paper-ebooks", "Compare reading paper books and electronic books.", "paper", "screen", "reading"),
    _t("compare-rent-buy", "Compare renting a home and buying one for a young couple.", "rent", "mortgage", "home"),
    _t("compare-solar-wind", "Compare solar power and wind power.", "solar", "wind", "energy"),
)  # fmt: skip

TEST_FRACTION_DENOMINATOR = 5  # about 1 task in 5 is a test task


def task_split(task_id: str) -> Split:
    """The split of a base task, fixed by a hash of its id (stable under reordering or new tasks)."""
    digest = hashlib.sha256(f"policy-task:{task_id}".encode()).digest()
    return "test" if int.from_bytes(digest[:8], "big") % TEST_FRACTION_DENOMINATOR == 0 else "train"


def tasks_for(split: Split) -> tuple[BaseTask, ...]:
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    return tuple(t for t in BASE_TASKS if task_split(t.task_id) == split)


# --------------------------------------------------------------------------------------------------
# Constraints: arguments drawn per instruction id, the sentence asking for it, the criterion checking it
# --------------------------------------------------------------------------------------------------

# Words a response can easily avoid; none occurs in a base task (tested), so a repeated request never
# breaks a forbidden-words constraint.
FORBIDDEN_POOL = ("very", "really", "thing", "nice", "just", "basically", "stuff", "amazing", "literally",
                  "actually", "simply", "great")  # fmt: skip
COMMON_LETTERS = ("e", "t", "a", "o", "n", "s", "r")
RARE_LETTERS = ("z", "q", "x", "j")
LANGUAGES = {"de": "German", "fr": "French", "es": "Spanish", "it": "Italian", "pt": "Portuguese"}
END_PHRASES = ("Thank you for reading.", "Those are my thoughts on the matter.", "Until next time.",
               "Happy to expand on any part of this.", "And that is the whole picture.")  # fmt: skip
SECTION_WORDS = ("Part", "Stage", "Chapter", "Step")
FIRST_WORDS = ("Meanwhile", "Finally", "Overall", "Today", "Still", "Later")
POSTSCRIPT_MARKERS = ("P.S.", "P.P.S")


def _relation_phrase(relation: str) -> str:
    return "at least" if relation == "at least" else "fewer than"


def _quoted(words: Sequence[str], joiner: str = "and") -> str:
    quoted = [f"'{w}'" for w in words]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} {joiner} {quoted[-1]}"


def criterion_text(instruction_id: str, kwargs: Mapping[str, Any]) -> str:
    """A sentence a judge can check, saying what following `instruction_id` with `kwargs` means (the
    rubric criterion of a constraint; also used for VerIF rows). The wording follows the checker's
    semantics ("fewer than" for the relation "less than")."""
    k = get_checker(instruction_id).arguments(kwargs)
    rel = _relation_phrase
    texts: dict[str, Callable[[], str]] = {
        "punctuation:no_comma": lambda: "The response contains no commas.",
        "keywords:existence": lambda: f"The response includes the words {_quoted(k['keywords'])}.",
        "keywords:frequency": lambda: (
            f"The word '{k['keyword']}' appears {rel(k['relation'])} {k['frequency']} times in the response."
        ),
        "keywords:forbidden_words": lambda: (
            f"The response never uses the words {_quoted(k['forbidden_words'], 'or')}."
        ),
        "keywords:letter_frequency": lambda: (
            f"The letter '{k['letter']}' appears {rel(k['let_relation'])} {k['let_frequency']} times "
            "(upper or lower case)."
        ),
        "language:response_language": lambda: (
            f"The whole response is written in {LANGUAGES.get(k['language'], k['language'])}."
        ),
        "change_case:english_capital": lambda: "The whole response is in English and in capital letters only.",
        "change_case:english_lowercase": lambda: "The whole response is in English and has no capital letters.",
        "change_case:capital_word_frequency": lambda: (
            f"{rel(k['capital_relation']).capitalize()} {k['capital_frequency']} words are written entirely "
            "in capital letters."
        ),
        "length_constraints:number_words": lambda: (
            f"The response is {rel(k['relation'])} {k['num_words']} words long."
        ),
        "length_constraints:number_sentences": lambda: (
            f"The response has {rel(k['relation'])} {k['num_sentences']} sentences."
        ),
        "length_constraints:number_paragraphs": lambda: (
            f"The response has exactly {k['num_paragraphs']} paragraphs separated by *** divider lines."
        ),
        "length_constraints:nth_paragraph_first_word": lambda: (
            f"The response has exactly {k['num_paragraphs']} paragraphs separated by blank lines, and paragraph "
            f"{k['nth_paragraph']} begins with the word '{k['first_word']}'."
        ),
        "detectable_content:number_placeholders": lambda: (
            f"The response contains at least {k['num_placeholders']} placeholders in square brackets."
        ),
        "detectable_content:postscript": lambda: (
            f"The response contains a postscript (a note after the main text) beginning with {k['postscript_marker']}"
            + ("" if k["postscript_marker"].endswith(".") else ".")
        ),
        "detectable_format:constrained_response": lambda: (
            "The response contains one of: 'My answer is yes.', 'My answer is no.', 'My answer is maybe.'."
        ),
        "detectable_format:json_format": lambda: "The entire response is valid JSON (a code fence around it is fine).",
        "detectable_format:multiple_sections": lambda: (
            f"The response has at least {k['num_sections']} sections headed '{k['section_spliter']} 1', "
            f"'{k['section_spliter']} 2' and so on."
        ),
        "detectable_format:number_bullet_lists": lambda: (
            f"The response has exactly {k['num_bullets']} markdown bullet points."
        ),
        "detectable_format:number_highlighted_sections": lambda: (
            f"The response emphasizes at least {k['num_highlights']} passages with markdown asterisks."
        ),
        "detectable_format:title": lambda: "The response has a title in double angle brackets, such as <<Title>>.",
        "combination:two_responses": lambda: (
            "The response gives two different answers separated by a line of six asterisks (******)."
        ),
        "combination:repeat_prompt": lambda: (
            f'The response begins by repeating the request "{k["prompt_to_repeat"]}" word for word.'
        ),
        "startend:end_checker": lambda: f"The response ends with the exact phrase '{k['end_phrase']}'.",
        "startend:quotation": lambda: "The entire response is enclosed in double quotation marks.",
    }
    return texts[instruction_id]()


@dataclass(frozen=True)
class Constraint:
    instruction_id: str
    kwargs: dict[str, Any]
    instruction: str  # the sentence added to the prompt


def _pick(rng: random.Random, options: Sequence[Any]) -> Any:
    return options[rng.randrange(len(options))]


def _draw_kwargs(instruction_id: str, rng: random.Random, task: BaseTask) -> dict[str, Any]:
    """Arguments for `instruction_id`, drawn from ranges a response to `task` can meet."""
    rel = lambda: _pick(rng, ("at least", "less than"))  # noqa: E731
    if instruction_id in ("punctuation:no_comma", "change_case:english_capital", "change_case:english_lowercase",
                          "detectable_format:json_format", "detectable_format:title", "combination:two_responses",
                          "startend:quotation", "detectable_format:constrained_response"):  # fmt: skip
        return {}
    if instruction_id == "keywords:existence":
        return {"keywords": rng.sample(list(task.keywords), 2)}
    if instruction_id == "keywords:frequency":
        relation = rel()
        frequency = rng.randint(2, 4) if relation == "at least" else rng.randint(3, 5)
        return {"keyword": _pick(rng, task.keywords), "frequency": frequency, "relation": relation}
    if instruction_id == "keywords:forbidden_words":
        return {"forbidden_words": rng.sample(list(FORBIDDEN_POOL), rng.randint(2, 3))}
    if instruction_id == "keywords:letter_frequency":
        if rng.random() < 0.5:
            letter = _pick(rng, COMMON_LETTERS)
            return {"letter": letter, "let_frequency": rng.randint(10, 30), "let_relation": "at least"}
        used = (task.text + " ".join(task.keywords)).lower()
        letters = [c for c in RARE_LETTERS if c not in used] or list(RARE_LETTERS)
        return {"letter": _pick(rng, letters), "let_frequency": rng.randint(3, 6), "let_relation": "less than"}
    if instruction_id == "language:response_language":
        return {"language": _pick(rng, sorted(LANGUAGES))}
    if instruction_id == "change_case:capital_word_frequency":
        relation = rel()
        frequency = rng.randint(2, 6) if relation == "at least" else rng.randint(3, 10)
        return {"capital_frequency": frequency, "capital_relation": relation}
    if instruction_id == "length_constraints:number_words":
        relation = rel()
        n = rng.randrange(50, 210, 10) if relation == "at least" else rng.randrange(100, 320, 20)
        return {"num_words": n, "relation": relation}
    if instruction_id == "length_constraints:number_sentences":
        relation = rel()
        n = rng.randint(3, 8) if relation == "at least" else rng.randint(4, 12)
        return {"num_sentences": n, "relation": relation}
    if instruction_id == "length_constraints:number_paragraphs":
        return {"num_paragraphs": rng.randint(2, 5)}
    if instruction_id == "length_constraints:nth_paragraph_first_word":
        n = rng.randint(2, 5)
        return {"num_paragraphs": n, "nth_paragraph": rng.randint(1, n), "first_word": _pick(rng, FIRST_WORDS).lower()}
    if instruction_id == "detectable_content:number_placeholders":
        return {"num_placeholders": rng.randint(1, 4)}
    if instruction_id == "detectable_content:postscript":
        return {"postscript_marker": _pick(rng, POSTSCRIPT_MARKERS)}
    if instruction_id == "detectable_format:multiple_sections":
        return {"section_spliter": _pick(rng, SECTION_WORDS), "num_sections": rng.randint(2, 5)}
    if instruction_id == "detectable_format:number_bullet_lists":
        return {"num_bullets": rng.randint(3, 6)}
    if instruction_id == "detectable_format:number_highlighted_sections":
        return {"num_highlights": rng.randint(1, 4)}
    if instruction_id == "combination:repeat_prompt":
        return {"prompt_to_repeat": task.text}
    if instruction_id == "startend:end_checker":
        return {"end_phrase": _pick(rng, END_PHRASES)}
    raise ValueError(f"no generator for instruction id {instruction_id!r}")


def constraint_instruction(instruction_id: str, kwargs: Mapping[str, Any], variant: int = 0) -> str:
    """The sentence asking for `instruction_id` with `kwargs` in a generated prompt (new wording, two
    variants for most ids; `variant` is taken modulo the number of variants)."""
    k = dict(kwargs)
    rel = _relation_phrase
    options: dict[str, Callable[[], tuple[str, ...]]] = {
        "punctuation:no_comma": lambda: (
            "Do not put a single comma anywhere in what you write.",
            "Leave out commas completely; not one may appear.",
        ),
        "keywords:existence": lambda: (
            f"Work the words {_quoted(k['keywords'])} into your answer.",
            f"Somewhere in the text make use of the words {_quoted(k['keywords'])}.",
        ),
        "keywords:frequency": lambda: (
            f"Mention the word '{k['keyword']}' {rel(k['relation'])} {k['frequency']} times.",
            f"The word '{k['keyword']}' has to come up {rel(k['relation'])} {k['frequency']} times.",
        ),
        "keywords:forbidden_words": lambda: (
            f"Stay away from the words {_quoted(k['forbidden_words'], 'and')}; none of them may appear.",
            f"Never write the words {_quoted(k['forbidden_words'], 'or')}.",
        ),
        "keywords:letter_frequency": lambda: (
            f"Make sure the letter '{k['letter']}' turns up {rel(k['let_relation'])} {k['let_frequency']} times "
            "(capital or small).",
            f"Count your letters: '{k['letter']}' should occur {rel(k['let_relation'])} {k['let_frequency']} times.",
        ),
        "language:response_language": lambda: (
            f"Reply only in {LANGUAGES[k['language']]}; no other language should appear.",
            f"Compose everything in {LANGUAGES[k['language']]} and nothing in any other language.",
        ),
        "change_case:english_capital": lambda: (
            "Type the whole answer in English using UPPERCASE letters only.",
            "Write in English and put every single letter in upper case.",
        ),
        "change_case:english_lowercase": lambda: (
            "Type the whole answer in English using lowercase letters only; no capitals anywhere.",
            "Write in English and keep every letter small: not one capital letter.",
        ),
        "change_case:capital_word_frequency": lambda: (
            f"Use {rel(k['capital_relation'])} {k['capital_frequency']} words written entirely in capitals.",
            f"Words spelled in FULL CAPITALS should number {rel(k['capital_relation'])} {k['capital_frequency']}.",
        ),
        "length_constraints:number_words": lambda: (
            (f"Make the reply at least {k['num_words']} words long.",
             f"Aim for a length of no less than {k['num_words']} words.")
            if k["relation"] == "at least"
            else (f"Keep the reply under {k['num_words']} words.",
                  f"Stay below {k['num_words']} words in total.")
        ),  # fmt: skip
        "length_constraints:number_sentences": lambda: (
            (f"Write no fewer than {k['num_sentences']} sentences.",
             f"Your reply needs {k['num_sentences']} sentences or more.")
            if k["relation"] == "at least"
            else (f"Use fewer than {k['num_sentences']} sentences in total.",
                  f"Keep the sentence count below {k['num_sentences']}.")
        ),  # fmt: skip
        "length_constraints:number_paragraphs": lambda: (
            f"Divide the answer into exactly {k['num_paragraphs']} paragraphs and put a line holding only *** "
            "between consecutive paragraphs.",
            f"Give exactly {k['num_paragraphs']} paragraphs; mark each break between them with the divider ***.",
        ),
        "length_constraints:nth_paragraph_first_word": lambda: (
            f"Write exactly {k['num_paragraphs']} paragraphs divided by blank lines; paragraph "
            f"{k['nth_paragraph']} has to open with the word '{k['first_word']}'.",
            f"Use {k['num_paragraphs']} paragraphs exactly (a blank line between each) and let paragraph number "
            f"{k['nth_paragraph']} start with '{k['first_word']}'.",
        ),
        "detectable_content:number_placeholders": lambda: (
            f"Leave at least {k['num_placeholders']} blanks for the reader to fill in, written in square brackets "
            "such as [city].",
            f"Put in {k['num_placeholders']} or more fill-in fields in square brackets like [date].",
        ),
        "detectable_content:postscript": lambda: tuple(
            sentence + ("" if k["postscript_marker"].endswith(".") else ".")
            for sentence in (
                f"Close with an afterthought that begins with {k['postscript_marker']}",
                f"After the main text add a short note starting with {k['postscript_marker']}",
            )
        ),
        "detectable_format:constrained_response": lambda: (
            "Settle it with one of these exact sentences: My answer is yes. / My answer is no. / My answer is maybe.",
        ),
        "detectable_format:json_format": lambda: (
            "Return the whole answer as valid JSON and nothing else (a markdown code fence around it is allowed).",
            "Everything you output must parse as JSON; a code fence around it is fine.",
        ),
        "detectable_format:multiple_sections": lambda: (
            f"Organize the answer into {k['num_sections']} parts headed {k['section_spliter']} 1, "
            f"{k['section_spliter']} 2 and so on.",
            f"Break the text into {k['num_sections']} labelled blocks; label them {k['section_spliter']} 1 "
            f"through {k['section_spliter']} {k['num_sections']}.",
        ),
        "detectable_format:number_bullet_lists": lambda: (
            f"Lay out the answer as exactly {k['num_bullets']} markdown bullets (lines starting with '* ') and "
            "no other lines starting with * or -.",
            f"Present it as a bulleted list of precisely {k['num_bullets']} items using '* ' and no further bullets.",
        ),
        "detectable_format:number_highlighted_sections": lambda: (
            f"Emphasize at least {k['num_highlights']} key phrases with markdown italics like *this phrase*.",
            f"Mark {k['num_highlights']} or more important passages by surrounding them with single asterisks.",
        ),
        "detectable_format:title": lambda: (
            "Put a title at the top inside double angle brackets, for example <<A Quiet Harbor>>.",
            "Start with a heading enclosed in double angle brackets like <<Morning Light>>.",
        ),
        "combination:two_responses": lambda: (
            "Offer two distinct versions of your answer and separate them with a line of six asterisks (******).",
            "Draft two different answers; between them place the separator ****** and nothing else.",
        ),
        "combination:repeat_prompt": lambda: (
            "Begin by copying the first sentence of this message exactly as written and then give your answer.",
            "Open with a word-for-word copy of the first sentence of this message before you respond to it.",
        ),
        "startend:end_checker": lambda: (
            f"The very last words of your reply must be: {k['end_phrase']}",
            f"Finish the text with this exact sentence and add nothing after it: {k['end_phrase']}",
        ),
        "startend:quotation": lambda: (
            "Enclose the entire reply in one pair of double quotation marks.",
            'Put a " at the very start and a " at the very end of everything you write.',
        ),
    }
    variants = options[instruction_id]()
    return variants[variant % len(variants)]


def make_constraint(instruction_id: str, rng: random.Random, task: BaseTask) -> Constraint:
    kwargs = _draw_kwargs(instruction_id, rng, task)
    get_checker(instruction_id).arguments(kwargs)  # generator bug guard
    return Constraint(instruction_id, kwargs, constraint_instruction(instruction_id, kwargs, rng.randrange(2)))


# Which constraints can go together. Ids in one group exclude each other; `_ALONE_WITH` lists what JSON
# output tolerates; `_PAIRS` are further single exclusions.
_GROUPS: tuple[frozenset[str], ...] = tuple(
    frozenset(g)
    for g in (
        # letter case and language
        {"change_case:english_capital", "change_case:english_lowercase", "change_case:capital_word_frequency",
         "language:response_language"},
        # layout of the whole reply
        {"length_constraints:number_paragraphs", "length_constraints:nth_paragraph_first_word",
         "detectable_format:number_bullet_lists", "detectable_format:multiple_sections",
         "detectable_format:json_format", "combination:two_responses"},
        # what wraps or opens the reply
        {"detectable_format:json_format", "startend:quotation", "combination:two_responses",
         "combination:repeat_prompt"},
        # what ends the reply
        {"startend:end_checker", "detectable_content:postscript", "startend:quotation",
         "detectable_format:json_format", "combination:two_responses"},
        # English words required vs another language
        {"language:response_language", "keywords:existence"},
        {"language:response_language", "keywords:frequency"},
        {"language:response_language", "keywords:letter_frequency"},
        {"language:response_language", "startend:end_checker"},
        {"language:response_language", "combination:repeat_prompt"},
        {"language:response_language", "length_constraints:nth_paragraph_first_word"},
    )
)  # fmt: skip
_PAIRS: tuple[frozenset[str], ...] = tuple(
    frozenset(p)
    for p in (
        # a line starting with *italics* counts as a bullet
        ("detectable_format:number_highlighted_sections", "detectable_format:number_bullet_lists"),
        # section headers are case-sensitive ("Part"), so all-capital or all-lowercase text cannot have them
        ("detectable_format:multiple_sections", "change_case:english_capital"),
        ("detectable_format:multiple_sections", "change_case:english_lowercase"),
        # "P.S." and a repeated request have capitals
        ("detectable_content:postscript", "change_case:english_lowercase"),
        ("combination:repeat_prompt", "change_case:english_lowercase"),
        # "copy the request exactly" read against "all capitals"
        ("combination:repeat_prompt", "change_case:english_capital"),
        # the repeated request would count towards the letter and the first paragraph
        ("combination:repeat_prompt", "keywords:letter_frequency"),
        ("combination:repeat_prompt", "length_constraints:nth_paragraph_first_word"),
        # a title goes at the top: before the repeated request, inside the first paragraph
        ("detectable_format:title", "combination:repeat_prompt"),
        ("detectable_format:title", "length_constraints:nth_paragraph_first_word"),
        # an opening quote mark hides the first bullet
        ("detectable_format:number_bullet_lists", "startend:quotation"),
    )
)
_JSON_TOLERATES = frozenset({"keywords:existence", "keywords:frequency", "keywords:forbidden_words",
                             "keywords:letter_frequency", "length_constraints:number_words",
                             "detectable_content:number_placeholders"})  # fmt: skip


def compatible(a: str, b: str) -> bool:
    """Whether constraints `a` and `b` can both be asked of one response (the same id never is)."""
    if a == b:
        return False
    pair = frozenset((a, b))
    if any(pair <= g for g in _GROUPS) or pair in _PAIRS:
        return False
    json = "detectable_format:json_format"
    if json in pair:
        other = b if a == json else a
        return other in _JSON_TOLERATES
    return True


# every IFEval type but constrained_response, which needs a yes/no question the base tasks do not ask
GENERATED_INSTRUCTION_IDS: tuple[str, ...] = tuple(
    sorted(i for i in _IFEVAL_CHECKERS if i != "detectable_format:constrained_response")
)

CONSTRAINT_POINTS = 2.0
QUALITY_POINTS = 3.0
NEGATIVE_CRITERIA: tuple[tuple[str, float], ...] = (
    ("The response is padded with filler or with text unrelated to the request.", -2.0),
    ("The response talks about the formatting rules it was given instead of simply following them.", -1.0),
)
NEGATIVE_PROBABILITY = 0.5
CONSTRAINT_COUNT_WEIGHTS = {1: 3, 2: 4, 3: 3}  # relative odds of a prompt's number of constraints (others: 1)


def build_rubric(
    task: BaseTask, constraints: Sequence[Constraint], negative: tuple[str, float] | None
) -> tuple[Criterion, ...]:
    """One criterion per constraint, one for the task's quality, then the negative criterion if any."""
    rubric = [
        Criterion(criterion_text(c.instruction_id, c.kwargs), CONSTRAINT_POINTS,
                  ("axis:instruction_following", f"instruction_id:{c.instruction_id}"))
        for c in constraints
    ]  # fmt: skip
    rubric.append(Criterion(task.quality_criterion, QUALITY_POINTS, ("axis:task_quality",)))
    if negative is not None:
        rubric.append(Criterion(negative[0], negative[1], ("axis:negative",)))
    return tuple(rubric)


def _draw_constraints(rng: random.Random, task: BaseTask, pool: Sequence[str], count: int) -> list[Constraint]:
    order = list(pool)
    rng.shuffle(order)
    chosen: list[str] = []
    for instruction_id in order:
        if len(chosen) == count:
            break
        if all(compatible(instruction_id, other) for other in chosen):
            chosen.append(instruction_id)
    return [make_constraint(i, rng, task) for i in chosen]


def generate_policy_prompts(
    n: int,
    seed: int = 0,
    split: Split = "train",
    *,
    instruction_ids: Iterable[str] | None = None,
    min_constraints: int = 1,
    max_constraints: int = 3,
) -> list[PolicyPrompt]:
    """`n` prompts on the base tasks of `split`, deterministic given the arguments.

    instruction_ids: the constraint types to draw from (default `GENERATED_INSTRUCTION_IDS`);
    a prompt gets between `min_constraints` and `max_constraints` mutually compatible constraints
    (fewer when `instruction_ids` cannot supply that many compatible ones; always at least one).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    if not 1 <= min_constraints <= max_constraints:
        raise ValueError(f"need 1 <= min_constraints <= max_constraints, got {min_constraints}, {max_constraints}")
    pool = list(GENERATED_INSTRUCTION_IDS if instruction_ids is None else instruction_ids)
    if not pool:
        raise ValueError("instruction_ids must not be empty")
    for instruction_id in pool:
        if instruction_id not in GENERATED_INSTRUCTION_IDS:
            raise ValueError(
                f"instruction id {instruction_id!r} is not generated; "
                f"choose from {', '.join(GENERATED_INSTRUCTION_IDS)}"
            )
    tasks = tasks_for(split)
    # a fixed label (this module's name when it was written): the prompts stay the same
    rng = random.Random(f"judge_rl.policy.data:{split}:{seed}")
    counts = list(range(min_constraints, max_constraints + 1))
    weights = [CONSTRAINT_COUNT_WEIGHTS.get(c, 1) for c in counts]
    prompts = []
    for i in range(n):
        task = _pick(rng, tasks)
        count = rng.choices(counts, weights)[0]
        constraints = _draw_constraints(rng, task, pool, count)
        negative = _pick(rng, NEGATIVE_CRITERIA) if rng.random() < NEGATIVE_PROBABILITY else None
        text = " ".join([task.text, *(c.instruction for c in constraints)])
        prompts.append(
            PolicyPrompt(
                prompt_id=f"ifgen-{split}-s{seed}-{i:06d}",
                prompt=text,
                instruction_id_list=tuple(c.instruction_id for c in constraints),
                kwargs=tuple(c.kwargs for c in constraints),
                rubric=build_rubric(task, constraints, negative),
                reference=None,
                meta={"generator": "judge_rl.policy.tasks.prompts", "task_id": task.task_id, "split": split, "seed": seed},
            )
        )
    return prompts
