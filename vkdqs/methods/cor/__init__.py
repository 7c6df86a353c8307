"""Optimized centers of rotation (Le & Hodgins 2016): the numpy side (:mod:`.reference`) and
the per-mesh precomputation on the GPU (:mod:`.gpu`)."""
