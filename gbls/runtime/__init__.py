"""Running analyses: the warm worker, its sandbox, the scheduler and the session that owns them."""
