"""Backends that execute a planned model: cpu (numpy) and vulkan."""
