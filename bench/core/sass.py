"""Reading back what a kernel compiled to: cuobjdump's SASS, parsed into
per-function instruction lists, and the body of a kernel's timed loop."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

_FUNCTION = re.compile(r"^\s*Function : (\S+)\s*$")
# /*0130*/   @!P0 BRA 0x990 ;
_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*([^;]*);")


@dataclass(frozen=True)
class Instruction:
    address: int
    opcode: str          # with modifiers: "MUFU.SIN", "ISETP.GE.AND"
    operands: str

    @property
    def mnemonic(self) -> str:
        """The opcode without modifiers, except MUFU whose modifier names the function."""
        head, _, rest = self.opcode.partition(".")
        return f"{head}.{rest.split('.')[0]}" if head == "MUFU" and rest else head


def _tool(name: str) -> str:
    """A CUDA binary tool from PATH, or from NVIDIA's PyPI package beside this Python."""
    found = shutil.which(name)
    if found:
        return found
    for base in map(Path, sys.path):
        candidate = base / "nvidia" / "cu13" / "bin" / name
        if candidate.exists():
            return str(candidate)
    raise RuntimeError(f"{name} not found: install the CUDA toolkit or pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")


def dump(cubin: Path) -> str:
    """cuobjdump's SASS listing of ``cubin``, kept beside it (``.sass``): disassembling takes about half
    a second, which the run spends in its compile threads (cuda.compile_all) instead of a GEMM's."""
    kept = cubin.with_suffix(".sass")
    if kept.exists():
        return kept.read_text()
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(_tool("nvdisasm")).parent), os.environ.get("PATH", "")])}
    proc = subprocess.run([_tool("cuobjdump"), "-sass", str(cubin)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"cuobjdump -sass {cubin.name} failed: {proc.stderr.strip()}")
    tmp = kept.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")     # dumps may run in parallel
    tmp.write_text(proc.stdout)
    tmp.replace(kept)
    return proc.stdout


def disassemble(cubin: Path) -> dict[str, list[Instruction]]:
    """Every function's SASS in ``cubin``, by name."""
    functions: dict[str, list[Instruction]] = {}
    current = None
    for line in dump(cubin).splitlines():
        m = _FUNCTION.match(line)
        if m:
            current = functions.setdefault(m.group(1), [])
            continue
        m = _INSTRUCTION.match(line)
        if m and current is not None:
            current.append(Instruction(int(m.group(1), 16), m.group(3), m.group(4).strip()))
    return functions


def timed_loop(instructions: list[Instruction]) -> list[Instruction]:
    """The body of the kernel's loop between its two clock reads: from the target
    of the backward branch that closes it to that branch."""
    clocks = [i.address for i in instructions if "SR_CLOCKLO" in i.operands]
    if len(clocks) < 2:
        raise ValueError("the kernel reads the clock fewer than twice")
    start, end = clocks[0], clocks[1]
    for ins in instructions:
        if ins.mnemonic == "BRA" and start < ins.address < end:
            m = re.match(r"0x([0-9a-f]+)", ins.operands)
            if m and int(m.group(1), 16) < ins.address:
                target = int(m.group(1), 16)
                return [i for i in instructions if target <= i.address <= ins.address]
    raise ValueError("no backward branch between the clock reads")


WGMMA = ("HGMMA", "QGMMA")     # wgmma: TF32 and BF16 operands; FP8's
MMA = ("HMMA", *WGMMA)


def mma_loop(instructions: list[Instruction]) -> list[Instruction] | None:
    """The innermost loop that issues tensor-core instructions (a kernel's main loop): the shortest
    run from a backward branch's target to the branch holding a tensor-core instruction (MMA); None if every
    such instruction is outside a loop (unrolled)."""
    loops = []
    for ins in instructions:
        m = re.match(r"0x([0-9a-f]+)", ins.operands) if ins.mnemonic == "BRA" else None
        if m and int(m.group(1), 16) < ins.address:
            body = [i for i in instructions if int(m.group(1), 16) <= i.address <= ins.address]
            if any(i.mnemonic in MMA for i in body):
                loops.append(body)
    return min(loops, key=len, default=None)


def histogram(instructions: list[Instruction]) -> Counter:
    return Counter(i.mnemonic for i in instructions)
