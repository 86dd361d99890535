"""judge_rl config -> verl 0.9 config: every algorithm and reward option translates into a config that
passes verl's own validate_config, carries the values the job implies, has no key verl would ignore
and no interpolation left; the compose does not disturb a running judge_rl Hydra context."""

from __future__ import annotations

import copy

import pytest
from conftest import online_algorithms, CACHE_DIR, CONF_DIR, job_reward
from omegaconf import OmegaConf

from judge_rl.backends.verl import (
    REWARD_FUNCTION_NAME,
    REWARD_MANAGER,
    VerlTranslationError,
    compose_verl_defaults,
    ignored_keys,
    reward_module_path,
    unresolved_keys,
    validate,
)
from judge_rl.backends.verl.translate import missing_keys

ALGORITHMS = online_algorithms()
REWARDS = sorted(p.stem for p in (CONF_DIR / "reward").glob("*.yaml"))
# rewards whose groups hold both orders of a pair: verl's per-sample reward managers cannot pair them
BOTH_ORDERS = {"consistency"}
HUB = "model=qwen2.5-7b-instruct"  # verl only reads the name unless it builds a critic


def test_every_option_is_enumerated():
    assert {"grpo", "dr_grpo", "ppo", "reinforce_pp", "reinforce_pp_baseline", "rloo"} <= set(ALGORITHMS)
    assert {"strength", "binary", "margin", "judgelrm", "pairwise_tag", "pointwise", "consistency"} <= set(REWARDS)


def assert_clean(cfg):
    assert ignored_keys(cfg) == []
    assert unresolved_keys(cfg) == []
    assert missing_keys(cfg) == []
    assert "${" not in OmegaConf.to_yaml(cfg)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_algorithm_translates_and_passes_verl_validation(algorithm, translate, model_for):
    from verl.trainer.ppo.utils import need_critic, need_reference_policy

    job, cfg = translate([model_for(algorithm), f"algorithm={algorithm}"])
    a, t = job.algorithm, job.trainer
    assert_clean(cfg)
    validate(cfg)  # verl's auto_set_device + validate_config, and the worker-time checks

    alg, actor, rollout = cfg.algorithm, cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout
    assert alg.adv_estimator == a.adv_estimator
    assert alg.norm_adv_by_std_in_grpo == a.norm_adv_by_std_in_grpo
    assert (alg.gamma, alg.lam) == (a.gamma, a.lam)
    assert alg.use_kl_in_reward == a.use_kl_in_reward
    assert alg.kl_penalty == a.kl_penalty
    k = alg.kl_ctrl
    assert (k.type, k.kl_coef, k.target_kl, k.horizon) == (
        a.kl_ctrl.type,
        a.kl_ctrl.kl_coef,
        a.kl_ctrl.target_kl,
        a.kl_ctrl.horizon,
    )
    assert actor.use_kl_loss == a.use_kl_loss
    assert (actor.kl_loss_coef, actor.kl_loss_type) == (a.kl_loss_coef, a.kl_loss_type)
    assert actor.optim.lr == a.lr and actor.optim.weight_decay == a.weight_decay
    assert actor.optim.clip_grad == a.grad_clip == actor.grad_clip
    assert actor.ppo_epochs == a.ppo_epochs
    assert actor.clip_ratio == actor.clip_ratio_low == actor.clip_ratio_high == a.clip_ratio
    assert actor.loss_agg_mode == a.loss_agg_mode
    assert actor.loss_scale_factor == a.loss_scale_factor
    assert actor.entropy_coeff == a.entropy_coeff
    assert actor.policy_loss.loss_mode == a.policy_loss
    # batch sizes: verl counts prompts for the mini-batch, as judge_rl does; micro-batches are sequences
    assert cfg.data.train_batch_size == t.prompts_per_step
    mini = a.ppo_mini_batch_size or t.prompts_per_step
    assert actor.ppo_mini_batch_size == mini
    assert actor.ppo_micro_batch_size_per_gpu == min(a.ppo_micro_batch_size, mini * a.rollout_n)
    assert rollout.log_prob_micro_batch_size_per_gpu == actor.ppo_micro_batch_size_per_gpu
    assert cfg.actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu == actor.ppo_micro_batch_size_per_gpu
    # rollout
    assert rollout.name == "vllm"
    assert rollout.n == a.rollout_n
    assert rollout.response_length == cfg.data.max_response_length == t.max_new_tokens
    assert rollout.prompt_length == cfg.data.max_prompt_length == job.model.max_prompt_length
    assert (rollout.temperature, rollout.top_p) == (t.temperature, t.top_p)
    assert rollout.tensor_model_parallel_size == 1  # one GPU
    # reference and critic, decided by verl's own helpers
    assert need_reference_policy(cfg) == (a.use_kl_loss or a.use_kl_in_reward)
    assert cfg.critic.enable is (algorithm == "ppo")
    assert need_critic(cfg) is (algorithm == "ppo")
    if algorithm == "ppo":
        assert cfg.critic.optim.lr == a.critic.lr
        assert cfg.critic.cliprange_value == a.critic.cliprange_value
        assert cfg.critic.optim.clip_grad == a.critic.grad_clip
        assert a.critic.warmup_steps == 1 and cfg.trainer.critic_warmup == 2  # one critic-only step on both backends
        assert cfg.critic.model.path == cfg.actor_rollout_ref.model.path
        assert cfg.critic.ppo_mini_batch_size == actor.ppo_mini_batch_size  # verl's interpolation, resolved
        assert cfg.critic.ppo_epochs == a.ppo_epochs
    else:
        assert cfg.trainer.critic_warmup == 0
    if algorithm == "dr_grpo":
        assert actor.loss_scale_factor == t.max_new_tokens
        assert cfg.critic.loss_scale_factor == t.max_new_tokens  # verl's critic interpolates the actor's
    # trainer
    assert cfg.trainer.total_training_steps == t.total_steps
    assert cfg.trainer.save_freq == t.save_every
    assert cfg.trainer.max_actor_ckpt_to_keep == t.keep_checkpoints
    assert cfg.trainer.logger == ["console", "file"]
    assert cfg.trainer.n_gpus_per_node == 1 and cfg.trainer.nnodes == 1


