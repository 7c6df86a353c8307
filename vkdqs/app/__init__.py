"""Applications built on the engine: the scenes the viewer and ``vkdqs render`` show, stills,
method comparisons, the label overlay, the windowed viewer and the command line."""
