"""Direct Delta Mush (Le & Lewis 2019): the float64 reference and precomputed data
(:mod:`.reference`) and the precomputation's smoothing on the GPU (:mod:`.gpu`)."""
