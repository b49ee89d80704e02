"""Where the packaged presets and schema tables live."""

from pathlib import Path

CONFIGS_DIR = Path(__file__).resolve().parent.parent / "configs"
MODULE_PRESETS_DIR = CONFIGS_DIR / "modules"  # <framework>/<preset>.yaml
MODEL_PRESETS_DIR = CONFIGS_DIR / "models"  # <framework>/<model>.yaml
SCHEMA_TABLES_DIR = CONFIGS_DIR / "schemas"
