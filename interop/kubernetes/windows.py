#!/usr/bin/env python3
"""Reads the window lines of interop-load (`W <ms> ok=N fail=N who=N ...`).

  windows.py seen  FILE SINCE_MS WHO        exit 0 if WHO answered in a window after SINCE_MS
  windows.py first FILE SINCE_MS WHO        prints the ms of that first window (exit 1: none)
  windows.py gone  FILE SINCE_MS WHO N      exit 0 if the last N windows after SINCE_MS have no WHO
  windows.py fails FILE SINCE_MS            prints the failed calls in windows after SINCE_MS
  windows.py calls FILE SINCE_MS            prints the answered calls in windows after SINCE_MS
  windows.py who   FILE SINCE_MS            prints "who=count ..." summed over windows after SINCE_MS
"""
import sys


def windows(path, since):
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 3 or parts[0] != "W":
                continue
            ms = int(parts[1])
            if ms <= since:
                continue
            w = {"ms": ms, "ok": 0, "fail": 0, "by": {}}
            for p in parts[2:]:
                k, _, v = p.rpartition("=")
                if k == "ok":
                    w["ok"] = int(v)
                elif k == "fail":
                    w["fail"] = int(v)
                elif k:
                    w["by"][k] = int(v)
            out.append(w)
    return out


def main():
    cmd, path, since = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ws = windows(path, since)
    if cmd in ("seen", "first"):
        who = sys.argv[4]
        for w in ws:
            if w["by"].get(who, 0) > 0:
                if cmd == "first":
                    print(w["ms"])
                return 0
        return 1
    if cmd == "gone":
        who, n = sys.argv[4], int(sys.argv[5])
        last = ws[-n:]
        return 0 if len(last) == n and all(w["by"].get(who, 0) == 0 for w in last) else 1
    if cmd == "fails":
        print(sum(w["fail"] for w in ws))
        return 0
    if cmd == "calls":
        print(sum(w["ok"] for w in ws))
        return 0
    if cmd == "who":
        total = {}
        for w in ws:
            for k, v in w["by"].items():
                total[k] = total.get(k, 0) + v
        print(" ".join(f"{k}={v}" for k, v in sorted(total.items())))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
