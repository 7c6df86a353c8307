// The mesh's vertex rows as its layout stores them (vkdqs/shader_interface.py's VertexLayout).
// Joints are unsigned (uint32, or uint16/uint8 in the lean layout) and weights floats (float32,
// or unorm16/unorm8: the formats convert on fetch). Normals are xyz of a float or snorm16x4 row,
// or, where OCT_NORMALS is set (the lean layout), the octahedral encoding's xy in snorm16x2:
// mesh_normal() unfolds it (vkdqs/vertex_packing.py encodes it and bounds its error).

layout(constant_id = 12) const bool OCT_NORMALS = false;

// The unit vector of an octahedral encoding e in [-1, 1]^2 (Cigolle et al. 2014).
vec3 oct_decode(vec2 e) {
    vec3 v = vec3(e, 1.0 - abs(e.x) - abs(e.y));
    if (v.z < 0.0) {
        v.xy = (1.0 - abs(v.yx)) * vec2(v.x >= 0.0 ? 1.0 : -1.0, v.y >= 0.0 ? 1.0 : -1.0);
    }
    return normalize(v);
}

// The rest normal of a normals row (a texel, or the vertex input read as a vec4).
vec3 mesh_normal(vec4 row) {
    return OCT_NORMALS ? oct_decode(row.xy) : row.xyz;
}

// The compute path's lean layout packs a vertex's normal, joints and weights into one rgba32ui
// texel (two with 8 influences) that skin.comp fetches as 32-bit words and unpacks here: on
// lavapipe a narrow format's fetch converts each texel in software, and one fetch replaces three
// (vkdqs/shader_interface.py's packed_rows encodes them). Row 0: x the octahedral normal
// (snorm16x2), y joints 0..3 (uint8 each, low byte first), zw weights 0..3 (unorm16 each);
// row 1 (8 influences): x joints 4..7, yz weights 4..7.
layout(constant_id = 13) const bool PACKED_ROWS = false;

vec3 packed_normal(uvec4 row) {
    return oct_decode(unpackSnorm2x16(row.x));
}

ivec4 packed_joints(uint word) {
    return ivec4(uvec4(word, word >> 8, word >> 16, word >> 24) & 0xffu);
}

vec4 packed_weights(uvec2 words) {
    return vec4(unpackUnorm2x16(words.x), unpackUnorm2x16(words.y));
}
