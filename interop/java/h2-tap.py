#!/usr/bin/env python3
"""A loopback TCP tap that prints the HTTP/2 frames passing through it (a dev tool, not CI).

    python3 h2-tap.py LISTEN_PORT TARGET_PORT [--max-conns N]

Listens on 127.0.0.1:LISTEN_PORT, forwards every connection to 127.0.0.1:TARGET_PORT and prints
each frame on stdout: direction, type, stream, flags, decoded headers (HPACK, needs the `hpack`
package from PyPI: `pip install hpack`), and for DATA the gRPC prefix plus the first message bytes.
Used to check what Java Dubbo's Triple puts on the wire (interop/java/README.md). Stops after
--max-conns connections (default 1) have closed.
"""
import socket
import struct
import sys
import threading

import hpack

TYPES = {0: "DATA", 1: "HEADERS", 2: "PRIORITY", 3: "RST_STREAM", 4: "SETTINGS", 5: "PUSH_PROMISE",
         6: "PING", 7: "GOAWAY", 8: "WINDOW_UPDATE", 9: "CONTINUATION"}
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
lock = threading.Lock()


def show(direction, ftype, flags, stream, payload, decoder, pending):
    name = TYPES.get(ftype, str(ftype))
    line = f"{direction} {name} stream={stream} flags=0x{flags:02x} len={len(payload)}"
    if ftype in (1, 9):
        body = payload
        if ftype == 1 and flags & 0x08:  # PADDED
            pad = body[0]
            body = body[1:len(body) - pad]
        if ftype == 1 and flags & 0x20:  # PRIORITY
            body = body[5:]
        try:
            headers = decoder.decode(bytes(body))
            line += "".join(f"\n    {k}: {v}" for k, v in headers)
        except Exception as e:  # noqa: BLE001 - a dev tool: show and go on
            line += f"\n    (hpack: {e})"
    elif ftype == 0 and payload:
        left = pending.get(stream, 0)
        if left >= len(payload):  # the middle of a message that began in an earlier frame
            pending[stream] = left - len(payload)
            line += f" (message continues, {left - len(payload)} bytes to go)"
        elif len(payload) - left >= 5:
            body = payload[left:]
            compressed, length = body[0], struct.unpack(">I", body[1:5])[0]
            pending[stream] = max(0, 5 + length - len(body))
            line += f"\n    grpc prefix: compressed={compressed} length={length}"
            line += f"\n    first bytes: {body[5:5 + 48].hex(' ')}"
        else:
            line += f"\n    bytes: {payload.hex(' ')}"
    elif ftype == 4 and not flags & 0x01:
        pairs = [struct.unpack(">HI", payload[i:i + 6]) for i in range(0, len(payload), 6)]
        line += "".join(f"\n    setting {k}={v}" for k, v in pairs)
    elif ftype == 8:
        line += f" increment={struct.unpack('>I', payload[:4])[0] & 0x7fffffff}"
    elif ftype in (3, 7):
        line += f" code={struct.unpack('>I', payload[-4:] if ftype == 3 else payload[4:8])[0]}"
    with lock:
        print(line, flush=True)


def pump(src, dst, direction):
    decoder = hpack.Decoder()
    decoder.max_allowed_table_size = 1 << 20
    pending = {}  # stream -> bytes of the current gRPC message still to come
    buf = bytearray()
    preface_done = direction == "<-"
    try:
        while True:
            chunk = src.recv(65536)
            if not chunk:
                break
            dst.sendall(chunk)
            buf += chunk
            if not preface_done:
                if len(buf) < len(PREFACE):
                    continue
                del buf[:len(PREFACE)]
                preface_done = True
            while len(buf) >= 9:
                length = int.from_bytes(buf[0:3], "big")
                if len(buf) < 9 + length:
                    break
                ftype, flags = buf[3], buf[4]
                stream = int.from_bytes(buf[5:9], "big") & 0x7fffffff
                show(direction, ftype, flags, stream, bytes(buf[9:9 + length]), decoder, pending)
                del buf[:9 + length]
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    listen_port, target_port = int(sys.argv[1]), int(sys.argv[2])
    max_conns = int(sys.argv[sys.argv.index("--max-conns") + 1]) if "--max-conns" in sys.argv else 1
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", listen_port))
    srv.listen(8)
    print(f"TAP 127.0.0.1:{listen_port} -> 127.0.0.1:{target_port}", flush=True)
    for _ in range(max_conns):
        client, _ = srv.accept()
        upstream = socket.create_connection(("127.0.0.1", target_port), timeout=30)
        upstream.settimeout(None)
        up = threading.Thread(target=pump, args=(client, upstream, "->"))
        down = threading.Thread(target=pump, args=(upstream, client, "<-"))
        up.start()
        down.start()
        up.join()
        down.join()


if __name__ == "__main__":
    main()
