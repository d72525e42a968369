#!/usr/bin/env python3
"""Which code pages a stream-bench server runs: the tool behind the README's
"The call path's code pages" (not part of the bench; needs valgrind, nm).

    codepages.py measure BIN IMPL OUT [BYTES]   # IMPL: rubbo or tonic; BYTES: 16 MiB
    codepages.py order BIN OUT.order OUT1 [OUT2 ...]

`measure` runs BIN's server role (IMPL) under callgrind with tonic's client role
downloading BYTES (64 KiB messages, both windows 8 MiB), dumps the counters when the
server prints its port ("start") and when the client has its result ("call"), and
prints how many 4 KiB pages and 64 KiB windows of BIN's text each phase ran (windows:
the mean over the 16 alignments ASLR may give the text; the kernel maps a 64 KiB
window around each instruction-fetch fault). `order` writes, for lld's
`--symbol-ordering-file`, the symbols of every function the measured runs OUT1, ...
executed, start phases first, in the order given.
"""
import bisect
import collections
import glob
import os
import re
import subprocess
import sys

MIB = 1 << 20


def run(binp, impl, out, size):
    for f in glob.glob(out + ".cg*"):
        os.remove(f)
    env = dict(os.environ, RUBBO_STREAM_BENCH_TONIC_WINDOW=str(8 * MIB),
               RUBBO_STREAM_BENCH_BYTES=str(size), RUBBO_STREAM_BENCH_TIMEOUT_SECS="120")
    srv = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--dump-instr=yes",
         "--callgrind-out-file=" + out + ".cg", binp],
        env=dict(env, RUBBO_STREAM_BENCH_ROLE="server", RUBBO_STREAM_BENCH_IMPL=impl),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = srv.stdout.readline().split()[1]
    ctl = lambda *a: subprocess.run(["callgrind_control", *a, str(srv.pid)],
                                    stdout=subprocess.DEVNULL, check=True)
    ctl("-d")  # part 1: start
    ctl("-z")
    cl = subprocess.Popen(
        [binp], env=dict(env, RUBBO_STREAM_BENCH_ROLE="client", RUBBO_STREAM_BENCH_IMPL="tonic",
                         RUBBO_STREAM_BENCH_WORKLOAD="download", RUBBO_STREAM_BENCH_PORT=port),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert cl.stdout.readline().startswith("warm")
    cl.stdin.write("go\n")
    cl.stdin.flush()
    assert cl.stdout.readline().startswith("result")
    ctl("-d")  # part 2: call
    cl.stdin.close()
    cl.wait(timeout=60)
    srv.stdin.close()
    srv.wait(timeout=120)


def parse(path, binp):
    """Function name -> instruction addresses (file virtual addresses) run in BIN."""
    names, obs = {}, {}
    ob = fn = None
    last = 0
    out = collections.defaultdict(set)
    for line in open(path, errors="replace"):
        m = re.match(r"(c?)(ob|fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            table = obs if m.group(2) == "ob" else names
            if m.group(4):
                table[m.group(3)] = m.group(4)
            if not m.group(1):
                if m.group(2) == "ob":
                    ob = obs.get(m.group(3))
                else:
                    fn = names.get(m.group(3))
            continue
        tok = line.split()[0] if line.strip() else ""
        if tok.startswith("0x"):
            last = int(tok, 16)
        elif tok[:1] in ("+", "-") and tok[1:].isdigit():
            last += int(tok)
        elif tok != "*":
            continue
        if ob and os.path.basename(binp) in ob:
            out[fn].add(last)
    return out


def addrs(d):
    return {a for s in d.values() for a in s}


def measure(binp, impl, out, size):
    run(binp, impl, out, size)
    start, call = addrs(parse(out + ".cg.1", binp)), addrs(parse(out + ".cg.2", binp))
    pages = {a >> 12 for a in start}
    print(f"4 KiB pages: start {len(pages)}, call (new) {len({a >> 12 for a in call} - pages)}")
    w = []
    for off in range(0, 1 << 16, 1 << 12):
        ws, wc = {(a + off) >> 16 for a in start}, {(a + off) >> 16 for a in call}
        w.append((len(ws), len(wc - ws), len(ws | wc)))
    for i, what in enumerate(("start", "call (new)", "total")):
        v = [x[i] for x in w]
        print(f"64 KiB windows, {what}: {sum(v) / len(v):.1f} ({min(v)}-{max(v)})")


def order(binp, dst, outs):
    syms = []
    nm = subprocess.run(["nm", "-S", "--defined-only", binp], capture_output=True, text=True)
    for line in nm.stdout.splitlines():
        p = line.split()
        if len(p) == 4 and p[2] in "tT":
            syms.append((int(p[0], 16), int(p[1], 16), p[3]))
    syms.sort()
    starts = [s[0] for s in syms]
    seen, names = set(), []
    for part in ("1", "2"):
        for out in outs:
            for fn_addrs in parse(out + ".cg." + part, binp).values():
                for a in sorted(fn_addrs):
                    i = bisect.bisect_right(starts, a) - 1
                    if i >= 0 and syms[i][0] <= a < syms[i][0] + max(syms[i][1], 1):
                        if syms[i][2] not in seen:
                            seen.add(syms[i][2])
                            names.append(syms[i][2])
    with open(dst, "w") as f:
        f.write("\n".join(names) + "\n")
    print(f"{len(names)} symbols")


if __name__ == "__main__":
    if sys.argv[1] == "measure":
        measure(sys.argv[2], sys.argv[3], sys.argv[4],
                int(sys.argv[5]) if len(sys.argv) > 5 else 16 * MIB)
    elif sys.argv[1] == "order":
        order(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        sys.exit(__doc__)
