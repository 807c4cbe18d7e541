"""Real runs' traces and logs (``TORCH_TRACE``, ``TORCH_LOGS``) read into the results an analysis makes."""
