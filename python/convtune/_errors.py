"""The package's exception: a libconvtune status with the library's message."""

from __future__ import annotations


class ConvtuneError(Exception):
    """A failure of libconvtune (or of a check made before calling it).

    status: the ct_status value (negative), status_name its enum name
    ("CT_ERR_INVALID_WORKLOAD"); str(e) is the library's message.
    """

    def __init__(self, status: int, message: str):
        from . import _capi

        self.status = status
        self.status_name = _capi.status_name(status)
        self.message = message
        super().__init__(f"{message} ({self.status_name})")


# the ct_status values this package raises itself (convtune.h's list)
INVALID_ARG, PARSE, IO, NOT_FOUND, INTERNAL = -1, -4, -6, -7, -12


def check(status: int, message: str) -> None:
    """Raise ConvtuneError when status is not CT_OK (0)."""
    if status != 0:
        raise ConvtuneError(status, message)


def invalid_arg(message: str) -> ConvtuneError:
    """CT_ERR_INVALID_ARG with message: a mismatch found before the call."""
    return ConvtuneError(INVALID_ARG, message)
