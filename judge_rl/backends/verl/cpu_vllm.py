"""verl's vLLM rollout weight sync on vLLM's CPU build (`cluster=cpu_verl`).

verl pushes the actor's weights into the colocated vLLM engine after every update by calling
`model.load_weights` on the live model (`verl/workers/rollout/vllm_rollout/utils.py:403`,
`vLLMColocateWorkerExtension._update_weights`). On vLLM's CPU platform that fails on the first
sync: after loading, every linear layer prepacks its weight for oneDNN and replaces the parameter with
an empty one without a `weight_loader` (`vllm/model_executor/layers/utils.py`,
`dispatch_cpu_unquantized_gemm(remove_weight=True)`), so `load_weights` raises
"'Parameter' object has no attribute 'weight_loader'".

verl runs vLLM's post-load processing itself once every bucket is in (`utils.py:353`,
`process_weights_after_loading`), so the layers only need their original parameters back before the sync.
`CPUColocateWorkerExtension` restores them, from the metadata vLLM records at load time for its own
reloads (`vllm.model_executor.model_loader.reload`), and only for the layers the CPU dispatch emptied:
embeddings and the (tied) LM head keep their weights and load in place, as on a GPU. verl lets the
extension class be chosen by configuration: its vLLM server passes `rollout.engine_kwargs.vllm` to vLLM
after its own arguments (`verl/workers/rollout/vllm_rollout/vllm_async_server.py:349`), so translate.py
sets `engine_kwargs.vllm.worker_extension_cls` to this class for cluster=cpu_verl.
"""

from __future__ import annotations

from verl.workers.rollout.vllm_rollout.utils import vLLMColocateWorkerExtension

EXTENSION = f"{__name__}.CPUColocateWorkerExtension"


def restore_packed_linear_weights(model) -> int:
    """Give every linear layer whose weight vLLM's CPU dispatch packed away (an empty `weight` beside a
    `cpu_linear` kernel) its original, loadable parameters again (uninitialised: the sync fills them); the
    number of layers restored."""
    from vllm.model_executor.model_loader.reload.layerwise import get_layerwise_info
    from vllm.model_executor.model_loader.reload.meta import materialize_layer, restore_layer_on_meta

    restored = 0
    for name, layer in model.named_modules():
        weight = getattr(layer, "weight", None)
        if not hasattr(layer, "cpu_linear") or weight is None or weight.numel() > 0:
            continue
        info = get_layerwise_info(layer)
        if not info.restore_metadata[0]:
            raise RuntimeError(f"vLLM recorded no load-time parameters for layer {name!r}: its packed CPU weight "
                               "cannot be reloaded (vLLM's record_metadata_for_reloading did not run)")
        restore_layer_on_meta(layer, info)
        materialize_layer(layer, info)
        restored += 1
    return restored


class CPUColocateWorkerExtension(vLLMColocateWorkerExtension):
    """verl's colocated-rollout worker extension, with the CPU-packed linear layers given back their
    loadable parameters before each weight sync (module docstring)."""

    def update_weights_from_ipc(self, peft_config: dict = None, base_sync_done=False, use_shm: bool = False):
        if not (peft_config and base_sync_done):  # LoRA adapters load as adapters, not into the base layers
            for model in self._iter_all_models():
                restore_packed_linear_weights(model)
        return super().update_weights_from_ipc(peft_config, base_sync_done, use_shm)
