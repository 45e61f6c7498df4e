"""lase_nb: confidence-gated multi-agent reasoning (LASE, DOWN) helper module."""

__version__ = "0.1.0"
