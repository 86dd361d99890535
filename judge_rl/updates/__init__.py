"""Updates: the math that turns data into weight changes, shared by the backends (batched log-probs)
and the thinking-initialisation SFT."""
