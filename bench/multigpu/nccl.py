"""NCCL itself, through ctypes: the library of NVIDIA's wheel (nvidia-nccl-cu13) or of $NCCL_HOME,
so that the project and the nccl-tests peer (built against the same folder) run one NCCL.

Only what the collectives benchmark calls is bound. Every call's result is checked: a failed
call raises NcclError with NCCL's own words, never a silent wrong figure."""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

# ncclDataType_t and ncclRedOp_t, nccl.h
FLOAT32 = 7
SUM, MAX = 0, 2
UNIQUE_ID_BYTES = 128


class NcclError(RuntimeError):
    """An NCCL call that did not return ncclSuccess."""


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


def home() -> Path:
    """The folder holding NCCL's include/ and lib/: $NCCL_HOME, else the nvidia-nccl wheel's."""
    if os.environ.get("NCCL_HOME"):
        return Path(os.environ["NCCL_HOME"])
    try:
        import nvidia.nccl
    except ImportError as e:
        raise NcclError("NCCL not found: install NVIDIA's wheel (pip install nvidia-nccl-cu13) or set "
                        "NCCL_HOME to a folder holding lib/libnccl.so.2") from e
    return Path(next(iter(nvidia.nccl.__path__)))


_LIB = None


def lib() -> ctypes.CDLL:
    global _LIB
    if _LIB is None:
        path = home() / "lib" / "libnccl.so.2"
        if not path.exists():
            raise NcclError(f"{path} does not exist: NCCL_HOME must hold lib/libnccl.so.2")
        _LIB = ctypes.CDLL(str(path))
        _LIB.ncclGetErrorString.restype = ctypes.c_char_p
        _LIB.ncclCommInitRank.argtypes = [ctypes.c_void_p, ctypes.c_int, UniqueId, ctypes.c_int]
        size, ptr, i32 = ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int
        # (send, recv, count, type[, op | root], comm, stream)
        _LIB.ncclAllReduce.argtypes = [ptr, ptr, size, i32, i32, ptr, ptr]
        _LIB.ncclReduceScatter.argtypes = [ptr, ptr, size, i32, i32, ptr, ptr]
        _LIB.ncclAllGather.argtypes = [ptr, ptr, size, i32, ptr, ptr]
        _LIB.ncclBroadcast.argtypes = [ptr, ptr, size, i32, i32, ptr, ptr]
        _LIB.ncclSend.argtypes = [ptr, size, i32, i32, ptr, ptr]
        _LIB.ncclRecv.argtypes = [ptr, size, i32, i32, ptr, ptr]
        _LIB.ncclCommDestroy.argtypes = [ptr]
        if has_all_to_all(_LIB):
            _LIB.ncclAlltoAll.argtypes = [ptr, ptr, size, i32, ptr, ptr]
    return _LIB


def has_all_to_all(library=None) -> bool:
    """Whether NCCL has its own all-to-all (2.28 on); before it, nccl-tests and this project group a
    send and a receive for every rank."""
    return hasattr(library or lib(), "ncclAlltoAll")


def _check(result: int, what: str) -> None:
    if result != 0:
        raise NcclError(f"{what}: {lib().ncclGetErrorString(result).decode()} (ncclResult_t {result})")


def version() -> str:
    v = ctypes.c_int()
    _check(lib().ncclGetVersion(ctypes.byref(v)), "ncclGetVersion")
    code = v.value          # NCCL_VERSION(X, Y, Z) = X * 10000 + Y * 100 + Z since 2.9
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}"


def unique_id() -> bytes:
    uid = UniqueId()
    _check(lib().ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
    return bytes(uid)           # all 128 bytes: uid.internal would stop at the first NUL


class Comm:
    """One rank's communicator; its collectives enqueue on ``stream`` (a cudaStream_t as int)."""

    def __init__(self, nranks: int, uid: bytes, rank: int, stream: int):
        self.handle = ctypes.c_void_p()
        self.stream = ctypes.c_void_p(stream)
        self.rank, self.nranks = rank, nranks
        _check(lib().ncclCommInitRank(ctypes.byref(self.handle), nranks, UniqueId.from_buffer_copy(uid), rank),
               f"ncclCommInitRank (rank {rank} of {nranks})")

    def all_reduce(self, send: int, recv: int, count: int, dtype: int = FLOAT32, op: int = SUM) -> None:
        _check(lib().ncclAllReduce(send, recv, count, dtype, op, self.handle, self.stream), "ncclAllReduce")

    def reduce_scatter(self, send: int, recv: int, recv_count: int) -> None:
        _check(lib().ncclReduceScatter(send, recv, recv_count, FLOAT32, SUM, self.handle, self.stream),
               "ncclReduceScatter")

    def all_gather(self, send: int, recv: int, send_count: int) -> None:
        _check(lib().ncclAllGather(send, recv, send_count, FLOAT32, self.handle, self.stream), "ncclAllGather")

    def broadcast(self, send: int, recv: int, count: int, root: int) -> None:
        _check(lib().ncclBroadcast(send, recv, count, FLOAT32, root, self.handle, self.stream), "ncclBroadcast")

    def send_recv(self, send: int, recv: int, count: int, to: int, frm: int) -> None:
        """Send to ``to`` and receive from ``frm`` as one group (nccl-tests' sendrecv ring)."""
        _check(lib().ncclGroupStart(), "ncclGroupStart")
        _check(lib().ncclSend(send, count, FLOAT32, to, self.handle, self.stream), "ncclSend")
        _check(lib().ncclRecv(recv, count, FLOAT32, frm, self.handle, self.stream), "ncclRecv")
        _check(lib().ncclGroupEnd(), "ncclGroupEnd")

    def all_to_all(self, send: int, recv: int, per_rank: int) -> None:
        """``per_rank`` elements from each rank's part of ``send`` to every rank (part r to rank r),
        into the receiver's part of ``recv`` of the sender's rank: ncclAlltoAll where NCCL has it,
        else a group of sends and receives, as nccl-tests' alltoall_perf runs it."""
        if has_all_to_all():
            _check(lib().ncclAlltoAll(send, recv, per_rank, FLOAT32, self.handle, self.stream), "ncclAlltoAll")
            return
        _check(lib().ncclGroupStart(), "ncclGroupStart")
        for r in range(self.nranks):
            _check(lib().ncclSend(send + 4 * r * per_rank, per_rank, FLOAT32, r, self.handle, self.stream), "ncclSend")
            _check(lib().ncclRecv(recv + 4 * r * per_rank, per_rank, FLOAT32, r, self.handle, self.stream), "ncclRecv")
        _check(lib().ncclGroupEnd(), "ncclGroupEnd")

    def destroy(self) -> None:
        _check(lib().ncclCommDestroy(self.handle), "ncclCommDestroy")
