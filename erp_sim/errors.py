"""One error hierarchy. Tools raise; one place (``erp_sim.erp_session``) turns errors into responses.

Every error has a stable ``code`` (shown to the agent, used by the MCP server to decide what
is a tool error) and a message written for the agent: what was wrong and what to do.
"""

from __future__ import annotations


class ErpError(Exception):
    """A business or usage error the caller can fix; reported, never raised out of a session."""

    code = "Error"


class ValidationError(ErpError):
    """An argument or control value breaks a rule (type, range, format, size)."""

    code = "ValidationError"


class NotFoundError(ErpError):
    """A named thing (tool, menu item, control, grid row, entity) does not exist."""

    code = "NotFound"


class BusinessRuleError(ErpError):
    """The request is well formed but the ERP's rules forbid it (e.g. editing a submitted report)."""

    code = "BusinessRuleViolation"


class FormStateError(ErpError):
    """The request does not fit the current form (no form open, no row selected ...)."""

    code = "InvalidFormState"


class TransientFaultError(ErpError):
    """An injected, realistic passing failure (busy form, lost session, timeout); nothing changed."""

    code = "TransientFault"

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


class ResponseTooLargeError(ErpError):
    """The response would exceed the real server's 160,000-character limit."""

    code = "ResponseTooLarge"


class InternalError(ErpError):
    """A simulator bug caught at the session boundary: reported as an error response, never raised."""

    code = "InternalError"
