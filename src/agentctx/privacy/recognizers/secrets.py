"""Secrets: API keys with known prefixes, JWTs, bearer tokens, private keys, passwords.

Three kinds of evidence:

* a known shape (``sk-...``, ``ghp_...``, ``AKIA...``, ``eyJ...``, a PEM private key block);
* a password keyword in an assignment (``password=hunter2``, ``密码:123456``): the value
  is flagged whatever it looks like;
* a key/token keyword near a high-entropy token (length >= 16, letters and digits mixed,
  Shannon entropy >= 3 bits per character);
* a value assigned to a key name (``API_KEY=...``, ``client_secret: ...``,
  ``auth_token=...``): shorter values count here, as long as they are not placeholders
  and vary (entropy >= 2.5 bits per character); token names also need letters and digits.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from agentctx.privacy.findings import EntityType, Finding
from agentctx.privacy.recognizers.context import (
    KeywordGate,
    glued_before,
    keyword_pattern,
)
from agentctx.privacy.shape import TextShape, shape_of

_KNOWN = re.compile(
    r"sk-(?:proj-|ant-(?:api\d\d-)?|svcacct-)?[A-Za-z0-9_\-]{20,}"
    r"|(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}"
    r"|github_pat_[A-Za-z0-9_]{22,}"
    r"|xox[baprs]-[A-Za-z0-9\-]{10,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_\-]{35}"
    r"|glpat-[A-Za-z0-9_\-]{20,}"
    r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*"
)
_BEARER = re.compile(r"[Bb]earer[ \t]+([A-Za-z0-9._~+/\-]{16,}=*)")
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----"
    r"(?:[\s\S]{0,20000}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=:\s\-]*)"
)
# Every known shape starts with one of these (case-sensitive) literals; texts with none
# of them skip the pattern. One search for all of them is cheaper than a test per literal.
_KNOWN_TRIGGER = re.compile(
    r"sk-|gh[pousr]_|github_pat_|xox|A(?:KIA|SIA|Iza)|glpat-|k_(?:live|test)_|eyJ"
)
_PASSWORD_WORDS = ("password", "passwd", "passphrase", "pwd", "密码", "口令")
_PASSWORD_KEY = re.compile(keyword_pattern(_PASSWORD_WORDS))
_PASSWORD_GATE = KeywordGate(_PASSWORD_WORDS)
_SECRET_WORDS = (
    "api_key",
    "api-key",
    "apikey",
    "secret",
    "token",
    "key",
    "credential",
    "auth",
    "密钥",
    "令牌",
    "秘钥",
)
_SECRET_KEY = re.compile(keyword_pattern(_SECRET_WORDS))
_SECRET_GATE = KeywordGate(_SECRET_WORDS)
# After a password keyword: the rest of the key name, an assignment, the value.
_ASSIGNMENT = re.compile(
    r"""[A-Za-z0-9_\-]*["']?[ \t]*(?:[:=\uff1a]|=>|是|为)[ \t]*"""
    r"""(?:"([^"\n]{1,200})"|'([^'\n]{1,200})'|([^\s"',;\uff0c。\uff1b}{)\]]{1,200}))"""
)
# Key names whose assigned value is a secret: strong ones whatever the value looks like
# (within reason), weak ones ("token", "auth") only for values mixing letters and digits.
_STRONG_KEY_NAMES = (
    "api_key",
    "api-key",
    "apikey",
    "api key",
    "access_key",
    "access-key",
    "secret_key",
    "secret-key",
    "private_key",
    "client_secret",
    "secret",
    "密钥",
    "秘钥",
)
_WEAK_KEY_NAMES = ("token", "access_token", "auth_token", "refresh_token", "令牌")
_KEY_NAME = re.compile(
    rf"(?:(?P<strong>{keyword_pattern(_STRONG_KEY_NAMES)})|{keyword_pattern(_WEAK_KEY_NAMES)})"
)
_KEY_NAME_GATE = KeywordGate(_STRONG_KEY_NAMES + _WEAK_KEY_NAMES)
# Right after a key name (nothing more of the name): an assignment, the value.
_KEY_ASSIGNMENT = re.compile(
    r"""(?![A-Za-z0-9_\-])["']?[ \t]*(?:[:=\uff1a]|=>|是|为)[ \t]*"""
    r"""(?:"([^"\n]{6,200})"|'([^'\n]{6,200})'|([^\s"',;\uff0c。\uff1b}{)\]]{6,200}))"""
)
# After a key/token keyword: a little filler, then a token.
_NEAR_TOKEN = re.compile(
    r"[^\n]{0,30}?(?<![A-Za-z0-9_\-+/.=])([A-Za-z0-9_\-+/.=]{16,512})(?![A-Za-z0-9_\-+/.=])"
)
# "$DB_PASSWORD", "${DB_PASSWORD}", "$(cat secret)": a reference, not the password.
_ENV_REFERENCE = re.compile(r"\$(?:\{|\(|[A-Z_][A-Z0-9_]*\b)")
# What every assignment (``_ASSIGNMENT``, ``_KEY_ASSIGNMENT``) holds: ":", "=" (also in
# "=>"), the full-width colon, 是 or 为.
_ASSIGNS = (":", "=", "\uff1a", "是", "为")
# The shortest run of token characters (``TextShape.token_run``) a key with a known
# prefix ("xox" + a letter, "-" and 10 more: 15), a bearer token or a token near a key
# word (16) can be.
_SHORTEST_TOKEN = 15
_PLACEHOLDERS = frozenset(
    {"", "none", "null", "nil", "true", "false", "undefined", "required", "optional", "string"}
)


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value``'s character distribution."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


