"""Small models in plain NumPy, used by the demo, the tutorials and the benchmarks."""
