"""Learned models: datasets from the simulator or recorded runs, the Vector/Cube/Scalar unit
selector, the tiling cost regressor and the crossover search."""
