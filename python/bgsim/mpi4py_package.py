"""The simulated ``mpi4py`` package a program imports under bgsim: the
package itself (one for the run, what a rank sets or deletes on it that
rank's alone), ``mpi4py.rc``, and a rank's import of ``mpi4py.MPI``, which
reads the options and initializes the rank's MPI as mpi4py's import does.
`installed()` puts it in place for a run."""

from __future__ import annotations

import importlib.util
import os
import sys
import types
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import greenlet

from . import MPI as _shim
from .errors import ArgumentTypeError, RankExit, UsageError
from .mpishim.constants import _MPI4PY_VERSION
from .mpishim.world import _imported
from .runtime import rank_own as _rank_own


#: mpi4py.rc's options and their defaults (mpi4py 4.1's).
_RC_DEFAULTS = {"initialize": True, "threads": True, "thread_level": "multiple", "finalize": None,
                "fast_reduce": True, "recv_mprobe": True, "irecv_bufsz": 32768, "errors": "exception"}


class _Rc:
    """``mpi4py.rc``: the runtime options a rank's import of mpi4py.MPI
    reads. Each rank's values are its own, as a process of its own has
    them (one rank setting ``mpi4py.rc.threads = False`` leaves the others'
    as they were); ``mpi4py.rc(name=value, ...)`` sets several."""

    __slots__ = ()

    def __init__(self, **options: Any) -> None:
        self(**options)

    def _mine(self) -> Dict[str, Any]:
        return _rank_own("mpi4py_rc", lambda: dict(_RC_DEFAULTS), _OUTSIDE_RC)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._mine()[name]
        except KeyError:
            raise AttributeError(f"mpi4py.rc has no option {name!r} (options: {', '.join(_RC_DEFAULTS)})") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _RC_DEFAULTS:
            raise ArgumentTypeError(f"mpi4py.rc: unknown option {name!r} (options: {', '.join(_RC_DEFAULTS)})")
        self._mine()[name] = value

    def __call__(self, **options: Any) -> None:
        for name in options:
            if name not in _RC_DEFAULTS:
                raise ArgumentTypeError(f"mpi4py.rc: unknown option {name!r} (options: {', '.join(_RC_DEFAULTS)})")
        for name, value in options.items():
            setattr(self, name, value)

    def __dir__(self) -> List[str]:
        return list(_RC_DEFAULTS)

    def __repr__(self) -> str:
        return "<mpi4py.rc>"


#: The options' values outside a rank.
_OUTSIDE_RC = dict(_RC_DEFAULTS)
#: The environment variables that set them.
_RC_ENV = {name: "MPI4PY_RC_" + name.upper() for name in _RC_DEFAULTS}


def _getenvs(names: Sequence[str]) -> List[Optional[str]]:
    """``[os.environ.get(name) for name in names]`` in a tenth of the time
    (every rank's import of MPI reads twelve): CPython keeps the
    environment as a dict of encoded keys and values."""
    data = getattr(os.environ, "_data", None)
    if not isinstance(data, dict):
        return [os.environ.get(name) for name in names]
    keys = _ENCODED.get(names)
    if keys is None:
        keys = _ENCODED[names] = [os.environ.encodekey(name) for name in names]
    got = [data.get(k) for k in keys]
    return [None if v is None else os.environ.decodevalue(v) for v in got] if any(got) else got


_ENCODED: Dict[Any, List[Any]] = {}

_TRUE, _FALSE = ("true", "yes", "on", "y", "1"), ("false", "no", "off", "n", "0", "")


def _rc_option(rc: Optional[_Rc], values: Dict[str, Any], env: Dict[str, Optional[str]], name: str) -> Any:
    """Option `name` as a rank's import of mpi4py.MPI sees it: the
    environment's ``MPI4PY_RC_NAME`` (`env`; written back into `rc`) over
    `rc`'s `values`."""
    default = _RC_DEFAULTS[name]
    text = env[name]
    if text is None:
        return values.get(name, default)
    if text.strip(" \t").isdigit() and type(default) is int:
        value: Any = int(text)
    elif text.lower() in _TRUE or text.lower() in _FALSE:
        value = text.lower() in _TRUE
    else:
        value = text.lower()
    if rc is not None:
        setattr(rc, name, value)
    return value


