"""What the servers' command lines share about the network: a port argument and the loopback test that keeps a
server off the LAN unless ``--allow-remote`` says otherwise (``erp-sim serve`` and ``erp-sim serve --openenv``)."""

from __future__ import annotations

import argparse
import ipaddress


def port_number(text: str) -> int:
    """argparse type of a TCP port: 0-65535 (a larger number was bound modulo 65536, on another port)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0-65535)")
    return port


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` serves this machine only: ``localhost`` or a loopback address (IPv6 in brackets or not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