def high_entropy(token: str) -> bool:
    """Whether ``token`` looks machine-generated: long, letters and digits mixed, varied."""
    if len(token) < 16:
        return False
    has_digit = any(c.isdigit() for c in token)
    has_letter = any(c.isalpha() for c in token)
    return has_digit and has_letter and shannon_entropy(token) >= 3.0


def _placeholder(value: str) -> bool:
    v = value.strip().lower()
    return (
        v in _PLACEHOLDERS or set(v) <= set("*x•.-_#<>?") or v.startswith(("${", "{{", "<", "%("))
    )


def _assigned_secret(value: str, *, strong: bool) -> bool:
    if _placeholder(value) or shannon_entropy(value) < 2.5:
        return False
    return strong or (any(c.isdigit() for c in value) and any(c.isalpha() for c in value))


class SecretRecognizer:
    """API keys, tokens, private keys and passwords."""

    name = "secret"
    entity_types: tuple[str, ...] = (EntityType.SECRET,)

    @staticmethod
    def possible(shape: TextShape) -> bool:
        """Whether ``shape`` can hold a secret: a token, a private key or an assignment."""
        text = shape.text
        return (
            shape.token_run(_SHORTEST_TOKEN)
            or "-----BEGIN" in text
            or any(map(text.__contains__, _ASSIGNS))
        )

    def analyze(self, text: str) -> list[Finding]:
        """Every secret in ``text``."""
        findings: list[Finding] = []
        shape = shape_of(text)
        tokens = shape is None or shape.token_run(_SHORTEST_TOKEN)
        # Each pattern runs only when its trigger literals or keywords occur somewhere
        # in the text: plain substring tests are much cheaper than the scans.
        if tokens and _KNOWN_TRIGGER.search(text) is not None:
            for m in _KNOWN.finditer(text):
                if not glued_before(text, m.start()):
                    findings.append(self._finding(m.start(), m.end(), 0.95))
        if tokens and "earer" in text:
            for m in _BEARER.finditer(text):
                findings.append(self._finding(m.start(1), m.end(1), 0.9))
        if "-----BEGIN" in text:
            for m in _PRIVATE_KEY.finditer(text):
                end = m.end()
                while end > m.start() and text[end - 1].isspace():
                    end -= 1
                findings.append(self._finding(m.start(), end, 0.99))
        if any(map(text.__contains__, _ASSIGNS)):
            self._assigned(text, findings)
        if tokens:
            for m in _SECRET_GATE.finditer(_SECRET_KEY, text):
                t = _NEAR_TOKEN.match(text, m.end())
                if t is not None and high_entropy(t.group(1)):
                    findings.append(self._finding(t.start(1), t.end(1), 0.8))
        if not findings:
            return findings
        return _dedupe(findings)

    def _assigned(self, text: str, findings: list[Finding]) -> None:
        """Values assigned to a password word or a key name."""
        for m in _PASSWORD_GATE.finditer(_PASSWORD_KEY, text):
            a = _ASSIGNMENT.match(text, m.end())
            if a is None:
                continue
            group = next(g for g in (1, 2, 3) if a.group(g) is not None)
            if not (_placeholder(a.group(group)) or _ENV_REFERENCE.match(text, a.start(group))):
                findings.append(self._finding(a.start(group), a.end(group), 0.9))
        for m in _KEY_NAME_GATE.finditer(_KEY_NAME, text):
            a = _KEY_ASSIGNMENT.match(text, m.end())
            if a is None:
                continue
            group = next(g for g in (1, 2, 3) if a.group(g) is not None)
            value = a.group(group)
            if _assigned_secret(value, strong=m.group("strong") is not None) and not (
                _ENV_REFERENCE.match(text, a.start(group))
            ):
                findings.append(self._finding(a.start(group), a.end(group), 0.85))

    def _finding(self, start: int, end: int, score: float) -> Finding:
        return Finding(EntityType.SECRET, start, end, score, self.name)


def _dedupe(findings: list[Finding]) -> list[Finding]:
    # The same span found twice (a known prefix after "api_key=") is reported once,
    # with the higher score.
    best: dict[tuple[int, int], Finding] = {}
    for f in findings:
        key = (f.start, f.end)
        if key not in best or best[key].score < f.score:
            best[key] = f
    return sorted(best.values(), key=lambda f: f.start)
