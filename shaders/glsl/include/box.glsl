// Exact axis-aligned boxes folded with integer atomics (skin.comp's box reduction, bounds.comp).
// A pose's box is 6 uints at `base` in a `boxes` uint array the including shader declares: min
// xyz, max xyz, as order-preserving keys, so integer atomicMax is float min and max (the host
// zero-fills the records and decodes the keys: vkdqs.shader_interface.decode_boxes).

// An order-preserving key of a float: a < b (not NaN) exactly when key(a) < key(b) as uints.
uint float_key(float f) {
    uint u = floatBitsToUint(f);
    return (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
}

// Fold the box (lo, hi) into the pose's record at boxes[base .. base + 5].
void fold_box(uint base, vec3 lo, vec3 hi) {
    atomicMax(boxes[base], ~float_key(lo.x));
    atomicMax(boxes[base + 1u], ~float_key(lo.y));
    atomicMax(boxes[base + 2u], ~float_key(lo.z));
    atomicMax(boxes[base + 3u], float_key(hi.x));
    atomicMax(boxes[base + 4u], float_key(hi.y));
    atomicMax(boxes[base + 5u], float_key(hi.z));
}
