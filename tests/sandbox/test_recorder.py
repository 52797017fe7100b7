"""The setup network's recorder reads only fixed headers: the ARP request for the gateway is answered with its own
address, a TCP SYN sent to it (or, inside a setup container, out of it) is recorded and answered by a valid RST,
and everything else — the proxy's traffic, other ARP requests, short or malformed frames — is left alone."""

from __future__ import annotations

import socket
import struct

from sandbox.recorder import arp_reply, attempt, attempts_in, checksum, outgoing

OWN_MAC, PEER_MAC = bytes.fromhex("02420a000002"), bytes.fromhex("02420a000003")
GATEWAY, OWN_IP, PEER_IP = socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2"), socket.inet_aton("10.0.0.3")
HOST = socket.inet_aton("172.17.0.1")


def arp_request(target: bytes, sender: bytes = PEER_IP) -> bytes:
    return (b"\xff" * 6 + PEER_MAC + b"\x08\x06" + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + PEER_MAC + sender
            + b"\0" * 6 + target)


def syn(destination: bytes, port: int, to_mac: bytes = OWN_MAC, flags: int = 0x02, source: bytes = PEER_IP) -> bytes:
    tcp = struct.pack("!HHIIBBHHH", 40000, port, 1000, 0, 5 << 4, flags, 64240, 0, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40, 1, 0, 64, 6, 0, source, destination)
    return to_mac + PEER_MAC + b"\x08\x00" + ip + tcp


def test_the_gateways_arp_request_is_answered_with_the_recorders_address_and_nothing_else_is() -> None:
    reply = arp_reply(arp_request(GATEWAY), OWN_MAC, GATEWAY)
    assert reply is not None and reply[:6] == PEER_MAC and reply[6:12] == OWN_MAC
    assert reply[22:28] == OWN_MAC and reply[28:32] == GATEWAY and reply[38:42] == PEER_IP  # "GATEWAY is at OWN_MAC"
    assert arp_reply(arp_request(PEER_IP), OWN_MAC, GATEWAY) is None  # another container's address: its own
    assert arp_reply(arp_request(GATEWAY, sender=GATEWAY), OWN_MAC, GATEWAY) is None
    assert arp_reply(arp_request(GATEWAY)[:30], OWN_MAC, GATEWAY) is None


def test_a_syn_through_the_gateway_is_recorded_and_refused_by_a_valid_rst() -> None:
    found = attempt(syn(HOST, 8080), OWN_MAC, OWN_IP)
    assert found is not None and found[0] == "tcp 172.17.0.1:8080"
    rst = found[1]
    assert rst is not None and rst[:6] == PEER_MAC
    ip, tcp = rst[14:34], rst[34:]
    assert ip[12:16] == HOST and ip[16:20] == PEER_IP and checksum(ip) == 0
    source_port, destination_port, _seq, ack, _off, flags = struct.unpack("!HHIIBB", tcp[:14])
    assert (source_port, destination_port, ack, flags) == (8080, 40000, 1001, 0x14)
    assert checksum(HOST + PEER_IP + struct.pack("!BBH", 0, 6, len(tcp)) + tcp) == 0
    # a SYN-ACK, a frame to another MAC, one to the recorder's own address, a truncated one: not attempts
    assert attempt(syn(HOST, 8080), OWN_MAC, OWN_IP) is not None
    assert attempt(syn(HOST, 8080, flags=0x12), OWN_MAC, OWN_IP) == ("tcp 172.17.0.1:8080", None)
    assert attempt(syn(HOST, 8080, to_mac=PEER_MAC), OWN_MAC, OWN_IP) is None
    assert attempt(syn(OWN_IP, 22), OWN_MAC, OWN_IP) is None
    assert attempt(syn(HOST, 8080)[:40], OWN_MAC, OWN_IP) is None


def test_inside_a_setup_container_what_it_sends_past_the_proxy_is_recorded_and_answered_locally() -> None:
    proxy = socket.inet_aton("10.0.0.9")
    found = outgoing(syn(HOST, 2375, source=PEER_IP), PEER_IP, proxy, 3128)
    assert found is not None and found[0] == "tcp 172.17.0.1:2375"
    packet = found[1]
    assert packet is not None and packet[12:16] == HOST and packet[16:20] == PEER_IP  # an IPv4 packet, no frame
    assert outgoing(syn(proxy, 3128, source=PEER_IP), PEER_IP, proxy, 3128) is None  # the proxy: its way out
    assert outgoing(syn(proxy, 22, source=PEER_IP), PEER_IP, proxy, 3128) is not None  # the proxy's other ports
    assert outgoing(syn(HOST, 2375, source=HOST), PEER_IP, proxy, 3128) is None  # not sent by this container


def test_the_log_names_each_attempt_once() -> None:
    assert attempts_in("listening\nattempt tcp 1.2.3.4:5\nattempt udp 1.2.3.4:53\nattempt tcp 1.2.3.4:5\n") == (
        "tcp 1.2.3.4:5", "udp 1.2.3.4:53")


def datagram(destination: bytes, port: int, protocol: int = 17, payload: bytes = b"ping") -> bytes:
    body = struct.pack("!HHHH", 40001, port, 8 + len(payload), 0) + payload if protocol == 17 \
        else struct.pack("!BBHHH", 8, 0, 0, 7, 1) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), 1, 0, 64, protocol, 0, PEER_IP, destination)
    return OWN_MAC + PEER_MAC + b"\x08\x00" + ip + body


def test_a_udp_datagram_or_a_ping_is_recorded_and_refused_by_a_valid_icmp_unreachable() -> None:
    for frame, text, code in ((datagram(HOST, 53), "udp 172.17.0.1:53", 3),
                              (datagram(HOST, 0, protocol=1), "icmp 172.17.0.1", 13)):
        found = attempt(frame, OWN_MAC, OWN_IP)
        assert found is not None and found[0] == text
        answer = found[1]
        assert answer is not None and answer[:6] == PEER_MAC and answer[12:14] == b"\x08\x00"
        ip, icmp = answer[14:34], answer[34:]
        assert ip[9] == 1 and ip[12:16] == HOST and ip[16:20] == PEER_IP and checksum(ip) == 0
        assert (icmp[0], icmp[1]) == (3, code) and checksum(icmp) == 0
        assert icmp[8:] == frame[14:14 + 28]  # the offending header and its first 8 bytes, quoted
    # an ICMP message that is not an echo request (an error of the container's own) is recorded, never answered
    reply = bytearray(datagram(HOST, 0, protocol=1))
    reply[34] = 3
    assert attempt(bytes(reply), OWN_MAC, OWN_IP) == ("icmp 172.17.0.1", None)
    # inside a setup container: the refusal is an IPv4 packet delivered back to it
    proxy = socket.inet_aton("10.0.0.9")
    inside = outgoing(datagram(HOST, 5353), PEER_IP, proxy, 3128)
    assert inside is not None and inside[0] == "udp 172.17.0.1:5353"
    assert inside[1] is not None and inside[1][9] == 1 and inside[1][16:20] == PEER_IP
