"""How far a judge's reward is from the rule ground truth, per step (where IFEval-style checkers exist).

The research question of the policy job is how much of a policy's gain is real and how much pleases the
judge. Where a prompt's constraints have rule checkers, the checkers are ground truth for those
constraints, and three numbers say how the judge departs from them:

  bias/judge_fp_rate       of the rubric criteria tied to one instruction whose checker says *not*
                           followed, the share the judge called met (the judge is fooled)
  bias/judge_fn_rate       of those whose checker says followed, the share the judge called not met
  bias/judge_agreement     the share of all such criteria where judge and checker agree
  bias/n_checked           how many such criteria the step had (rates are NaN without any)
  bias/length_corr         Pearson correlation of the reward with the response length *at fixed checker
                           outcome*: samples are grouped by their rule score (the share of instructions
                           followed), reward and length are centred within each group, and the centred
                           values are correlated over all groups. A judge that pays for length shows it
                           here even when longer answers also follow more rules. NaN when no group has two
                           samples that differ in both.
  bias/reward_minus_rule   mean reward minus mean rule score over the graded samples with checkers: the
                           judge reward's gap to the judge-free rule reward
  bias/reward_mean, bias/rule_mean, bias/n_samples   the means behind it and how many samples
  bias/judge_rule_disagree a pairwise judge: of the comparisons both the checkers (the two answers' rule scores
                           differ) and the judge (a reward other than 0.5) decide, the share where the judge prefers
                           the answer the checkers rank lower; bias/n_compared counts them

The rule score of a generated prompt (one with a base task) is the task's true score: no instruction counts as
followed where the response fails the guard of judge_rl/policy/tasks/guard.py (too short, a loop, off topic).

Failed samples (no reward) are left out of everything but the criteria their parsed calls graded.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Sequence

from judge_rl.policy.grading import Graded

NAN = float("nan")


def _pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    n = len(xs)
    if n < 2:
        return NAN
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return NAN
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / math.sqrt(sxx * syy)


def length_correlation(rewards: Sequence[float], lengths: Sequence[float], strata: Sequence[object]) -> float:
    """Pearson correlation of reward and length after centring both within each stratum (module docstring)."""
    groups: dict[object, list[int]] = defaultdict(list)
    for i, s in enumerate(strata):
        groups[s].append(i)
    xs: list[float] = []
    ys: list[float] = []
    for idx in groups.values():
        if len(idx) < 2:
            continue
        mr = sum(rewards[i] for i in idx) / len(idx)
        ml = sum(lengths[i] for i in idx) / len(idx)
        xs += [rewards[i] - mr for i in idx]
        ys += [lengths[i] - ml for i in idx]
    # centred values have mean 0 in each group, so the pooled Pearson is the within-group correlation
    return _pearson(xs, ys)


def bias_metrics(graded: Sequence[Graded], lengths: Sequence[float]) -> dict[str, float]:
    """The step's bias metrics (module docstring) from its graded samples and their response lengths."""
    if len(graded) != len(lengths):
        raise ValueError(f"{len(graded)} graded samples but {len(lengths)} lengths")
    pairs = [p for g in graded for p in g.criterion_checks]
    negatives = [met for met, followed in pairs if not followed]
    positives = [met for met, followed in pairs if followed]
    out = {
        "bias/n_checked": float(len(pairs)),
        "bias/judge_fp_rate": sum(negatives) / len(negatives) if negatives else NAN,
        "bias/judge_fn_rate": sum(not m for m in positives) / len(positives) if positives else NAN,
        "bias/judge_agreement": sum(met == followed for met, followed in pairs) / len(pairs) if pairs else NAN,
    }
    # the graded samples with rule scores: (reward, rule score, the compared answer's rule score or None, length)
    kept: list[tuple[float, float, float | None, float]] = []
    for g, n in zip(graded, lengths):
        if g.reward.ok and g.rule_score is not None:
            opponent = None if g.opponent_rule_score is None else float(g.opponent_rule_score)
            kept.append((g.reward.graded_score, float(g.rule_score), opponent, float(n)))
    rewards = [reward for reward, _, _, _ in kept]
    rules = [rule for _, rule, _, _ in kept]
    out["bias/n_samples"] = float(len(kept))
    out["bias/reward_mean"] = sum(rewards) / len(rewards) if rewards else NAN
    out["bias/rule_mean"] = sum(rules) / len(rules) if rules else NAN
    out["bias/reward_minus_rule"] = out["bias/reward_mean"] - out["bias/rule_mean"] if rewards else NAN
    out["bias/length_corr"] = length_correlation(rewards, [n for _, _, _, n in kept], rules)
    # a pairwise judge: of the comparisons the checkers decide (the two rule scores differ) and the judge decides
    # (a reward other than 0.5), the share where it prefers the answer the checkers rank lower
    decided = [(reward > 0.5, rule > opponent) for reward, rule, opponent, _ in kept
               if opponent is not None and rule != opponent and reward != 0.5]
    out["bias/n_compared"] = float(len(decided))
    out["bias/judge_rule_disagree"] = sum(j != r for j, r in decided) / len(decided) if decided else NAN
    return out
