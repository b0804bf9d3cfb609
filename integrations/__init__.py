"""Optional integrations with environments and training libraries (never imported by the core)."""
