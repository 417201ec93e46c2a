"""evoforge: discovery by program evolution with test-time learning."""

__version__ = "0.1.0"
