#!/usr/bin/env python3
"""Interop cell 10 over Triple: compares the instance node a Rust tri provider wrote
(register-mode=instance) with a Java 3.3.6 tri provider's, as read by Java
(AppDiscoveryProbe nodes): with Triple configured both must advertise the same
MetadataService (`meta-v`) and the same `dubbo.metadata-service.url-params` (the
MetadataService V2 export on tri: protocol, own port, version, and the same keys in
the same order), and the tri endpoint.

  appdisc-v2-check.py RUST_NODES RUST_PORT JAVA_NODES JAVA_PORT

Prints one "PASS <check>" or "FAIL <check>: detail" line per check. The by-design
differences of appdisc-compare.py are not failed here either.
"""
import json
import sys

KNOWN_JAVA_ONLY = {"release", "logger", "service-name-mapping", "REGISTRY_CLUSTER", "revision"}
KNOWN_RUST_ONLY = {"rubbo"}
KNOWN_DIFFERENT = {"prefer.serialization"}

failed = 0


def check(name, ok, detail=""):
    global failed
    if ok:
        print(f"PASS {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


def metadata(path, port):
    try:
        with open(path, encoding="utf-8") as f:
            nodes = json.load(f)
    except (OSError, ValueError):
        return None
    inst = (nodes.get("instances") or {}).get(f"127.0.0.1:{port}")
    return None if inst is None else (inst.get("payload") or {}).get("metadata") or {}


def main():
    rpath, rport, jpath, jport = sys.argv[1:5]
    r, j = metadata(rpath, rport), metadata(jpath, jport)
    check("tri-instance.present", r is not None and j is not None, f"rust={r is not None} java={j is not None}")
    if r is None or j is None:
        return
    check("tri-metadata.keys", sorted(r) == sorted(j), f"rust={sorted(r)} java={sorted(j)}")
    check("tri-metadata.meta-v", r.get("meta-v") == j.get("meta-v") == "2.0.0",
          f"rust={r.get('meta-v')!r} java={j.get('meta-v')!r}")
    re_ = json.loads(r.get("dubbo.endpoints", "null"))
    je = json.loads(j.get("dubbo.endpoints", "null"))
    check("tri-metadata.dubbo.endpoints", re_ == [{"port": int(rport), "protocol": "tri"}]
          and je == [{"port": int(jport), "protocol": "tri"}], f"rust={re_} java={je}")
    ru = json.loads(r.get("dubbo.metadata-service.url-params", "{}"))
    ju = json.loads(j.get("dubbo.metadata-service.url-params", "{}"))
    check("tri-url-params.port", ru.get("port") == str(rport) and ju.get("port") == str(jport), f"rust={ru} java={ju}")
    check("tri-url-params.protocol", ru.get("protocol") == ju.get("protocol") == "tri", f"rust={ru} java={ju}")
    for key in sorted((set(ru) | set(ju)) - {"port", "protocol"} - KNOWN_JAVA_ONLY - KNOWN_RUST_ONLY - KNOWN_DIFFERENT):
        check(f"tri-url-params.{key}", ru.get(key) == ju.get(key), f"rust={ru.get(key)!r} java={ju.get(key)!r}")
    check("tri-url-params.order", [k for k in ju if k in ru] == [k for k in ru if k in ju],
          f"rust={list(ru)} java={list(ju)}")


if __name__ == "__main__":
    main()
    sys.exit(1 if failed else 0)
