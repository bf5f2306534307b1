"""Run and dataset profiles (YAML), shipped with the package so `--config=NAME.yaml` works anywhere."""