def _verl_critic_only_steps(critic_warmup: int, total_steps: int) -> int:
    """verl's rule as its source states it: global_steps starts at 1 (v1/trainer_base.py:454, `self.global_steps
    += 1` before the first step) and the actor is updated only `if self.config.trainer.critic_warmup <=
    self.global_steps:` (verl/trainer/ppo/v1/trainer_base.py:608)."""
    return sum(1 for global_steps in range(1, total_steps + 1) if not critic_warmup <= global_steps)


def _local_critic_only_steps(warmup_steps: int, total_steps: int) -> int:
    """The local backend's rule (judge_rl/backends/local/backend.py, LocalBackend.update): `self.global_step += 1`
    (from 0), then the actor is skipped `if self.critic is not None and self.global_step <= algo.critic.warmup_steps`."""
    return sum(1 for global_step in range(1, total_steps + 1) if global_step <= warmup_steps)


def test_the_rules_the_warm_up_counts_use_are_the_sources_own():
    import inspect

    from verl.trainer.ppo.v1 import trainer_base

    from judge_rl.backends.local.backend import LocalBackend

    verl_source = inspect.getsource(trainer_base)
    assert "if self.config.trainer.critic_warmup <= self.global_steps:" in verl_source
    assert "# we start from step 1\n        self.global_steps += 1" in verl_source
    local_source = inspect.getsource(LocalBackend.update)
    assert "self.global_step += 1\n        if self.critic is not None and self.global_step <= algo.critic.warmup_steps:" in local_source


@pytest.mark.parametrize("warmup_steps", [0, 1, 2, 3])
def test_ppo_critic_warm_up_does_as_many_critic_only_steps_on_verl_as_locally(warmup_steps, translate):
    """On today's main trainer.critic_warmup = warmup_steps: verl, counting from step 1, updated the actor from
    step warmup_steps on, one critic-only step fewer than the local backend (none for ppo.yaml's 1)."""
    from judge_rl.backends.verl.translate import verl_critic_warmup

    _, cfg = translate([HUB, "algorithm=ppo", f"algorithm.critic.warmup_steps={warmup_steps}"])
    assert cfg.trainer.critic_warmup == verl_critic_warmup(warmup_steps) == (warmup_steps + 1 if warmup_steps else 0)
    assert _verl_critic_only_steps(cfg.trainer.critic_warmup, 10) == _local_critic_only_steps(warmup_steps, 10) == warmup_steps


