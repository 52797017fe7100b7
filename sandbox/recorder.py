"""The setup network's recorder: direct connection attempts (not through the proxy) refused, and recorded.

A setup container sends everything not on its own network to the network's gateway, and the gateway does not
exist (the bridge has no address, :mod:`sandbox.setup_network`), so such an attempt used to die in the container
unseen. This program, in a container of its own on the setup network and nowhere else, answers the ARP request
for the gateway's address with its own MAC address: the setup container's first packet to any destination off
its network — the engine's host, its bridges, the host's own addresses, other containers, the internet — then
comes here. Its kernel drops it (the address is not its own; IP forwarding is off); this program reads it from a
packet socket, appends ``attempt tcp|udp|icmp host:port`` to its log and refuses it at once: a TCP ``SYN`` is
answered with a ``RST``, a UDP datagram with ICMP "port unreachable" (a connected socket gets ``ECONNREFUSED``), an
ICMP echo request with "communication administratively prohibited". Nothing is ever forwarded.

It needs ``CAP_NET_RAW`` (a packet socket) and nothing else, and parses only fixed-size headers (Ethernet, ARP,
IPv4, the first bytes of TCP/UDP): what PR code sends it is never interpreted beyond addresses and ports. It runs
with the sandbox image's ``python3`` (standard library only), in one of two places:

- ``python3 recorder.py network IFACE GATEWAY LOG_FILE``: on the setup network, as above;
- ``python3 recorder.py inside IFACE PROXY_IP LOG_FILE PROXY_PORT``: in the setup container's network namespace
  (a container of its own joined to it: PR code cannot see or signal it), reading what the setup container sends.
  An engine whose bridge filters bridged frames (``br_netfilter`` with an ``internal`` network's drop rules, as
  Docker sets up) drops a packet bound off the network before it reaches the recorder on the network; here it is
  seen as it leaves, recorded, and refused by the same answer delivered back to the container locally.

It writes ``listening`` to the log once its socket is open.
"""

from __future__ import annotations

import fcntl
import socket
import struct
import sys
from pathlib import Path

READY = "listening"
ATTEMPT = "attempt "
MAX_LOGGED = 100
ETH_P_ALL = 0x0003
ETH_ARP = 0x0806
ETH_IP = 0x0800
PACKET_OUTGOING = 4
PROTOCOLS = {1: "icmp", 6: "tcp", 17: "udp"}


def attempts_in(log_text: str) -> tuple[str, ...]:
    """The attempts a recorder's log names (``tcp 172.17.0.1:8080``), sorted."""
    return tuple(sorted({line[len(ATTEMPT):] for line in log_text.splitlines() if line.startswith(ATTEMPT)}))


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071)."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return int(~total & 0xFFFF)


def arp_reply(frame: bytes, own_mac: bytes, gateway: bytes) -> bytes | None:
    """The reply claiming ``gateway`` for an ARP request of it; None for any other frame."""
    if len(frame) < 42 or struct.unpack("!H", frame[12:14])[0] != ETH_ARP:
        return None
    htype, ptype, hlen, plen, op = struct.unpack("!HHBBH", frame[14:22])
    sender_mac, sender_ip, target_ip = frame[22:28], frame[28:32], frame[38:42]
    if (htype, ptype, hlen, plen, op) != (1, ETH_IP, 6, 4, 1) or target_ip != gateway or sender_ip == gateway:
        return None
    return (sender_mac + own_mac + struct.pack("!H", ETH_ARP)
            + struct.pack("!HHBBH", 1, ETH_IP, 6, 4, 2) + own_mac + gateway + sender_mac + sender_ip)


