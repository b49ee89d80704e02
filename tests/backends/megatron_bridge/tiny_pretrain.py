"""A user's own script: a 2-layer GPT (hidden 64, mock data, fp32, gloo) trained by Megatron-Bridge's ``pretrain()``
from its vanilla GPT recipe, with Bridge's own logger settings from the environment (unset: off). Nothing of
Primus in it: under ``primus-run`` the patches do the rest. Its body runs as ``__main__`` only: Bridge's checkpoint
save starts a process by spawn (megatron-core's write-results queue), which imports this script again."""

import os


def main() -> None:
    import torch
    from megatron.bridge.models.gpt_provider import local_layer_spec
    from megatron.bridge.recipes import vanilla_gpt_pretrain_config
    from megatron.bridge.training.config import MockGPTDatasetConfig
    from megatron.bridge.training.gpt_step import forward_step
    from megatron.bridge.training.pretrain import pretrain

    iterations = int(os.environ.get("TINY_ITERATIONS", "4"))

    cfg = vanilla_gpt_pretrain_config()
    model = cfg.model
    model.num_layers, model.hidden_size, model.ffn_hidden_size, model.num_attention_heads = 2, 64, 256, 4
    model.seq_length = model.max_position_embeddings = 128
    model.transformer_layer_spec = local_layer_spec  # no Transformer Engine on CPU
    for fusion in ("gradient_accumulation_fusion", "persist_layer_norm", "bias_activation_fusion", "bias_dropout_fusion",
                   "masked_softmax_fusion", "apply_rope_fusion", "cross_entropy_loss_fusion", "bf16"):
        setattr(model, fusion, False)
    model.params_dtype = torch.float32
    cfg.mixed_precision = None
    cfg.optimizer.bf16 = False
    cfg.optimizer.use_distributed_optimizer = False
    cfg.dist.distributed_backend = "gloo"
    cfg.train.train_iters = iterations
    cfg.train.global_batch_size, cfg.train.micro_batch_size = 2, 1
    cfg.validation.eval_interval = int(os.environ.get("TINY_EVAL_INTERVAL", iterations))
    cfg.validation.eval_iters = 1
    cfg.scheduler.lr_warmup_iters, cfg.scheduler.lr_decay_iters = 1, iterations
    cfg.tokenizer.vocab_size = 1024
    cfg.dataset = MockGPTDatasetConfig(
        seq_length=128, random_seed=1234, reset_attention_mask=False, reset_position_ids=False, eod_mask_loss=False,
        num_dataset_builder_threads=1, split="9999,8,2", data_sharding=True, dataloader_type="single",
        skip_getting_attention_mask_from_dataset=True,
    )
    cfg.dataset.num_workers = 0
    cfg.checkpoint.save = os.environ.get("TINY_SAVE")  # Bridge's iter_N folders, every TINY_SAVE_INTERVAL steps
    cfg.checkpoint.save_interval = int(os.environ["TINY_SAVE_INTERVAL"]) if cfg.checkpoint.save else None
    cfg.checkpoint.load = os.environ.get("TINY_LOAD")  # a run resumed with more TINY_ITERATIONS than it saved at
    cfg.scheduler.override_opt_param_scheduler = bool(cfg.checkpoint.load)  # the longer run's schedule, not the saved
    logger = cfg.logger
    logger.log_interval = 1
    logger.timing_log_level = 1  # the timers of every step (forward-backward, optimizer, ...)
    logger.log_timers_to_tensorboard = logger.log_memory_to_tensorboard = logger.log_throughput_to_tensorboard = True
    logger.tensorboard_dir = os.environ.get("TINY_TENSORBOARD_DIR")
    logger.mlflow_experiment = os.environ.get("TINY_MLFLOW_EXPERIMENT")
    logger.mlflow_run_name = os.environ.get("TINY_MLFLOW_RUN_NAME")
    logger.mlflow_tracking_uri = os.environ.get("TINY_MLFLOW_TRACKING_URI")
    logger.mlflow_tags = dict(t.split("=", 1) for t in os.environ.get("TINY_MLFLOW_TAGS", "").split(",") if t) or None
    logger.wandb_project = os.environ.get("TINY_WANDB_PROJECT")
    logger.wandb_exp_name = os.environ.get("TINY_WANDB_EXP_NAME")
    logger.wandb_save_dir = os.environ.get("TINY_WANDB_SAVE_DIR")
    logger.comet_project = os.environ.get("TINY_COMET_PROJECT")
    logger.comet_experiment_name = os.environ.get("TINY_COMET_EXPERIMENT_NAME")
    logger.comet_tags = [t for t in os.environ.get("TINY_COMET_TAGS", "").split(",") if t] or None

    pretrain(cfg, forward_step)


if __name__ == "__main__":
    main()
