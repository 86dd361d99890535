"""Language identification for the IFEval checkers: `langdetect`, as the official checkers use it, offline.

`langdetect` (a port of Google's language-detection library, Apache-2.0) ships its 55 language profiles
inside the package and never touches the network. The official checkers call ``langdetect.detect``,
whose answer is random for short or mixed texts unless a seed is set (it samples n-grams); here a
private detector factory with seed 0 makes every answer reproducible without changing langdetect's
global state. A text with no letters makes langdetect raise; the official checkers then count the
instruction as followed, and so does :func:`detect_language` by returning None.
"""

from __future__ import annotations

from functools import lru_cache

SEED = 0


@lru_cache(maxsize=1)
def _factory():
    try:
        from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory
    except ImportError as e:  # pragma: no cover - langdetect is a declared dependency
        raise ImportError(
            "IFEval language checks (language:response_language, change_case:english_capital, "
            "change_case:english_lowercase) need `langdetect`: pip install langdetect"
        ) from e
    factory = DetectorFactory()
    factory.load_profile(PROFILES_DIRECTORY)
    factory.set_seed(SEED)  # on this instance only, not langdetect's global factory
    return factory


def detect_language(text: str) -> str | None:
    """The ISO 639-1 code langdetect gives `text` ("en", "de", "zh-cn", ...), or None where it cannot
    tell (no letters)."""
    from langdetect.lang_detect_exception import LangDetectException

    detector = _factory().create()
    detector.append(text)
    try:
        return detector.detect()
    except LangDetectException:
        return None


def supported_languages() -> list[str]:
    return sorted(_factory().get_lang_list())
