"""The engine: the Skinner, the Renderer and what they draw (instances, crowds), the
boxes and the passes around skinning, the render targets. Built on :mod:`vkdqs.gpu`; the
methods it runs come from the registry (:mod:`vkdqs.methods`)."""
