#!/usr/bin/env python3
"""Machine code of the kernels in an NVIDIA Vulkan pipeline cache, with each instruction's scheduling bits.

NVIDIA's driver exposes no internal representation through VK_KHR_pipeline_executable_properties, but the
pipeline cache trireme saves (TRIREME_CACHE_DIR/vulkan-10de-*.pipelines) holds zstd frames whose contents are
"NVuc" containers with the raw Hopper/Ampere instruction stream. This finds them, disassembles each with
nvdisasm in raw mode, and appends the control bits of every instruction (Volta and later): stall cycles,
yield, the scoreboard it sets on write (wN) or read (rN), and the scoreboards it waits for (WAIT[...]).
A WAIT on a load's scoreboard is where that load's latency is paid.

Needs the zstandard module (pip) or the zstd command, and nvdisasm (the GPU machine has none: `pip download nvidia-cuda-nvdisasm` here and
unzip it, or pass Triton's copy). Usage: tools/vk_sass.py CACHE_FILE OUT_DIR [--nvdisasm PATH] [--arch SM90]
Writes OUT_DIR/kernel-N.sass per kernel with HMMA/FFMA code found.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def frames(blob):
    """Every zstd frame in the cache file that decompresses, as bytes. Entries sit back to back with headers
    between them, so each frame is cut at the next one; the zstandard module (PyPI) takes such a frame, the zstd
    command often reports an unsupported format, so it is only the fallback."""
    starts = [m.start() for m in re.finditer(re.escape(ZSTD_MAGIC), blob)]
    chunks = [blob[s:e] for s, e in zip(starts, starts[1:] + [len(blob)])]
    try:
        import zstandard
    except ImportError:
        zstandard = None
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "f.zst"), os.path.join(tmp, "f.raw")
        for chunk in chunks:
            if zstandard:
                try:
                    yield zstandard.ZstdDecompressor().decompressobj().decompress(chunk)
                except zstandard.ZstdError:
                    pass
                continue
            with open(src, "wb") as f:
                f.write(chunk)
            if subprocess.run(["zstd", "-d", "-f", "-q", src, "-o", dst], capture_output=True).returncode == 0:
                with open(dst, "rb") as f:
                    yield f.read()


def control(hi):
    """The scheduling bits of a Volta+ instruction from its upper 64-bit word."""
    c = hi >> 41
    stall, yld, wb, rb, wait = c & 0xF, (c >> 4) & 1, (c >> 5) & 7, (c >> 8) & 7, (c >> 11) & 0x3F
    tag = "S%02d%s" % (stall, "Y" if yld == 0 else " ")
    if wb != 7:
        tag += " w%d" % wb
    if rb != 7:
        tag += " r%d" % rb
    if wait:
        tag += " WAIT[%s]" % ",".join(str(i) for i in range(6) if wait >> i & 1)
    return tag


def annotate(text):
    out, prev = [], None
    for line in text.splitlines():
        m = re.search(r"/\* (0x[0-9a-f]{16}) \*/\s*$", line)
        if m and prev is not None:
            code = re.sub(r"/\* 0x[0-9a-f]{16} \*/", "", prev).rstrip()
            out.append("%-96s %s" % (code, control(int(m.group(1), 16))))
            prev = None
        elif re.search(r"/\*[0-9a-f]{4,}\*/", line):
            prev = line
        elif not m:
            out.append(line)
    return "\n".join(out) + "\n"


def disassemble(raw, nvdisasm, arch):
    """The code in one decompressed frame: the alignment at which nvdisasm decodes math instructions."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "code.bin")
        for skip in (0, 4, 8, 12):
            body = raw[skip:]
            with open(path, "wb") as f:
                f.write(body[: len(body) // 16 * 16])
            r = subprocess.run([nvdisasm, "-hex", "-b", arch, path], capture_output=True, text=True)
            if re.search(r"\b(HMMA|FFMA|HFMA2)\b", r.stdout):
                return r.stdout
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache")
    ap.add_argument("out")
    ap.add_argument("--nvdisasm", default="nvdisasm")
    ap.add_argument("--arch", default="SM90")
    a = ap.parse_args()
    with open(a.cache, "rb") as f:
        blob = f.read()
    os.makedirs(a.out, exist_ok=True)
    n = 0
    for raw in frames(blob):
        text = disassemble(raw, a.nvdisasm, a.arch)
        if not text:
            continue
        regs = re.search(r"Register count=(\d+)", text)
        path = os.path.join(a.out, "kernel-%d.sass" % n)
        with open(path, "w") as f:
            f.write(annotate(text))
        print("%s: %d instructions, %s registers" % (path, text.count("/*") // 2, regs.group(1) if regs else "?"))
        n += 1
    if n == 0:
        print("no kernel code found in %s" % a.cache, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