def _rank_imports_mpi() -> None:
    """What importing mpi4py.MPI does in a rank, once per rank, as mpi4py
    does it at import: reads mpi4py.rc (the environment's MPI4PY_RC_*
    first; an unexpected value is warned about and its default kept), then
    initializes MPI at the thread level asked for (unless ``initialize``
    is false: then MPI.Init does) with the error handler ``errors`` names
    on COMM_SELF, COMM_WORLD and what is made from them, and takes
    MPI4PY_PICKLE_PROTOCOL / MPI4PY_PICKLE_THRESHOLD."""
    ctx = getattr(greenlet.getcurrent(), "ctx", None)
    if ctx is None or ctx.state.get("mpi_imported"):
        return
    ctx.state["mpi_imported"] = True
    rc = sys.modules.get("mpi4py.rc")
    rc = rc if isinstance(rc, _Rc) else None
    # (The rank's values if it set any; not made for a rank that did not.)
    values = _RC_DEFAULTS if rc is None else ctx.state.get("mpi4py_rc", _RC_DEFAULTS)
    texts = _getenvs(_ENV_NAMES)
    if values is _RC_DEFAULTS and not any(texts):
        # Nothing set: the defaults (every rank of most programs).
        _imported(True, _shim.THREAD_MULTIPLE, _shim.ERRORS_RETURN)
        return
    env = dict(zip(_RC_DEFAULTS, texts))
    _imported(*_rc_settings({name: _rc_option(rc, values, env, name) for name in _RC_DEFAULTS}))
    for (_, attr), text in zip(_PICKLE_ENV, texts[len(_RC_DEFAULTS):]):
        if text is not None:
            try:
                setattr(_shim.pickle, attr, int(text))
            except ValueError:
                raise UsageError(f"MPI4PY_PICKLE_{attr}={text!r}: expecting an integer") from None


_PICKLE_ENV = (("MPI4PY_PICKLE_PROTOCOL", "PROTOCOL"), ("MPI4PY_PICKLE_THRESHOLD", "THRESHOLD"))
#: What a rank's import of MPI reads from the environment, in this order.
_ENV_NAMES = tuple(_RC_ENV[name] for name in _RC_DEFAULTS) + tuple(var for var, _ in _PICKLE_ENV)
_THREAD_LEVELS = {"single": _shim.THREAD_SINGLE, "funneled": _shim.THREAD_FUNNELED,
                  "serialized": _shim.THREAD_SERIALIZED, "multiple": _shim.THREAD_MULTIPLE}
_ERRHANDLERS = {"exception": _shim.ERRORS_RETURN, "default": _shim.ERRORS_ARE_FATAL, "abort": _shim.ERRORS_ABORT,
                "fatal": _shim.ERRORS_ARE_FATAL}


def _rc_settings(got: Dict[str, Any]) -> Tuple[bool, int, Any]:
    """(initialize, thread level, error handler) from the options' values;
    an unexpected value is warned about and its default taken, as mpi4py
    does."""
    def unexpected(name: str) -> None:
        warnings.warn(f"mpi4py.rc.{name}: unexpected value {got[name]!r}", RuntimeWarning, stacklevel=5)

    flags = {}
    for name in ("initialize", "threads", "finalize", "fast_reduce", "recv_mprobe"):
        v = got[name]
        if v is None and name == "finalize":
            continue
        if v in (True, "yes") or v in (False, "no"):
            flags[name] = v in (True, "yes")
        else:
            unexpected(name)
    if got["thread_level"] not in _THREAD_LEVELS:
        unexpected("thread_level")
    if not (type(got["irecv_bufsz"]) is int and got["irecv_bufsz"] >= 0):
        unexpected("irecv_bufsz")
    if got["errors"] not in _ERRHANDLERS:
        unexpected("errors")
    level = _THREAD_LEVELS.get(got["thread_level"], _shim.THREAD_MULTIPLE) if flags.get("threads", True) \
        else _shim.THREAD_SINGLE
    return flags.get("initialize", True), level, _ERRHANDLERS.get(got["errors"], _shim.ERRORS_RETURN)


#: Where the simulated package's submodules (mpi4py.util) are.
_MPI4PY_PATHS = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "_mpi4py")]


def _get_config() -> Dict[str, str]:
    return {"mpi": "bgsim (simulated)", "mpi4py": _MPI4PY_VERSION}


