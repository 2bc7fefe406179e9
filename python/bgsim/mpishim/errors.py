"""MPI error codes and ``MPI.Exception``."""

from __future__ import annotations

import functools
from typing import Any

from greenlet import getcurrent as _getcurrent

from ..errors import BgsimError as _BgsimError
from ..errors import ArgumentTypeError as _ArgumentTypeError
from ..errors import StateError as _StateError
from ..errors import UsageError as _UsageError

SUCCESS = 0
ERR_BUFFER, ERR_COUNT, ERR_TYPE, ERR_TAG, ERR_COMM, ERR_RANK = 1, 2, 3, 4, 5, 6
ERR_REQUEST, ERR_ROOT, ERR_GROUP, ERR_OP, ERR_TOPOLOGY, ERR_DIMS = 7, 8, 9, 10, 11, 12
ERR_ARG, ERR_UNKNOWN, ERR_TRUNCATE, ERR_OTHER, ERR_INTERN, ERR_IN_STATUS = 13, 14, 15, 16, 17, 18
ERR_PENDING = 19
(ERR_ERRHANDLER, ERR_INFO, ERR_INFO_KEY, ERR_INFO_NOKEY, ERR_INFO_VALUE, ERR_KEYVAL, ERR_WIN, ERR_SESSION,
 ERR_UNSUPPORTED_OPERATION, ERR_NOT_SAME, ERR_FILE) = range(20, 31)
ERR_DISP, ERR_RMA_SYNC, ERR_RMA_CONFLICT, ERR_LOCKTYPE, ERR_ASSERT = range(31, 36)
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
    ERR_ERRHANDLER: ("MPI_ERR_ERRHANDLER", "invalid error handler"),
    ERR_INFO: ("MPI_ERR_INFO", "invalid info object"),
    ERR_INFO_KEY: ("MPI_ERR_INFO_KEY", "invalid info key"),
    ERR_INFO_NOKEY: ("MPI_ERR_INFO_NOKEY", "unknown info key"),
    ERR_INFO_VALUE: ("MPI_ERR_INFO_VALUE", "invalid info value"),
    ERR_KEYVAL: ("MPI_ERR_KEYVAL", "invalid attribute key"),
    ERR_WIN: ("MPI_ERR_WIN", "invalid window"),
    ERR_DISP: ("MPI_ERR_DISP", "invalid displacement"),
    ERR_RMA_SYNC: ("MPI_ERR_RMA_SYNC", "wrong synchronization of RMA calls"),
    ERR_RMA_CONFLICT: ("MPI_ERR_RMA_CONFLICT", "conflicting accesses to a window"),
    ERR_LOCKTYPE: ("MPI_ERR_LOCKTYPE", "invalid lock type"),
    ERR_ASSERT: ("MPI_ERR_ASSERT", "invalid assertion"),
    ERR_SESSION: ("MPI_ERR_SESSION", "invalid session"),
    ERR_UNSUPPORTED_OPERATION: ("MPI_ERR_UNSUPPORTED_OPERATION", "operation not supported"),
    ERR_NOT_SAME: ("MPI_ERR_NOT_SAME", "collective arguments not identical"),
    ERR_FILE: ("MPI_ERR_FILE", "invalid file handle"),
}


class Errhandler:
    """An error handler. The predefined ones are accepted (bgsim raises
    ``MPI.Exception`` on every error, as mpi4py's default ERRORS_RETURN
    turned into exceptions does); a user's (``Comm.Create_errhandler``) is
    called by ``Call_errhandler``. ``Errhandler(eh)`` and ``Get_errhandler``
    give new handles to the same handler; freeing one makes it
    ERRHANDLER_NULL."""

    def __init__(self, errhandler: "Errhandler | str | None" = None, fn: Any = None):
        if isinstance(errhandler, Errhandler):
            self._name, self._fn = errhandler._name, errhandler._fn
        else:
            self._name, self._fn = errhandler or "MPI_ERRHANDLER_NULL", fn

    def __bool__(self) -> bool:
        return self._name != "MPI_ERRHANDLER_NULL"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Errhandler) and other._name == self._name and other._fn is self._fn

    __hash__ = object.__hash__

    def Free(self) -> None:
        """This handle becomes ERRHANDLER_NULL (the predefined handles
        themselves stay); the null one cannot be freed."""
        if not self:
            raise Exception(ERR_ERRHANDLER, "Free: MPI_ERRHANDLER_NULL")
        if not any(self is p for p in _PREDEFINED_ERRHANDLERS):
            self._name, self._fn = "MPI_ERRHANDLER_NULL", None

    def toint(self) -> int:
        """No C handle in a simulated MPI."""
        return -1

    def py2f(self) -> int:
        """No Fortran handle in a simulated MPI."""
        return -1

    def __reduce__(self) -> Any:
        if self._fn is not None:
            raise _UsageError(f"cannot pickle user-defined error handler {self!r}")
        for p in _PREDEFINED_ERRHANDLERS:
            if self is p:
                return p._name.replace("MPI_", "", 1)
        return (Errhandler, (self._name,))

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Errhandler {self._name}>"