def test_reference_and_kl_placement_follow_the_algorithm(translate):
    _, grpo = translate([HUB, "algorithm=grpo"])
    _, rpp = translate([HUB, "algorithm=reinforce_pp"])
    assert grpo.actor_rollout_ref.actor.use_kl_loss and not grpo.algorithm.use_kl_in_reward
    assert rpp.algorithm.use_kl_in_reward and not rpp.actor_rollout_ref.actor.use_kl_loss


@pytest.mark.parametrize("reward", REWARDS)
def test_reward_translates_to_verl_09_keys(reward, translate):
    if reward in BOTH_ORDERS:
        with pytest.raises(VerlTranslationError, match="both orders"):
            translate([HUB, f"reward={reward}"])
        return
    job, cfg = translate([HUB, f"reward={reward}"])
    assert_clean(cfg)
    validate(cfg)
    fn = cfg.reward.custom_reward_function
    assert fn.path == reward_module_path()
    assert fn.name == REWARD_FUNCTION_NAME == "compute_score"
    assert OmegaConf.to_container(fn.reward_kwargs) == {"reward_name": reward, **job.reward.weights}
    assert cfg.reward.reward_manager.name == REWARD_MANAGER == "naive"
    assert cfg.reward.reward_manager.source == "register"
    # the 0.6-style top-level key stays as verl composes it: unset
    assert all(v is None for v in cfg.custom_reward_function.values())


def test_verl_loads_the_reward_function_with_its_kwargs(translate):
    from verl.trainer.ppo.reward import get_custom_reward_fn

    from judge_rl.rewards import compute_score

    job, cfg = translate([HUB, "reward=margin", "reward.weights.margin_weight=0.25"])
    fn = get_custom_reward_fn(cfg)
    out = "<think>\nx\n</think>\nResponse (a): 80; Response (b): 40"
    gt = {"winner": "a", "strength": 2}
    expected = compute_score("s", out, gt, reward_name="margin", **job.reward.weights)
    assert fn(data_source="s", solution_str=out, ground_truth=gt, extra_info={}) == expected


def test_consistency_is_refused_with_a_reason(translate):
    with pytest.raises(VerlTranslationError, match="one sample at a time"):
        translate([HUB, "reward=consistency"])


def test_tiny_random_model_is_refused(translate):
    with pytest.raises(VerlTranslationError, match="real checkpoint"):
        translate(["model=tiny-random"])


def test_embedded_model_is_the_converted_safetensors_dir(translate):
    from pathlib import Path

    from judge_rl.models.loading import converted_gguf_dir

    job, cfg = translate(["model=smollm2-135m"])
    path = Path(cfg.actor_rollout_ref.model.path)
    assert path == converted_gguf_dir(job.model, CACHE_DIR)
    assert (path / "config.json").is_file() and (path / "tokenizer_config.json").is_file()


def test_hub_model_is_passed_by_name(translate):
    _, cfg = translate(["model=smollm2-135m-hub"])
    assert cfg.actor_rollout_ref.model.path == "HuggingFaceTB/SmolLM2-135M-Instruct"


def test_init_model_replaces_the_job_model(translate, tmp_path):
    _, cfg = translate([HUB, "algorithm=grpo"], init_model=tmp_path / "sft")
    assert cfg.actor_rollout_ref.model.path == str((tmp_path / "sft").resolve())


def test_paths_are_absolute(translate, data_files):
    from pathlib import Path

    _, cfg = translate([HUB])
    paths = (cfg.data.train_files, cfg.data.val_files, cfg.trainer.default_local_dir)
    paths += (cfg.reward.custom_reward_function.path,)
    for p in paths:
        assert Path(p).is_absolute()
    assert cfg.data.train_files == str(Path(data_files["train"]).resolve())


def test_stages_map_to_verl_validation(translate):
    job, cfg = translate([HUB, "stages=[eval_base,sft,eval_sft,rl,eval_rl]"])
    assert cfg.trainer.val_before_train is True
    assert cfg.trainer.test_freq == job.trainer.total_steps
    _, cfg = translate([HUB, "stages=[sft,rl]"])
    assert cfg.trainer.val_before_train is False and cfg.trainer.test_freq == -1


