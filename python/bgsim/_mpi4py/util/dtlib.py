"""``mpi4py.util.dtlib`` on the simulated MPI: numpy dtypes to MPI datatypes
and back (predefined types, structured dtypes as structs, subarrays)."""

from __future__ import annotations

from typing import Any

import numpy as np

from bgsim.errors import UsageError
from bgsim.mpishim import datatypes as _dt


def from_numpy_dtype(dtype: Any) -> "_dt.Datatype":
    """The MPI datatype of a numpy dtype (a new datatype for structured or
    shaped dtypes; commit it before use)."""
    dtype = np.dtype(dtype)
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return from_numpy_dtype(base).Create_subarray(list(shape), list(shape), [0] * len(shape))
    if dtype.fields:
        names = dtype.names
        blocks = [1] * len(names)
        disps = [dtype.fields[n][1] for n in names]
        types = [from_numpy_dtype(dtype.fields[n][0]) for n in names]
        st = _dt.Datatype.Create_struct(blocks, disps, types)
        return st.Create_resized(0, dtype.itemsize) if st.extent != dtype.itemsize else st
    named = _dt._NP_TO_DT.get(dtype.str) or _dt._TYPEDICT.get(dtype.char)
    if named is None:
        raise UsageError(f"cannot map {dtype!r} to an MPI datatype")
    return named


def to_numpy_dtype(datatype: "_dt.Datatype") -> np.dtype:
    """The numpy dtype of an MPI datatype."""
    if datatype.is_named:
        return np.dtype(datatype.np)
    oldtype, combiner, params = datatype.decode()
    if combiner == "DUP":
        return to_numpy_dtype(oldtype)
    if combiner == "CONTIGUOUS":
        return np.dtype((to_numpy_dtype(oldtype), (params["count"],)))
    if combiner == "SUBARRAY" and list(params["subsizes"]) == list(params["sizes"]):
        return np.dtype((to_numpy_dtype(oldtype), tuple(params["sizes"])))
    if combiner == "RESIZED" and params["lb"] == 0:
        inner = to_numpy_dtype(oldtype)
        if inner.fields:
            return np.dtype({"names": list(inner.names), "formats": [inner.fields[n][0] for n in inner.names],
                             "offsets": [inner.fields[n][1] for n in inner.names], "itemsize": params["extent"]})
        return np.dtype({"names": ["f0"], "formats": [inner], "offsets": [0], "itemsize": params["extent"]})
    if combiner == "STRUCT":
        formats = []
        for b, t in zip(params["blocklengths"], params["datatypes"]):
            f = to_numpy_dtype(t)
            formats.append(f if b == 1 else np.dtype((f, (b,))))
        return np.dtype({"names": [f"f{i}" for i in range(len(formats))], "formats": formats,
                         "offsets": list(params["displacements"]), "itemsize": datatype.extent})
    raise UsageError(f"cannot map {datatype!r} ({combiner}) to a numpy dtype")
