"""Hopper's machinery measured directly: wgmma's rate, TMA's, thread-block clusters."""
