"""Every string bound for a terminal: the one sanitiser (`sanitize`, its SGR state in `sgr`),
redaction of secrets (`redact`), how every unit reads (`units`).
"""
