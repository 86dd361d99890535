from judge_rl.rollouts.generation import Generation, encode_chat, generate, greedy_generate, sample_generate, sample_tokens
from judge_rl.rollouts.samplers import ROLLOUT_ENGINES, HFSampler, Sampler, build_sampler, resolve_rollout_engine

__all__ = ["Generation", "encode_chat", "generate", "greedy_generate", "sample_generate", "sample_tokens",
           "ROLLOUT_ENGINES", "HFSampler", "Sampler", "build_sampler", "resolve_rollout_engine"]
