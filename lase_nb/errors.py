"""User-facing errors. Each names the problem and the fix; the CLI turns them into exit status 2."""

from __future__ import annotations


class LaseError(Exception):
    """Base class for errors a user can fix (bad input, missing key, missing logprobs...)."""


class ConfigError(LaseError, ValueError):
    """A parameter is outside its range or names something unknown."""


class MissingAPIKey(LaseError):
    """An API backend was asked for without its key in the environment."""

    def __init__(self, backend: str, variable: str):
        super().__init__(
            f"the {backend} backend needs an API key: set the environment variable {variable} "
            f"(or pass --backend local to use the embedded model)"
        )
        self.variable = variable


class LogprobsUnavailable(LaseError):
    """A confidence gate needs token log-probabilities that the backend/model did not return."""

    def __init__(self, backend: str, model: str, detail: str = ""):
        msg = (
            f"{backend} model {model!r} returned no token log-probabilities"
            + (f" ({detail})" if detail else "")
            + "; a confidence gate (LASE, DOWN, calibration) needs them. Use a model/server that "
            "returns logprobs (OpenAI chat models, vLLM, llama.cpp server, the local backend) "
            "or a strategy without a gate (single, mv, mad, moa)."
        )
        super().__init__(msg)


class CacheMiss(LaseError):
    """Replay-only mode met a call that is not in the cache."""


class DataError(LaseError):
    """A data file or row is malformed; the message names the file, row and field."""


class BackendError(LaseError):
    """A backend failed after its bounded retries; the message names the fault."""


def show_in_one_line() -> None:
    """In an IPython kernel (a chapter, JupyterLab), show a :class:`LaseError` as the one line
    ``ErrorName: message`` the command line prints, not a traceback into library code. The cell
    still fails, so a chapter stops there (papermill too). Outside IPython, or where a handler of
    the user's own is set, it does nothing."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or shell.custom_exceptions not in ((), (LaseError,)):
        return

    def one_line(shell, etype, value, tb, tb_offset=None):  # IPython's CustomTB signature
        shell._showtraceback(etype, value, [f"{etype.__name__}: {value}"])

    shell.set_custom_exc((LaseError,), one_line)
