"""`python -m judge_rl.curate [overrides]`: a small, hard, diverse, correct SFT init set (Think-J's LIMJ707).

Think-J (Huang et al., 2025, section 3.1) initialises its judge on 707 judgments chosen from a larger
preference pool by three filters, in this order; this package implements them for any preference source
(`data.loader` + `data.kwargs`, judge_rl.data.loaders) and writes judge_rl's own `pairs` JSONL, which the SFT
init reads back as its own set of traces (`sft.data={loader: pairs, kwargs: {path: <output>}}`, RL still training
on data.train), or as the whole training split (`data.train.loader=pairs '~data.train.kwargs'
'+data.train.kwargs={path: <output>}'`).

    python -m judge_rl.curate model=smollm2-135m data.kwargs.n=2048 limit=707
    python -m judge_rl.curate data.loader=skywork_preference '~data.kwargs' '+data.kwargs={path: skywork.parquet}' \
        accuracy.teacher=server accuracy.server.base_url=https://api.deepseek.com/v1 \
        accuracy.server.served_model=deepseek-reasoner accuracy.server.api_key_env=DEEPSEEK_API_KEY limit=707
    python -m judge_rl.curate accuracy.teacher=checkpoint accuracy.checkpoint=/models/Qwen2.5-32B-Instruct

What each filter does, exactly:

0. Input. The pairs are read, their pair_ids must be unique, and (`shuffle`, default true) they are
   shuffled once with `seed`; every later step, and `limit`, follows that order.
1. Difficulty (`difficulty.*`). Each pair is shown to the judge (`model`, with `difficulty.checkpoint`
   weights when given) once, in one order: the better response at (a) for exactly half the pairs
   (`balanced_positions`, seeded). The judge samples `samples` judgments (temperature `temperature`, at most
   `max_new_tokens` tokens each), parsed strictly by `prompt`. A judgment is right when it parses and names
   the better response. A pair whose `samples` judgments are all right is easy and dropped; a pair with at
   least one wrong or unparsed judgment is hard and kept. A pair whose judge prompt is longer than
   `model.max_prompt_length` tokens is dropped too (the judge could not be trained on it). Every pair's
   samples are appended to `<run_dir>/difficulty.jsonl` as soon as its chunk is sampled, keyed by the
   prompt's tokens and the sampling settings, so a crashed or re-run curation samples only the pairs it has
   no record for.
2. Diversity (`diversity.*`). Each remaining pair's question is embedded: with the judge itself
   (`embedder: judge`: the mean of its last hidden states over the question's tokens, no chat template), or
   with a sentence-transformers-style model (`embedder: <local dir or hub name>`, transformers AutoModel +
   AutoTokenizer, the same mean pooling). With `center: true` the mean embedding of these questions is
   subtracted first: a decoder's pooled states share one large common direction, so without centering
   16 distinct synthetic questions sit at cosine 0.91 on average (up to 0.995) under SmolLM2-135M;
   centered, they average about 0 and near-duplicates stay above 0.95. (Identical questions are at cosine 1
   either way.) Then a greedy pass in order: a question whose cosine with an earlier kept question is at
   least `threshold` (less 1e-6 for float rounding) is a near-duplicate of the first such kept question and
   is dropped; otherwise it is kept and starts a cluster. So each cluster keeps its first pair.
3. Accuracy (`accuracy.*`). A teacher writes a judgment of the pair in both orders, with `prompt`'s
   messages: `teacher: gold` reads the data's own traces (a pair without a trace for either order is
   dropped), `teacher: server` asks any OpenAI-compatible endpoint (`accuracy.server`: base_url,
   served_model, api_key_env, ...; greedy), `teacher: checkpoint` runs a local model directory
   (`accuracy.checkpoint`) with the hf server. Each output is read by `clip_trace` (traces.py; with `clip: true`; else it
   must parse as it is), and the pair is kept only when both orders parse and name the better response (and,
   with `match_strength: true`, also give the pair's labelled strength). The two outputs become the pair's
   traces for positions a and b, which is what the SFT init reads (`judge_rl.updates.sft.trace_for_prompt`
   takes the thinking of each and re-renders the verdict from the pair's labels; both orders are trained).
   Teacher outputs are saved in `<run_dir>/teacher.jsonl` by request, so a re-run never asks again; failed
   requests are not saved and are asked again. With `limit`, pairs are sent chunk by chunk and the filter
   stops once `limit` pairs are kept: the rest are counted as not checked, never paid for.
4. Output. The first `limit` kept pairs (all with `limit: null`) are written to `output` (the `pairs`
   format, judge_rl.data.loaders.write_pairs) with their curated traces and `meta["curation"]`, then
   `counts.json` beside it: the count after each step and each filter's drop reasons (as Think-J's Table 1),
   also printed as a table; `<run_dir>/dropped.jsonl` names every dropped pair, its filter and its reason.

Modules (a run goes config -> job -> filters, which ask the judge and the teacher and read traces):

- `config`: the typed schema of conf/curate.yaml (`CurateConfig` and one dataclass per filter), the keys a
  re-run may change and still resume, and `to_curate_config` / `validate_curate`, which refuse a bad config
  with one line naming the key before anything loads.
- `traces`: reading a teacher's output as a trace in the prompt's format: `clip_trace` (a reasoning model's
  output cut to its final explanation, rules a-f) and `judge_output` (checked against the gold verdict).
- `records`: the run directory's saved judgments (difficulty.jsonl, teacher.jsonl), append-only JSON lines
  read with judge_rl.reports.jsonl (a torn last line is dropped; a damaged line elsewhere is an error).
- `teacher`: the models curation asks: `Judge` (the judge, loaded once for the difficulty filter and the
  judge embedder) and `Teacher` (gold traces, an OpenAI-compatible server or a local checkpoint).
- `filters`: the three filters (`difficulty_filter`, `diversity_filter` with its embedding and greedy
  clustering, `accuracy_filter`) and what each returns (`FilterResult`, `Dropped`).
- `job`: `run_curate(cfg)`, the job itself: the input, the filters in order, the output, counts.json and
  dropped.jsonl.
- `__main__`: the Hydra entry point, `python -m judge_rl.curate [overrides]`.

Submodules are imported explicitly (nothing is imported here), so importing one stays cheap.
"""
