"""Official scoring rules of public judge / reward-model benchmarks, as pure functions (see `scoring`)."""
