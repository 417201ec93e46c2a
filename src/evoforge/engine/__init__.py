"""The evolution engine: config, loop, run store glue, outputs."""
from evoforge.engine.config import ConfigError, RunConfig, build_config, load_config_file
from evoforge.engine.loop import Engine, EngineError, StepStats

__all__ = ["ConfigError", "Engine", "EngineError", "RunConfig", "StepStats", "build_config", "load_config_file"]