def attempt(frame: bytes, own_mac: bytes, own_ip: bytes) -> tuple[str, bytes | None] | None:
    """``(what was attempted, the frame refusing it or None)`` for an IPv4 packet sent to this MAC address but not
    to this address; None for any other frame. The refusal: a TCP ``RST`` for a ``SYN``, ICMP "port unreachable"
    for a UDP datagram, "administratively prohibited" for an echo request."""
    if len(frame) < 34 or frame[0:6] != own_mac or struct.unpack("!H", frame[12:14])[0] != ETH_IP:
        return None
    ip = frame[14:]
    version_ihl, protocol, source, destination = ip[0], ip[9], ip[12:16], ip[16:20]
    header = (version_ihl & 0x0F) * 4
    if version_ihl >> 4 != 4 or header < 20 or destination == own_ip or protocol not in PROTOCOLS:
        return None
    where = socket.inet_ntoa(destination)
    if protocol == 1:
        # an echo request (type 8) is refused as "communication administratively prohibited" (3/13); an ICMP
        # message of any other type is recorded only (answering an error with an error is what RFC 1122 forbids)
        icmp_type = ip[header] if len(ip) > header else -1
        return f"icmp {where}", (_unreachable(frame, own_mac, ip, header, 13) if icmp_type == 8 else None)
    if len(ip) < header + (14 if protocol == 6 else 8):
        return None
    source_port, destination_port, sequence = struct.unpack("!HHI", ip[header:header + 8])
    text = f"{PROTOCOLS[protocol]} {where}:{destination_port}"
    if protocol == 17:  # a UDP datagram: "port unreachable" (3/3), so a connected socket gets ECONNREFUSED
        return text, _unreachable(frame, own_mac, ip, header, 3)
    flags = ip[header + 13]
    if not flags & 0x02 or flags & 0x10:  # a TCP SYN (not SYN-ACK) is answered
        return text, None
    tcp = struct.pack("!HHIIBBHHH", destination_port, source_port, 0, (sequence + 1) & 0xFFFFFFFF, 5 << 4,
                      0x14, 0, 0, 0)  # RST|ACK
    pseudo = destination + source + struct.pack("!BBH", 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", checksum(pseudo + tcp)) + tcp[18:]
    return text, _reply_frame(frame, own_mac, destination, source, 6, tcp)


def _unreachable(frame: bytes, own_mac: bytes, ip: bytes, header: int, code: int) -> bytes:
    """The ICMP "destination unreachable" (type 3, ``code``) frame answering the IPv4 packet ``ip``: its header
    and first 8 bytes quoted (RFC 792), from the address it was sent to."""
    quoted = ip[:header + 8]
    icmp = struct.pack("!BBHI", 3, code, 0, 0) + quoted
    icmp = icmp[:2] + struct.pack("!H", checksum(icmp)) + icmp[4:]
    return _reply_frame(frame, own_mac, ip[16:20], ip[12:16], 1, icmp)


def _reply_frame(frame: bytes, own_mac: bytes, source: bytes, destination: bytes, protocol: int,
                 payload: bytes) -> bytes:
    """An Ethernet frame back to the sender of ``frame``: an IPv4 packet of ``protocol`` carrying ``payload``."""
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000, 64, protocol, 0, source,
                       destination)
    head = head[:10] + struct.pack("!H", checksum(head)) + head[12:]
    return frame[6:12] + own_mac + struct.pack("!H", ETH_IP) + head + payload


def outgoing(frame: bytes, own_ip: bytes, proxy: bytes, proxy_port: int) -> tuple[str, bytes | None] | None:
    """For a frame the setup container sends (``inside`` mode): ``(what was attempted, the refusal's IPv4 packet to
    deliver back to it or None)``; None for its traffic with the proxy and anything but IPv4 from its address."""
    if len(frame) < 34 or struct.unpack("!H", frame[12:14])[0] != ETH_IP or frame[26:30] != own_ip:
        return None
    destination = frame[30:34]
    header = (frame[14] & 0x0F) * 4
    if destination == proxy and frame[23] == 6 and len(frame) >= 14 + header + 4 \
            and struct.unpack("!H", frame[14 + header + 2:14 + header + 4])[0] == proxy_port:
        return None
    found = attempt(frame[6:12] + frame[6:12] + frame[12:], frame[6:12], b"\0\0\0\0")
    if found is None:
        return None
    text, answer = found
    return text, answer[14:] if answer is not None else None


def _address(interface: str) -> bytes:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        packed = fcntl.ioctl(probe.fileno(), 0x8915, struct.pack("256s", interface.encode()[:15]))  # SIOCGIFADDR
    return packed[20:24]


def main(argv: list[str]) -> int:
    """Answer and record on ``IFACE`` until killed; see the module's docstring."""
    mode, interface, address_text, log_path, *rest = argv
    address = socket.inet_aton(address_text)
    own_mac = bytes.fromhex(Path(f"/sys/class/net/{interface}/address").read_text().strip().replace(":", ""))
    own_ip = _address(interface)
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.bind((interface, 0))
    local = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)  # delivers refusals to this host
    log = Path(log_path)
    seen: set[str] = set()
    with log.open("a", encoding="utf-8") as handle:
        handle.write(READY + "\n")
    while True:
        frame, where = sock.recvfrom(65535)
        if mode == "inside":  # the setup container's own network namespace: what it sends
            found = outgoing(frame, own_ip, address, int(rest[0])) if where[2] == PACKET_OUTGOING else None
            if found is not None and found[1] is not None:
                local.sendto(found[1], (socket.inet_ntoa(own_ip), 0))
        else:  # on the setup network: the gateway's address claimed, what is sent to it recorded and refused
            if where[2] == PACKET_OUTGOING:
                continue
            reply = arp_reply(frame, own_mac, address)
            if reply is not None:
                sock.send(reply)
                continue
            found = attempt(frame, own_mac, own_ip)
            if found is not None and found[1] is not None:
                sock.send(found[1])
        if found is None:
            continue
        text = found[0]
        if text not in seen and len(seen) < MAX_LOGGED:
            seen.add(text)
            with log.open("a", encoding="utf-8") as handle:
                handle.write(ATTEMPT + text + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
