from judge_rl.rollouts.generation import Generation, encode_chat, generate, greedy_generate, sample_generate, sample_tokens

__all__ = ["Generation", "encode_chat", "generate", "greedy_generate", "sample_generate", "sample_tokens"]
