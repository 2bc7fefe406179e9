"""MPI error codes and ``MPI.Exception``."""

from __future__ import annotations

from ..errors import BgsimError as _BgsimError

SUCCESS = 0
ERR_BUFFER, ERR_COUNT, ERR_TYPE, ERR_TAG, ERR_COMM, ERR_RANK = 1, 2, 3, 4, 5, 6
ERR_REQUEST, ERR_ROOT, ERR_GROUP, ERR_OP, ERR_TOPOLOGY, ERR_DIMS = 7, 8, 9, 10, 11, 12
ERR_ARG, ERR_UNKNOWN, ERR_TRUNCATE, ERR_OTHER, ERR_INTERN, ERR_IN_STATUS = 13, 14, 15, 16, 17, 18
ERR_PENDING = 19
ERR_LASTCODE = 100

_ERR_NAMES = {
    SUCCESS: ("MPI_SUCCESS", "no error"),
    ERR_BUFFER: ("MPI_ERR_BUFFER", "invalid buffer pointer"),
    ERR_COUNT: ("MPI_ERR_COUNT", "invalid count argument"),
    ERR_TYPE: ("MPI_ERR_TYPE", "invalid datatype"),
    ERR_TAG: ("MPI_ERR_TAG", "invalid tag"),
    ERR_COMM: ("MPI_ERR_COMM", "invalid communicator"),
    ERR_RANK: ("MPI_ERR_RANK", "invalid rank"),
    ERR_REQUEST: ("MPI_ERR_REQUEST", "invalid request"),
    ERR_ROOT: ("MPI_ERR_ROOT", "invalid root"),
    ERR_GROUP: ("MPI_ERR_GROUP", "invalid group"),
    ERR_OP: ("MPI_ERR_OP", "invalid reduce operation"),
    ERR_TOPOLOGY: ("MPI_ERR_TOPOLOGY", "invalid communicator topology"),
    ERR_DIMS: ("MPI_ERR_DIMS", "invalid topology dimension"),
    ERR_ARG: ("MPI_ERR_ARG", "invalid argument of some other kind"),
    ERR_UNKNOWN: ("MPI_ERR_UNKNOWN", "unknown error"),
    ERR_TRUNCATE: ("MPI_ERR_TRUNCATE", "message truncated"),
    ERR_OTHER: ("MPI_ERR_OTHER", "known error not in this list"),
    ERR_INTERN: ("MPI_ERR_INTERN", "internal error"),
    ERR_IN_STATUS: ("MPI_ERR_IN_STATUS", "error code is in status"),
    ERR_PENDING: ("MPI_ERR_PENDING", "pending request"),
}


class Exception(_BgsimError, RuntimeError):  # noqa: A001 - the name mpi4py uses
    """An MPI error (``mpi4py.MPI.Exception``; a ``RuntimeError`` as there, and a ``bgsim.BgsimError``)."""

    def __init__(self, ierr: int = SUCCESS, detail: str = ""):
        self.error_code = ierr
        name, text = _ERR_NAMES.get(ierr, ("MPI_ERR_UNKNOWN", "unknown error"))
        super().__init__(f"{name}: {text}" + (f" ({detail})" if detail else ""))

    def Get_error_code(self) -> int:
        return self.error_code

    def Get_error_class(self) -> int:
        return self.error_code

    def Get_error_string(self) -> str:
        return _ERR_NAMES.get(self.error_code, ("", "unknown error"))[1]

    @property
    def error_class(self) -> int:
        return self.error_code

    @property
    def error_string(self) -> str:
        return self.Get_error_string()


def Get_error_string(errorcode: int) -> str:
    return _ERR_NAMES.get(errorcode, ("", "unknown error"))[1]
