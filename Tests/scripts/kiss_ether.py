#!/usr/bin/env python3
"""A KISS "ether" for tests: a TCP server on 127.0.0.1 (port 0, printed as `kiss ether on PORT`) where
every byte one client sends goes to every other client, as frames on a shared radio channel would, with
nothing lost. `modem ax25 connect` and `modem ax25 listen` talk through it as through a KISS TNC.
It ends when its standard input closes (the test that started it ends)."""
import selectors
import socket
import sys

listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(8)
print(f"kiss ether on {listener.getsockname()[1]}", flush=True)
selector = selectors.DefaultSelector()
selector.register(listener, selectors.EVENT_READ)
selector.register(sys.stdin, selectors.EVENT_READ)
clients = []
while True:
    for key, _ in selector.select():
        if key.fileobj is sys.stdin:
            if not sys.stdin.buffer.read1(4096):
                sys.exit(0)
        elif key.fileobj is listener:
            conn, _ = listener.accept()
            clients.append(conn)
            selector.register(conn, selectors.EVENT_READ)
        else:
            conn = key.fileobj
            try:
                data = conn.recv(65536)
            except ConnectionError:
                data = b""
            if not data:
                selector.unregister(conn)
                clients.remove(conn)
                conn.close()
                continue
            for other in clients:
                if other is not conn:
                    other.sendall(data)
