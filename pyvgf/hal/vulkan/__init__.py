"""The Vulkan backend (VK_ARM_tensors + VK_ARM_data_graph)."""
