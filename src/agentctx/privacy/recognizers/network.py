"""IP addresses and credentials embedded in URLs."""

from __future__ import annotations

import ipaddress
import re

from agentctx.privacy.findings import EntityType, Finding
from agentctx.privacy.recognizers.context import (
    NEGATIVE,
    WINDOW,
    ContextWords,
    clamp,
    clause_start,
    glued,
    score_with_context,
)
from agentctx.privacy.shape import TextShape

_IPV4 = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}")
# IPv6 candidates are found from a seed (two colons at most four hex digits apart),
# which the engine finds fast because it starts with a literal ":".
_IPV6_SEED = re.compile(r":[0-9A-Fa-f]{0,4}:")
_HEX_OR_COLON = frozenset("0123456789abcdefABCDEF:")
_IPV6 = re.compile(
    r"(?:[0-9A-Fa-f]{1,4}:|::)[0-9A-Fa-f:]{1,40}(?:\.\d{1,3}){0,3}(?:%[0-9A-Za-z]{1,16})?"
)
_IP_WORDS = ContextWords(
    (
        "ip",
        "ipv4",
        "host",
        "server",
        "address",
        "addr",
        "dns",
        "gateway",
        "resolver",
        "地址",
        "服务器",
        "主机",
    )
)
_VERSION_WORDS = ContextWords(("version", "ver.", "release", "build", "版本", "升级", "patch"))
# The first clause break after a position ("来自 1.2.3.4 的请求, 版本 2.0": the version
# word belongs to the next clause).
_CLAUSE_BREAK = re.compile(r"[\n,;\uff0c\uff1b\u3002]")


def _version_nearby(text: str, start: int, end: int, clause: int) -> bool:
    """Whether a version word is near ``text[start:end]`` in its own clause (from ``clause``)."""
    if _VERSION_WORDS.before(text, start, start - clause):
        return True
    stop = _CLAUSE_BREAK.search(text, end, end + WINDOW)
    return _VERSION_WORDS.after(text, end, (stop.start() if stop else end + WINDOW) - end)


class IPAddressRecognizer:
    """IPv4 and IPv6 addresses, validated with :mod:`ipaddress`.

    An IPv4 address must not be part of a longer dotted number ("1.2.3.4.5") or glued to
    letters ("v1.2.3.4"), and version words nearby in the same clause ("version", "版本")
    rule it out.
    An address whose octets are all single digits ("1.2.3.4", the usual shape of a
    version) scores below the threshold unless an IP word ("ip", "server", "地址") is near.
    """

    name = "ip_address"
    entity_types: tuple[str, ...] = (EntityType.IP_ADDRESS,)

    @staticmethod
    def possible(shape: TextShape) -> bool:
        """Whether ``shape`` has a digit, a dot and a digit (IPv4) or two colons (IPv6)."""
        return shape.has(b"0.0") or shape.text.count(":") >= 2

    def analyze(self, text: str) -> list[Finding]:
        """Every IP address in ``text``."""
        v4 = self._ipv4(text) if "." in text else []
        v6 = self._ipv6(text) if ":" in text else []
        if v4 and v6:
            # "::ffff:192.0.2.1" is one IPv6 address, not also an IPv4 one.
            v4 = [f for f in v4 if not any(g.start <= f.start and f.end <= g.end for g in v6)]
        return v4 + v6

    def _ipv4(self, text: str) -> list[Finding]:
        out: list[Finding] = []
        n = len(text)
        for m in _IPV4.finditer(text):
            start, end = m.span()
            if glued(text, start, end):
                continue
            if start > 0 and text[start - 1] == ".":
                continue
            if end + 1 < n and text[end] == "." and text[end + 1].isdigit():
                continue
            try:
                address = ipaddress.IPv4Address(m.group())
            except ValueError:
                continue
            clause = clause_start(text, start)
            if _version_nearby(text, start, end, clause):
                continue
            base = 0.4 if max(address.packed) < 10 else 0.8
            if _IP_WORDS.near(text, start, end):
                score = clamp(base + 0.45)
            elif NEGATIVE.before(text, start, start - clause):
                # Only a price or order word in the address's own clause counts against it
                # ("价格 $80.00, 来自 203.0.113.7 的请求" is a request's address).
                score = clamp(base - 0.35)
            else:
                score = base
            out.append(Finding(EntityType.IP_ADDRESS, start, end, score, self.name))
        return out

    def _ipv6(self, text: str) -> list[Finding]:
        out: list[Finding] = []
        done = 0
        for seed in _IPV6_SEED.finditer(text):
            if seed.start() < done:
                continue
            begin = seed.start()
            floor = max(done, begin - 40)
            while begin > floor and text[begin - 1] in _HEX_OR_COLON:
                begin -= 1
            m = _IPV6.match(text, begin)
            if m is None:
                continue
            start, end = m.span()
            done = end
            candidate = m.group()
            # A trailing colon is punctuation ("address fe80::1: down").
            while candidate.endswith(":") and not candidate.endswith("::"):
                candidate = candidate[:-1]
                end -= 1
            if glued(text, start, end) or (start > 0 and text[start - 1] in ":."):
                continue
            groups = [g for g in candidate.split("%")[0].split(":") if g]
            # "abc::def" (C++ scopes) is a valid address but no one writes it like that.
            if len(groups) < 2 or not any(c.isdigit() for c in candidate):
                continue
            try:
                ipaddress.IPv6Address(candidate)
            except ValueError:
                continue
            score = score_with_context(0.85, text, start, end, positive=_IP_WORDS, boost=0.1)
            out.append(Finding(EntityType.IP_ADDRESS, start, end, score, self.name))
        return out


# scheme://user:password@host - the password may itself contain "@"; the last "@"
# before the path ends the credentials.
_URL_CREDENTIALS = re.compile(r"://([^\s:/?#@\[\]\"'<>]+):([^\s/?#\"'<>]+)@(?=[A-Za-z0-9\[])")


class URLCredentialsRecognizer:
    """Credentials inside URLs (``scheme://user:password@host``).

    The finding covers the ``user:password`` part only, so a redacted URL keeps its
    scheme, host and path: ``postgresql://<SECRET>@db.example.com/app``.
    """

    name = "url_credentials"
    entity_types: tuple[str, ...] = (EntityType.URL_CREDENTIALS,)

    def analyze(self, text: str) -> list[Finding]:
        """Every ``user:password`` inside a URL in ``text``."""
        if "://" not in text:
            return []
        findings: list[Finding] = []
        for m in _URL_CREDENTIALS.finditer(text):
            if m.start() == 0 or not text[m.start() - 1].isalnum():
                continue
            start, end = m.start(1), m.end(2)
            findings.append(Finding(EntityType.URL_CREDENTIALS, start, end, 0.95, self.name))
        return findings
