#!/usr/bin/env python3
"""An independent SwiftModem session peer for the interop tests, on the `noiseprotocol` package
(PyPI 0.3.1, installed by scripts/msg-venv.sh): it dials a SwiftModem listener over TCP and speaks
the session wire format of docs/messaging-plan.md section 3 as the initiator:

  SMsg, then frames as u32 BE length | frame; HS1/HS2/HS3 = 0x51/0x52/0x53 + Noise XX messages with
  TLV payloads; records 0x54 | counter u64 BE | AESGCM(kind | body), associated data = the first
  9 bytes; ACCEPT (0x01) from both sides before anything else; CLOSE (0x05) / CLOSED (0x06).

Usage: noise_peer.py PORT STATIC_PRIVATE_HEX EXPECTED_PEER_PUBLIC_HEX SERVICE BODY_HEX...
Sends each BODY as a kind 0x10 record, expects each back as a kind 0x11 record with the bytes
reversed, then closes (CLOSE, waits for CLOSED). Prints one line per step; exit 0 on success.
"""
import socket
import struct
import sys

from noise.connection import NoiseConnection, Keypair


def tlv(entries):
    out = b""
    for t, v in entries:
        out += bytes([t]) + struct.pack(">H", len(v)) + v
    return out


def parse_tlv(data):
    entries, i = {}, 0
    while i < len(data):
        t, n = data[i], struct.unpack(">H", data[i + 1:i + 3])[0]
        entries.setdefault(t, data[i + 3:i + 3 + n])
        i += 3 + n
    return entries


class Peer:
    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""

    def send_frame(self, frame):
        self.sock.sendall(struct.pack(">I", len(frame)) + frame)

    def recv_exact(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise SystemExit("the SwiftModem side closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def recv_frame(self):
        (length,) = struct.unpack(">I", self.recv_exact(4))
        assert 1 <= length <= 65560, f"bad frame length {length}"
        return self.recv_exact(length)


def main():
    port, static_hex, expected_hex, service = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    bodies = [bytes.fromhex(h) for h in sys.argv[5:]]
    prologue = b"SwiftModem session 1" + bytes([service, 1])  # 1 = stream transport

    noise = NoiseConnection.from_name(b"Noise_XX_25519_AESGCM_SHA256")
    noise.set_as_initiator()
    noise.set_keypair_from_private_bytes(Keypair.STATIC, bytes.fromhex(static_hex))
    noise.set_prologue(prologue)
    noise.start_handshake()

    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    sock.sendall(b"SMsg")
    peer = Peer(sock)
    peer.send_frame(b"\x51" + bytes(noise.write_message(b"")))

    frame = peer.recv_frame()
    assert frame[0] == 0x52, f"expected HS2, got type 0x{frame[0]:02x}"
    handshake = noise.noise_protocol.handshake_state
    payload = parse_tlv(bytes(noise.read_message(frame[1:])))
    remote_static = handshake.rs.public_bytes
    assert remote_static.hex() == expected_hex, "the responder's static key is not the expected one"
    print("HS2 from", payload.get(1, b"").decode(), flush=True)

    payload3 = tlv([(1, b"pypeer"), (2, struct.pack(">I", 10000)), (4, b"noiseprotocol 0.3.1"), (5, b"\x00")])
    peer.send_frame(b"\x53" + bytes(noise.write_message(payload3)))
    assert noise.handshake_finished
    send_cipher = noise.noise_protocol.cipher_state_encrypt
    recv_cipher = noise.noise_protocol.cipher_state_decrypt
    counters = {"send": 0, "recv": 0}

    def send_record(kind, body):
        header = b"\x54" + struct.pack(">Q", counters["send"])
        assert send_cipher.n == counters["send"]
        peer.send_frame(header + send_cipher.encrypt_with_ad(header, bytes([kind]) + body))
        counters["send"] += 1

    def recv_record():
        frame = peer.recv_frame()
        assert frame[0] == 0x54, f"expected a record, got type 0x{frame[0]:02x}"
        (counter,) = struct.unpack(">Q", frame[1:9])
        assert counter == counters["recv"] == recv_cipher.n, f"counter {counter}, expected {counters['recv']}"
        plaintext = recv_cipher.decrypt_with_ad(frame[:9], frame[9:])
        counters["recv"] += 1
        return plaintext[0], plaintext[1:]

    send_record(0x01, tlv([(1, b"pypeer")]))
    kind, body = recv_record()
    assert kind == 0x01, f"expected ACCEPT, got kind 0x{kind:02x}"
    print("accepted by", parse_tlv(body).get(1, b"").decode(), flush=True)

    for body in bodies:
        send_record(0x10, body)
    for body in bodies:
        kind, echoed = recv_record()
        while kind in (0x03, 0x04):  # keepalive
            if kind == 0x03:
                send_record(0x04, echoed)
            kind, echoed = recv_record()
        assert kind == 0x11 and echoed == body[::-1], f"bad echo (kind 0x{kind:02x}, {len(echoed)} bytes)"
    print("echoes ok:", len(bodies), flush=True)

    send_record(0x05, b"\x01")
    while True:
        kind, _ = recv_record()
        if kind == 0x06:
            break
        assert kind in (0x03, 0x04), f"expected CLOSED, got kind 0x{kind:02x}"
    print("closed", flush=True)
    sock.close()


if __name__ == "__main__":
    main()