def _get_include() -> str:
    return ""


#: A package attribute a rank deleted.
_DELETED = object()


class _Package(types.ModuleType):
    """The simulated ``mpi4py`` package, one for the run. What a rank sets
    or deletes on it (``del mpi4py.rc``) is that rank's alone, as in a
    process of its own. ``MPI`` is looked up every time, never kept: a
    rank's first lookup is its import of mpi4py.MPI (`_rank_imports_mpi`)."""

    def __getattr__(self, name: str) -> Any:
        ctx = getattr(greenlet.getcurrent(), "ctx", None)
        own = _OUTSIDE_PACKAGE if ctx is None else ctx.state.get("mpi4py_package")
        if own and name in own:
            got = own[name]
            if got is _DELETED:
                raise AttributeError(f"module 'mpi4py' has no attribute {name!r}")
            return got
        if name == "MPI":
            _rank_imports_mpi()
            return _shim
        got = _PACKAGE_ATTRS.get(name, _DELETED)
        if got is not _DELETED:
            return got
        sub = sys.modules.get("mpi4py." + name)  # a submodule another rank imported first
        if sub is not None:
            return sub
        raise AttributeError(f"module 'mpi4py' has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("__"):
            super().__setattr__(name, value)
        elif name != "MPI":  # set by the import system after loading mpi4py.MPI
            _rank_own("mpi4py_package", dict, _OUTSIDE_PACKAGE)[name] = value

    def __delattr__(self, name: str) -> None:
        if name.startswith("__"):
            super().__delattr__(name)
            return
        getattr(self, name)  # AttributeError if there is none
        _rank_own("mpi4py_package", dict, _OUTSIDE_PACKAGE)[name] = _DELETED


_RC = _Rc()
#: The package's attributes until a rank sets or deletes one.
_PACKAGE_ATTRS = {"rc": _RC, "get_config": _get_config, "get_include": _get_include}
#: What is set or deleted outside a rank.
_OUTSIDE_PACKAGE: Dict[str, Any] = {}


def _package() -> _Package:
    pkg = _Package("mpi4py", "bgsim's simulated mpi4py")
    pkg.__path__ = _MPI4PY_PATHS
    pkg.__version__ = _MPI4PY_VERSION
    return pkg


class _Finder:
    """Imports ``mpi4py.MPI`` (the simulated MPI) when a rank imports it by
    name (``import mpi4py.MPI``, ``importlib.import_module``), the rank's
    import done then (`_rank_imports_mpi`); with ``bgsim run`` each rank's
    sys.modules has its own entry (`runtime._RankModules`)."""

    def __init__(self) -> None:
        self.spec = importlib.util.spec_from_loader("mpi4py.MPI", self)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        return self.spec if name == "mpi4py.MPI" else None

    def create_module(self, spec: Any) -> Any:
        _rank_imports_mpi()
        self.shim_spec = _shim.__spec__
        return _shim

    def exec_module(self, module: Any) -> None:
        # The import system gave bgsim.MPI this import's spec: its own back.
        _shim.__spec__ = self.shim_spec


class installed:
    """Makes ``import mpi4py`` / ``from mpi4py import MPI`` give the
    simulated MPI for the duration of a run, and a rank's ``os._exit(N)``
    end the run with status N (it would end the whole simulator, silently)."""

    def __enter__(self) -> "installed":
        self.os_exit = os._exit

        def rank_exit(code: int) -> None:
            ctx = getattr(greenlet.getcurrent(), "ctx", None)
            if ctx is None:
                self.os_exit(code)
            raise RankExit(ctx.rank, code)

        os._exit = rank_exit
        self.saved = {k: v for k, v in sys.modules.items() if k == "mpi4py" or k.startswith("mpi4py.")}
        for k in self.saved:
            del sys.modules[k]
        _OUTSIDE_PACKAGE.clear()
        sys.modules["mpi4py"] = _package()
        sys.modules["mpi4py.rc"] = _RC
        self.finder = _Finder()
        sys.meta_path.insert(0, self.finder)
        return self

    def __exit__(self, *exc):
        os._exit = self.os_exit
        sys.meta_path.remove(self.finder)
        for k in [k for k in sys.modules if k == "mpi4py" or k.startswith("mpi4py.")]:
            del sys.modules[k]
        sys.modules.update(self.saved)
        return False
