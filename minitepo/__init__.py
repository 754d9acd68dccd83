"""minitepo: a small, readable reference implementation of TEPO and the GRPO family of
reinforcement-learning objectives for language models, with a tiny transformer, a batched
sampler and arithmetic toy tasks to train on."""

__version__ = "0.1.0"
