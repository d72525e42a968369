#!/usr/bin/env python3
"""Interop cell 10: compares, field by field, the application-level nodes and the
MetadataInfo a Rust provider wrote/served with those of a Java 3.3.6 provider of the
same service (both `register-mode=instance`), as read by Java (AppDiscoveryProbe).

  appdisc-compare.py RUST_NODES RUST_META RUST_PORT JAVA_NODES JAVA_META JAVA_PORT

Prints one "PASS <check>" or "FAIL <check>: detail" line per check (interop/run
prefixes the cell).
Differences that are by design are listed in KNOWN and not failed: Java-only
parameters (`release`, `logger`, `service-name-mapping`, `REGISTRY_CLUSTER`,
`revision`), Rust's `rubbo`, and `prefer.serialization` (Rust offers hessian2 only).
"""
import json
import re
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


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def one_instance(nodes, port):
    inst = nodes.get("instances") or {}
    return inst.get(f"127.0.0.1:{port}")


def main():
    rn, rm, rport, jn, jm, jport = sys.argv[1:7]
    rn, rm, jn, jm = load(rn), load(rm), load(jn), load(jm)
    r, j = one_instance(rn, rport), one_instance(jn, jport)
    check("instance.present", r is not None and j is not None, f"rust={r is not None} java={j is not None}")
    if r is None or j is None:
        return
    sub = lambda v, port: v.replace(str(port), "PORT") if isinstance(v, str) else ("PORT" if v == int(port) else v)
    for field in ["name", "id", "address", "port", "sslPort", "serviceType", "uriSpec"]:
        rv, jv = sub(r.get(field), rport), sub(j.get(field), jport)
        check(f"instance.{field}", rv == jv, f"rust={rv!r} java={jv!r}")
    check("instance.registrationTimeUTC", isinstance(r.get("registrationTimeUTC"), int), repr(r.get("registrationTimeUTC")))
    rp, jp = r.get("payload") or {}, j.get("payload") or {}
    for field in ["@class", "id", "name"]:
        rv, jv = sub(rp.get(field), rport), sub(jp.get(field), jport)
        check(f"payload.{field}", rv == jv, f"rust={rv!r} java={jv!r}")
    rmeta, jmeta = rp.get("metadata") or {}, jp.get("metadata") or {}
    check("metadata.keys", sorted(rmeta) == sorted(jmeta), f"rust={sorted(rmeta)} java={sorted(jmeta)}")
    for key in ["dubbo.metadata.storage-type", "meta-v"]:
        check(f"metadata.{key}", rmeta.get(key) == jmeta.get(key), f"rust={rmeta.get(key)!r} java={jmeta.get(key)!r}")
    rev = rmeta.get("dubbo.metadata.revision", "")
    check("metadata.revision-form", re.fullmatch(r"[0-9a-f]{32}", rev) is not None, rev)
    check("metadata.timestamp", (rmeta.get("timestamp") or "").isdigit(), repr(rmeta.get("timestamp")))
    re_ = json.loads(rmeta.get("dubbo.endpoints", "null"))
    je = json.loads(jmeta.get("dubbo.endpoints", "null"))
    check("metadata.dubbo.endpoints", re_ == [{"port": int(rport), "protocol": "dubbo"}]
          and je == [{"port": int(jport), "protocol": "dubbo"}], f"rust={re_} java={je}")
    ru = json.loads(rmeta.get("dubbo.metadata-service.url-params", "{}"))
    ju = json.loads(jmeta.get("dubbo.metadata-service.url-params", "{}"))
    check("url-params.port", ru.get("port") == str(rport) and ju.get("port") == str(jport), f"rust={ru} java={ju}")
    for key in sorted((set(ru) | set(ju)) - {"port"} - KNOWN_JAVA_ONLY - KNOWN_RUST_ONLY - KNOWN_DIFFERENT):
        check(f"url-params.{key}", ru.get(key) == ju.get(key), f"rust={ru.get(key)!r} java={ju.get(key)!r}")
    check("url-params.order", [k for k in ju if k in ru] == [k for k in ru if k in ju], f"rust={list(ru)} java={list(ju)}")
    check("mapping", rn.get("mapping") == jn.get("mapping") == "interop-provider", f"rust={rn.get('mapping')!r} java={jn.get('mapping')!r}")
    check("no-interface-level-node", not rn.get("providers"), repr(rn.get("providers")))

    # MetadataService V1, called by Java on each provider with the instance's revision.
    for who, m, meta in (("rust", rm, rmeta), ("java", jm, jmeta)):
        check(f"metadata-service.{who}.serviceName", m.get("serviceName") == "interop-provider", repr(m.get("serviceName")))
        check(f"metadata-service.{who}.version", m.get("version") == "1.0.0", repr(m.get("version")))
        check(f"metadata-service.{who}.revision", m.get("revision") == meta.get("dubbo.metadata.revision"),
              f"served={m.get('revision')!r} instance={meta.get('dubbo.metadata.revision')!r}")
    ri, ji = rm.get("metadata") or {}, jm.get("metadata") or {}
    check("metadata-info.app", ri.get("app") == ji.get("app"), f"rust={ri.get('app')!r} java={ji.get('app')!r}")
    rs, js = ri.get("services") or {}, ji.get("services") or {}
    check("metadata-info.service-keys", sorted(rs) == sorted(js), f"rust={sorted(rs)} java={sorted(js)}")
    for key in sorted(set(rs) & set(js)):
        a, b = rs[key], js[key]
        for field in ["name", "group", "version", "protocol", "path"]:
            check(f"service.{field}", a.get(field) == b.get(field), f"rust={a.get(field)!r} java={b.get(field)!r}")
        check("service.port", a.get("port") == int(rport) and b.get("port") == int(jport), f"rust={a.get('port')} java={b.get('port')}")
        pa, pb = a.get("params") or {}, b.get("params") or {}
        extra_r = set(pa) - set(pb) - KNOWN_RUST_ONLY
        extra_j = set(pb) - set(pa) - KNOWN_JAVA_ONLY
        check("service.params.keys", not extra_r and not extra_j, f"rust-only={sorted(extra_r)} java-only={sorted(extra_j)}")
        for k in sorted((set(pa) & set(pb)) - KNOWN_DIFFERENT):
            check(f"service.params.{k}", pa[k] == pb[k], f"rust={pa[k]!r} java={pb[k]!r}")


if __name__ == "__main__":
    main()
    sys.exit(1 if failed else 0)
