from judge_rl.rollouts.generation import Generation, encode_chat, generate

__all__ = ["Generation", "encode_chat", "generate"]
