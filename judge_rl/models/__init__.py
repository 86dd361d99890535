"""Models: where their weights are (`dirs`), their architecture and attention (`arch`, `attention`), loading and
saving (`loading`), and an identity for caches (`identity`). Import the module you need: this package imports
nothing, so a config check that only asks `dirs` does not load torch."""
