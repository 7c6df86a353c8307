"""Classic Delta Mush (Mancewicz et al. 2014): the float64 reference and bind data
(:mod:`.reference`), the compute passes after skinning (:mod:`.passes`) and the
DeltaMushSkinner (:mod:`.gpu`)."""
