"""Prompts: task meta information + parent program and results + instruction."""
from evoforge.prompts.builder import TEMPLATE_NAMES, PromptBuilder, TemplateError, load_templates

__all__ = ["TEMPLATE_NAMES", "PromptBuilder", "TemplateError", "load_templates"]
