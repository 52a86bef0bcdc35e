"""The memory-hierarchy cost simulator of an Ascend AI Core: pipes, buffer queues, cores, GM."""
