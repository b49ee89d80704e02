"""What the launch tests plant in the launching environment."""

# Secret values that must never appear in a printed or written command, script or log.
ALLOWED_SECRETS = {
    "WANDB_API_KEY": "0123456789abcdef0123456789abcdef01234567",
    "MLFLOW_TRACKING_URI": "https://alice:mlflow-pass-4711@mlflow.example.com",
    "MLFLOW_TRACKING_PASSWORD": "mlflow-pass-4711",
    "PRIMUS_PRIVATE_TOKEN": "primus-token-0815",  # allowed by the PRIMUS_ prefix, still a secret
}
EXCLUDED_SECRETS = {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz012345"}  # the experiment excludes it
UNLISTED_SECRETS = {"AWS_SECRET_ACCESS_KEY": "aws-secret-key-1234567890"}  # on no allow-list
SECRET_VALUES = [*ALLOWED_SECRETS.values(), *EXCLUDED_SECRETS.values(), *UNLISTED_SECRETS.values()]
PLAIN = {"NCCL_IB_HCA": "mlx5_0", "MY_TEAM_SETTING": "blue"}  # by prefix; by the experiment's names
IMAGE = "rocm/primus:test"  # given with each launch that runs in an image
