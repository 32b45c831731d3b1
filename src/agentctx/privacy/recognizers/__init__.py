"""The built-in recognizers, one module per family of entities."""

from __future__ import annotations

from agentctx.privacy.findings import Recognizer
from agentctx.privacy.recognizers.contact import EmailRecognizer, PhoneRecognizer
from agentctx.privacy.recognizers.fields import FieldRecognizer
from agentctx.privacy.recognizers.finance import CreditCardRecognizer, IBANRecognizer
from agentctx.privacy.recognizers.identity import (
    EmployeeIDRecognizer,
    ResidentIDRecognizer,
    StudentIDRecognizer,
)
from agentctx.privacy.recognizers.labelled import LabelledIDRecognizer, SSNRecognizer
from agentctx.privacy.recognizers.names import PersonRecognizer
from agentctx.privacy.recognizers.network import IPAddressRecognizer, URLCredentialsRecognizer
from agentctx.privacy.recognizers.secrets import SecretRecognizer


def default_recognizers(names: bool = True) -> list[Recognizer]:
    """One instance of every built-in recognizer; person names (only where the text marks
    them as names, or a record's field names them) unless ``names`` is false."""
    recognizers: list[Recognizer] = [
        EmailRecognizer(),
        PhoneRecognizer(),
        ResidentIDRecognizer(),
        LabelledIDRecognizer(),
        SSNRecognizer(),
        StudentIDRecognizer(),
        EmployeeIDRecognizer(),
        CreditCardRecognizer(),
        IBANRecognizer(),
        IPAddressRecognizer(),
        URLCredentialsRecognizer(),
        SecretRecognizer(),
        FieldRecognizer(names=names),
    ]
    if names:
        recognizers.append(PersonRecognizer())
    return recognizers


__all__ = [
    "CreditCardRecognizer",
    "EmailRecognizer",
    "EmployeeIDRecognizer",
    "FieldRecognizer",
    "IBANRecognizer",
    "IPAddressRecognizer",
    "LabelledIDRecognizer",
    "PersonRecognizer",
    "PhoneRecognizer",
    "ResidentIDRecognizer",
    "SSNRecognizer",
    "SecretRecognizer",
    "StudentIDRecognizer",
    "URLCredentialsRecognizer",
    "default_recognizers",
]