def test_every_job_refills_a_failed_rollout_group_within_a_bound(translate):
    # a step whose groups all failed ended verl's run ("no materializable trajectories"): every job gets the buffer
    job, cfg = translate([HUB, "trainer.prompts_per_step=3"])
    sampler = cfg.trainer.v1.sampler
    assert cfg.trainer.use_v1 is True and sampler.sync_refill_failed_groups is True
    assert (sampler.custom_sampler.path, sampler.custom_sampler.name) == ("pkg://judge_rl.backends.verl.sampler",
                                                                          "RefillingReplayBuffer")
    assert sampler.sampler_kwargs.max_failed_group_refills == 4 * 3
    assert_clean(cfg)
    validate(cfg)


def test_wandb_logger(translate):
    _, cfg = translate([HUB, "logger=wandb"])
    assert cfg.trainer.logger == ["console", "file", "wandb"]
    assert cfg.trainer.project_name == "judge_rl"


def test_multi_gpu_scale(translate):
    # 2 nodes x 8 GPUs: 32 prompts x 8 samples, 8 prompts per mini-batch = 64 sequences, 4 per GPU
    job, cfg = translate(
        [HUB, "trainer.prompts_per_step=32", "algorithm.rollout_n=8", "algorithm.ppo_mini_batch_size=8"],
        n_gpus_per_node=8,
        nnodes=2,
    )
    validate(cfg)
    # verl's default TP (2) divides 8 GPUs and Qwen2.5-7B's 28 attention and 4 KV heads
    assert cfg.actor_rollout_ref.rollout.tensor_model_parallel_size == 2
    assert cfg.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu == 4  # min(4, 64 / 16)
    assert cfg.trainer.n_gpus_per_node == 8 and cfg.trainer.nnodes == 2


def test_batch_too_small_for_the_gpus_fails_verl_validation(translate):
    # 2 prompts x 4 samples = 8 sequences cannot split over 16 GPUs: verl's own validate_config says so
    _, cfg = translate([HUB, "trainer.prompts_per_step=2", "algorithm.rollout_n=4"], n_gpus_per_node=8, nnodes=2)
    with pytest.raises(AssertionError, match="real_train_batch_size"):
        validate(cfg)


def test_mini_batch_that_does_not_split_over_gpus_is_refused(translate):
    # 4 prompts x 2 samples per step pass verl's validate_config on 8 GPUs, but a 1-prompt mini-batch
    # (2 sequences) cannot split over 8 data-parallel ranks, which verl's workers only find at run time
    _, cfg = translate(
        [HUB, "trainer.prompts_per_step=4", "algorithm.rollout_n=2", "algorithm.ppo_mini_batch_size=1"],
        n_gpus_per_node=8,
        nnodes=1,
    )
    with pytest.raises(VerlTranslationError, match="do not split"):
        validate(cfg)


def test_extra_sets_verl_keys_last(translate):
    _, cfg = translate([HUB], extra={"actor_rollout_ref.rollout.gpu_memory_utilization": 0.7, "data.shuffle": False})
    assert cfg.actor_rollout_ref.rollout.gpu_memory_utilization == 0.7
    assert cfg.data.shuffle is False


def test_extra_refuses_unknown_and_ignored_keys(translate):
    with pytest.raises(VerlTranslationError, match="no such key"):
        translate([HUB], extra={"actor_rollout_ref.actor.not_a_key": 1})
    # the 0.6-style top-level reward key exists in 0.9.1's defaults (legacy, null) but main_ppo never
    # reads it: the translator refuses to return a config that sets it
    with pytest.raises(VerlTranslationError, match="custom_reward_function.path"):
        translate([HUB], extra={"custom_reward_function.path": reward_module_path()})


def test_ignored_keys_reports_what_verl_would_not_read(translate):
    _, cfg = translate([HUB])
    bad = copy.deepcopy(cfg)
    OmegaConf.set_struct(bad, False)
    bad.custom_reward_function.path = reward_module_path()  # 0.6 style: silently ignored by main_ppo
    bad.custom_reward_function.name = "compute_score"
    bad.reward_model.reward_manager = "naive"  # 0.6 style
    bad.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpux = 2  # misspelt
    bad.reward.reward_kwargs = {"reward_name": "binary"}  # only the dapo manager reads reward.reward_kwargs
    bad.actor_rollout_ref.actor.grad_clip = 0.5  # dead in 0.9.1: optim.clip_grad is read
    assert ignored_keys(bad) == sorted(
        [
            "actor_rollout_ref.actor.grad_clip (verl reads actor_rollout_ref.actor.optim.clip_grad)",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpux",
            "custom_reward_function.name",
            "custom_reward_function.path",
            "reward.reward_kwargs.reward_name",
            "reward_model.reward_manager",
        ]
    )
    with pytest.raises(VerlTranslationError, match="ignored by verl"):
        validate(bad)


