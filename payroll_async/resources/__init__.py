"""One module per group of the service's operations."""

from .employer_identifiers import EmployerIdentifiers, Invites, UpdateGroups
from .payroll_connections import PayrollConnections
from .webhooks import Webhooks

__all__ = ["EmployerIdentifiers", "Invites", "PayrollConnections", "UpdateGroups", "Webhooks"]
