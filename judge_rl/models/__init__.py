from judge_rl.models.loading import load_model, load_tokenizer, resolve_device, save_model

__all__ = ["load_model", "load_tokenizer", "resolve_device", "save_model"]