def test_verl_defaults_themselves_are_clean_but_unresolved():
    defaults = compose_verl_defaults()
    assert ignored_keys(defaults) == []
    assert unresolved_keys(defaults)  # verl's own yaml interpolates, so the check has teeth
    assert "actor_rollout_ref.rollout.name" in missing_keys(defaults)


def test_translation_keeps_verl_namespace_and_judge_rl_hydra_state(data_files, tmp_path, make_job):
    """Composing verl's config inside a judge_rl Hydra context neither fails nor leaks either way."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from judge_rl.backends.verl import verl_config
    from judge_rl.backends.verl.export import judge_reward_kwargs

    job = make_job([HUB])
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        before = GlobalHydra.instance().hydra
        cfg = verl_config(
            job,
            data_files=data_files,
            reward_module=reward_module_path(),
            reward_kwargs=judge_reward_kwargs(job, job_reward(job)),
            stages=job.stages,
            experiment_name="x",
            ckpt_dir=tmp_path,
            n_gpus_per_node=1,
            nnodes=1,
        )
        assert GlobalHydra.instance().hydra is before
        again = compose(config_name="config", overrides=["run_dir=/tmp/x", f"cache_dir={CACHE_DIR}"])
        assert again.algorithm.name == "grpo" and again.model.name == "smollm2-135m"
    assert set(cfg.keys()) == set(compose_verl_defaults().keys())  # verl's top level, nothing of judge_rl's
    assert "name" not in cfg.algorithm and "weights" not in cfg.reward


def test_data_files_need_train_and_val(translate, data_files):
    with pytest.raises(VerlTranslationError, match="train"):
        translate([HUB], data_files={"train": data_files["train"]})


def test_translated_config_is_struct(translate):
    from omegaconf.errors import ConfigAttributeError

    _, cfg = translate([HUB])
    with pytest.raises(ConfigAttributeError):
        cfg.trainer.not_a_key  # noqa: B018


def test_a_cpu_job_sizes_vllms_kv_cache_to_a_step():
    from dataclasses import replace

    from judge_rl.config import ArchConfig
    from judge_rl.backends.verl.translate import MiB, cpu_kv_cache_bytes

    smollm2 = ArchConfig(9, 3, 8192, num_hidden_layers=30, hidden_size=576)
    # 2 x 30 layers x 3 KV heads x 64 dims x 4 bytes = 46,080 bytes a token; 8 sequences of 576: 212,336,640 bytes
    assert cpu_kv_cache_bytes(smollm2, 8, 576) == 203 * MiB
    assert cpu_kv_cache_bytes(smollm2, 8, 570) == 203 * MiB  # a sequence holds whole 16-token blocks
    assert cpu_kv_cache_bytes(replace(smollm2, head_dim=128), 8, 576) == 405 * MiB  # a stated head_dim wins
    assert cpu_kv_cache_bytes(ArchConfig(9, 3, 8192), 8, 576) == 1 << 30  # layers unknown: vLLM-CPU's 1 GiB


def test_rollout_tp_is_chosen_from_the_models_heads_and_the_gpus():
    from judge_rl.config import ArchConfig
    from judge_rl.backends.verl.translate import choose_rollout_tp

    smollm2 = ArchConfig(9, 3, 8192)
    qwen7b = ArchConfig(28, 4, 32768)
    assert choose_rollout_tp(smollm2, 2, 8) == 1  # 2 divides neither 9 nor 3
    assert choose_rollout_tp(smollm2, 4, 6) == 3
    assert choose_rollout_tp(qwen7b, 2, 8) == 2
    assert choose_rollout_tp(qwen7b, 8, 8) == 4  # 8 does not divide 28 heads; 4 divides 28, 4 and 8
    assert choose_rollout_tp(qwen7b, 2, 1) == 1
    assert choose_rollout_tp(ArchConfig(), 2, 8) == 2  # unknown heads: the GPUs alone (the preflight says so)
