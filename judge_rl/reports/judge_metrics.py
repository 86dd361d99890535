"""Judge-bias metrics of one RL step, from the `compute_score` dicts of its sampled rollouts.

`verdict_metrics(rewards)` reads the verdicts a step's samples gave (see `judge_rl.rewards.base` for the
keys each reward returns) and names what they say about the judge's biases, under `judge/` (verl's
slash-grouped style, so W&B puts them in one panel section):

  judge/a_preference              share of parsed pairwise verdicts naming Response (a) (a well-formed
                                  tie counts as parsed, not (a)): 0.5 is unbiased on balanced positions
  judge/tie_rate                  share of parsed pairwise verdicts that are ties (JudgeLRM's equal scores)
  judge/strength/mean, /std       predicted strength (1..3) over the parsed verdicts that carry one
  judge/strength_hist/<k>         share of those verdicts with strength k, for every k in 1..3
  judge/margin/mean               predicted score gap (margin, judgelrm rewards), over parsed verdicts
  judge/score/mean, /std          pointwise predicted score (0..4) over parsed predictions
  judge/score_hist/<k>            share of parsed pointwise predictions scoring k, for every k in 0..4
  judge/parse_failure/<reason>    share of all samples that failed to parse for that reason (the reason
                                  slugged: "missing <think> block" -> missing_think_block); the rates sum
                                  to `reward/parse_failure_rate`. A reason absent from a step is 0.

A metric with nothing to average in this step (no parsed verdict, a prompt without strengths) is left
out rather than logged as 0 or NaN. Missing keys are tolerated: a dict without `pred_winner` is not a
pairwise verdict, a value of -1 / "" / None means "not available".
"""

from __future__ import annotations

import math
import re
from collections import Counter
from numbers import Real
from typing import Any, Iterable, Mapping

from judge_rl.prompts.openjudge import POINTWISE_SCORES
from judge_rl.prompts.strength import STRENGTHS

UNKNOWN_REASON = "unknown"


def reason_slug(reason: str) -> str:
    """A parse-failure reason as one metric-name segment: lower case, runs of anything else than
    letters and digits turned into one underscore (no "/" left to split a W&B section)."""
    slug = re.sub(r"[^a-z0-9]+", "_", str(reason).lower()).strip("_")
    return slug or UNKNOWN_REASON


def _number(value: Any) -> float | None:
    """A usable numeric prediction: a finite real that is not a bool and not the -1 "not available" mark."""
    if value is None or isinstance(value, bool) or not isinstance(value, Real):
        return None
    x = float(value)
    if not math.isfinite(x) or x == -1:
        return None
    return x


def _failure_reason(r: Mapping[str, Any]) -> str | None:
    """Why a sample did not parse, or None when it parsed."""
    error = r.get("parse_error")
    if error:
        return str(error)
    format_ok = r.get("format_ok")
    if isinstance(format_ok, Real) and not isinstance(format_ok, bool) and float(format_ok) == 0.0 and error is None:
        return UNKNOWN_REASON  # a reward without parse_error that says the format failed
    return None


def _mean_std(xs: list[float]) -> tuple[float, float]:
    mean = sum(xs) / len(xs)
    return mean, math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs))


def _histogram(prefix: str, values: list[float], support: Iterable[int]) -> dict[str, float]:
    counts = Counter(int(v) for v in values if float(v).is_integer())
    return {f"{prefix}/{k}": counts.get(k, 0) / len(values) for k in support}


def verdict_metrics(rewards: list[dict[str, Any]]) -> dict[str, float]:
    """Judge-bias metrics of one step's `compute_score` dicts (module docstring); {} for no samples."""
    rewards = [r for r in rewards if isinstance(r, Mapping)]
    if not rewards:
        return {}
    m: dict[str, float] = {}

    reasons = Counter(reason_slug(reason) for r in rewards if (reason := _failure_reason(r)) is not None)
    for slug, n in sorted(reasons.items()):
        m[f"judge/parse_failure/{slug}"] = n / len(rewards)

    parsed = [r for r in rewards if _failure_reason(r) is None]

    # pairwise verdicts: pred_winner "a" / "b" / "tie" ("" or missing: no verdict)
    winners = [str(r["pred_winner"]) for r in parsed if r.get("pred_winner") in ("a", "b", "tie")]
    if winners:
        m["judge/a_preference"] = winners.count("a") / len(winners)
        m["judge/tie_rate"] = winners.count("tie") / len(winners)
    pairwise = [r for r in parsed if "pred_winner" in r]
    strengths = [x for r in pairwise if (x := _number(r.get("pred_strength"))) is not None]
    if strengths:
        m["judge/strength/mean"], m["judge/strength/std"] = _mean_std(strengths)
        m.update(_histogram("judge/strength_hist", strengths, STRENGTHS))
    margins = [x for r in pairwise if (x := _number(r.get("pred_margin"))) is not None]
    if margins:
        m["judge/margin/mean"] = sum(margins) / len(margins)

    # pointwise predictions: pred_score 0..4 (-1: no score)
    scores = [x for r in parsed if "pred_winner" not in r and (x := _number(r.get("pred_score"))) is not None]
    if scores:
        m["judge/score/mean"], m["judge/score/std"] = _mean_std(scores)
        m.update(_histogram("judge/score_hist", scores, POINTWISE_SCORES))
    return m