ERRHANDLER_NULL = Errhandler()
ERRORS_RETURN = Errhandler("MPI_ERRORS_RETURN")
ERRORS_ARE_FATAL = Errhandler("MPI_ERRORS_ARE_FATAL")
ERRORS_ABORT = Errhandler("MPI_ERRORS_ABORT")
_PREDEFINED_ERRHANDLERS = (ERRHANDLER_NULL, ERRORS_RETURN, ERRORS_ARE_FATAL, ERRORS_ABORT)


def default_errhandler() -> Errhandler:
    """The error handler of a communicator or window none was set on (nor
    inherited): the one ``mpi4py.rc.errors`` gave the calling rank when it
    imported MPI - ERRORS_RETURN for "exception", mpi4py's default (its
    errors become exceptions), ERRORS_ARE_FATAL for "default" and "fatal",
    ERRORS_ABORT for "abort"."""
    ctx = getattr(_getcurrent(), "ctx", None)
    eh = None if ctx is None else ctx.state.get("errhandler_default")
    return ERRORS_RETURN if eh is None else eh


class ErrhandlerMethods:
    """Get/Set/Call_errhandler and Create_errhandler of communicators and
    windows. A class says where its handler is kept (`_own_errhandler`,
    `_keep_errhandler`) and which of a process's handler tables its users'
    handlers count against (`_ERRH_TABLE`: 32 each, as in mpi4py)."""

    _ERRH_TABLE = ""

    def _own_errhandler(self) -> "Errhandler | None":
        raise NotImplementedError

    def _keep_errhandler(self, errhandler: Errhandler) -> None:
        raise NotImplementedError

    def _errhandler_in_force(self) -> Errhandler:
        eh = self._own_errhandler()
        return default_errhandler() if eh is None else eh

    @classmethod
    def Create_errhandler(cls, errhandler_fn: Any) -> Errhandler:
        """A user's error handler, `errhandler_fn(obj, errorcode)`, called by
        `Call_errhandler` (bgsim's own errors still raise)."""
        from .. import runtime as _rt  # noqa: PLC0415 - the runtime imports this package
        if not callable(errhandler_fn):
            raise _ArgumentTypeError("Create_errhandler: the handler must be callable")
        st = _rt.current().state
        key = "errhandlers" + cls._ERRH_TABLE
        made = st.get(key, 0)
        if made >= _MAX_USER_ERRHANDLERS:
            raise _StateError(f"{cls.__name__}.Create_errhandler: at most {_MAX_USER_ERRHANDLERS} user error handlers"
                              + (f" for {cls._ERRH_TABLE}" if cls._ERRH_TABLE else ""))
        st[key] = made + 1
        return Errhandler(f"user error handler {made}" + (f" ({cls._ERRH_TABLE})" if cls._ERRH_TABLE else ""),
                          errhandler_fn)

    def Get_errhandler(self) -> Errhandler:
        """A new handle to the object's error handler."""
        return Errhandler(self._errhandler_in_force())

    def Set_errhandler(self, errhandler: Errhandler) -> None:
        if not isinstance(errhandler, Errhandler) or not errhandler:
            raise Exception(ERR_ERRHANDLER, "Set_errhandler: not an error handler")
        self._keep_errhandler(Errhandler(errhandler))

    def Call_errhandler(self, errorcode: int) -> None:
        """Calls the object's error handler with `errorcode`: a user's
        function, nothing for ERRORS_RETURN, MPI.Exception otherwise."""
        if errorcode == SUCCESS:
            return
        eh = self._errhandler_in_force()
        if eh._fn is not None:
            eh._fn(self, errorcode)
        elif eh != ERRORS_RETURN:
            raise Exception(errorcode, "Call_errhandler")


#: User error handlers a process may create per table (mpi4py's callback tables).
_MAX_USER_ERRHANDLERS = 32


class _UserErrors:
    """A process's (a rank's) own error classes and codes
    (MPI_Add_error_class / _code / _string), numbered above ERR_LASTCODE."""

    def __init__(self) -> None:
        self.last = ERR_LASTCODE
        self.class_of: "dict[int, int]" = {}  # user code or class -> its class
        self.codes: "dict[int, set]" = {}  # user class -> its codes
        self.strings: "dict[int, str]" = {}


_OUTSIDE = _UserErrors()  # what code outside a rank sees


def _user() -> _UserErrors:
    from .. import runtime as _rt
    return _rt.rank_own("user_errors", _UserErrors, _OUTSIDE)


def _class_of(code: int) -> int:
    if code in _ERR_NAMES:
        return code
    return _user().class_of.get(code, ERR_UNKNOWN)


def _string_of(code: int) -> str:
    if code in _ERR_NAMES:
        return _ERR_NAMES[code][1]
    u = _user()
    return u.strings.get(code, "") if code in u.class_of else "unknown error"


