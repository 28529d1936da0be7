"""The write path: files read through the adapters into the store, derived data brought up to date,
side files kept, machines synced."""
