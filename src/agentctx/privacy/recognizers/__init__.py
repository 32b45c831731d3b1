"""The built-in recognizers, one module per family of entities."""

from __future__ import annotations

from agentctx.privacy.findings import Recognizer
from agentctx.privacy.recognizers.contact import EmailRecognizer, PhoneRecognizer
from agentctx.privacy.recognizers.finance import CreditCardRecognizer
from agentctx.privacy.recognizers.identity import (
    EmployeeIDRecognizer,
    ResidentIDRecognizer,
    StudentIDRecognizer,
)
from agentctx.privacy.recognizers.names import PersonRecognizer
from agentctx.privacy.recognizers.network import IPAddressRecognizer, URLCredentialsRecognizer
from agentctx.privacy.recognizers.secrets import SecretRecognizer


def default_recognizers(names: bool = False) -> list[Recognizer]:
    """One instance of every built-in recognizer; person names only when ``names`` is true."""
    recognizers: list[Recognizer] = [
        EmailRecognizer(),
        PhoneRecognizer(),
        ResidentIDRecognizer(),
        StudentIDRecognizer(),
        EmployeeIDRecognizer(),
        CreditCardRecognizer(),
        IPAddressRecognizer(),
        URLCredentialsRecognizer(),
        SecretRecognizer(),
    ]
    if names:
        recognizers.append(PersonRecognizer())
    return recognizers


__all__ = [
    "CreditCardRecognizer",
    "EmailRecognizer",
    "EmployeeIDRecognizer",
    "IPAddressRecognizer",
    "PersonRecognizer",
    "PhoneRecognizer",
    "ResidentIDRecognizer",
    "SecretRecognizer",
    "StudentIDRecognizer",
    "URLCredentialsRecognizer",
    "default_recognizers",
]