@functools.total_ordering
class Exception(_BgsimError, RuntimeError):  # noqa: A001 - the name mpi4py uses
    """An MPI error (``mpi4py.MPI.Exception``; a ``RuntimeError`` as there,
    and a ``bgsim.BgsimError``). It compares, hashes and converts as its
    error code; its text is the code's string, and the detail bgsim gives
    where it raises one."""

    def __init__(self, ierr: int = SUCCESS, detail: str = ""):
        ierr = int(ierr)
        self.error_code = ERR_UNKNOWN if ierr < SUCCESS else ierr
        text = _string_of(self.error_code)
        if detail:
            name = _ERR_NAMES.get(self.error_code, ("MPI_ERR_UNKNOWN",))[0]
            text = f"{name}: {text} ({detail})"
        super().__init__(text)

    def Get_error_code(self) -> int:
        return self.error_code

    def Get_error_class(self) -> int:
        return _class_of(self.error_code)

    def Get_error_string(self) -> str:
        return _string_of(self.error_code)

    @property
    def error_class(self) -> int:
        return self.Get_error_class()

    @property
    def error_string(self) -> str:
        return self.Get_error_string()

    def __int__(self) -> int:
        return self.error_code

    def __index__(self) -> int:
        return self.error_code

    def __bool__(self) -> bool:
        return self.error_code != SUCCESS

    def __hash__(self) -> int:
        return hash(self.error_code)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (int, Exception)):
            return self.error_code == int(other)
        return NotImplemented

    def __lt__(self, other: object) -> bool:
        if isinstance(other, (int, Exception)):
            return self.error_code < int(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"MPI.Exception({self.error_code})"


def Get_error_string(errorcode: int) -> str:
    return _string_of(int(errorcode))


def Get_error_class(errorcode: int) -> int:
    return _class_of(int(errorcode))


def Add_error_class() -> int:
    """A new error class of the calling process (no string yet)."""
    u = _user()
    u.last += 1
    u.class_of[u.last] = u.last
    u.codes[u.last] = set()
    return u.last


def Add_error_code(errorclass: int) -> int:
    """A new error code of `errorclass` (predefined or the process's own)."""
    u = _user()
    errorclass = int(errorclass)
    if errorclass not in _ERR_NAMES and errorclass not in u.codes:
        raise Exception(ERR_ARG, f"Add_error_code: {errorclass} is not an error class")
    u.last += 1
    u.class_of[u.last] = errorclass
    if errorclass in u.codes:
        u.codes[errorclass].add(u.last)
    return u.last


def Add_error_string(errorcode: int, string: str) -> None:
    u = _user()
    if int(errorcode) not in u.class_of:
        raise Exception(ERR_ARG, f"Add_error_string: {errorcode} is not an error class or code this process added")
    u.strings[int(errorcode)] = str(string)


def Remove_error_string(errorcode: int) -> None:
    u = _user()
    if int(errorcode) not in u.class_of:
        raise Exception(ERR_ARG, f"Remove_error_string: {errorcode} is not an error class or code this process added")
    u.strings.pop(int(errorcode), None)


def Remove_error_code(errorcode: int) -> None:
    """Removes an error code the process added (once its string is removed)."""
    u, code = _user(), int(errorcode)
    if code not in u.class_of or code in u.codes:
        raise Exception(ERR_ARG, f"Remove_error_code: {code} is not an error code this process added")
    if code in u.strings:
        raise Exception(ERR_ARG, f"Remove_error_code: {code} still has a string (Remove_error_string first)")
    cls = u.class_of.pop(code)
    if cls in u.codes:
        u.codes[cls].discard(code)


def Remove_error_class(errorclass: int) -> None:
    """Removes an error class the process added (once its codes and string are removed)."""
    u, cls = _user(), int(errorclass)
    if cls not in u.codes:
        raise Exception(ERR_ARG, f"Remove_error_class: {cls} is not an error class this process added")
    if u.codes[cls] or cls in u.strings:
        raise Exception(ERR_ARG, f"Remove_error_class: {cls} still has codes or a string")
    del u.codes[cls]
    del u.class_of[cls]


def last_used_code() -> int:
    """The calling process's MPI_LASTUSEDCODE."""
    return _user().last


def _guard(cls: type, names: "tuple[str, ...]", is_null: Any, err: int, what: str) -> None:
    """Makes `cls`'s methods `names` raise MPI.Exception(`err`) when called
    on a null handle (`is_null(self)`), as MPI does for MPI_*_NULL."""
    for name in names:
        f = getattr(cls, name)

        def guarded(self: Any, *args: Any, _f: Any = f, _name: str = name, **kw: Any) -> Any:
            if is_null(self):
                raise Exception(err, f"{_name} on {what}")
            return _f(self, *args, **kw)

        setattr(cls, name, functools.wraps(f)(guarded))
