"""The tuner: Optuna studies over the simulator (or recorded measurements), with constraints,
duplicate caching, baselines, warm starts, verification, storage, parallel workers and resume."""
