// Morph targets, applied to the rest vertex before skinning (skin.comp and every skin.vert
// variant; crowds are not morphed). Layout and limits: vkdqs/shader_interface.py ("morph
// targets"): the deltas of all targets in one rgba32f texel buffer, and per pose a list of
// only the targets with a non-zero weight, so a pose costs its active targets, not all of them,
// and a mesh without targets (count 0, a one-texel buffer) runs the same code for ~nothing.

#define MAX_ACTIVE_MORPHS 64

layout(set = 0, binding = 10) uniform samplerBuffer morph_deltas;  // rgba32f, xyz used

layout(std140, set = 0, binding = 11) uniform MorphBlock {
    ivec4 morph_count;  // x: active targets
    // per active target: x the texel offset of its position deltas, y of its normal deltas
    // (-1: none)
    ivec4 morph_targets[MAX_ACTIVE_MORPHS];
    vec4 morph_weights[MAX_ACTIVE_MORPHS / 4];
};

// p + sum_i w_i dp_i and normalize(n + sum_i w_i dn_i) (n where that sum vanishes), for vertex v.
void morph_vertex(int v, inout vec3 p, inout vec3 n) {
    int count = morph_count.x;
    if (count <= 0) {
        return;
    }
    vec3 dn = vec3(0.0);
    for (int i = 0; i < count; ++i) {
        ivec4 t = morph_targets[i];
        float w = morph_weights[i >> 2][i & 3];
        if (t.x >= 0) {
            p += w * texelFetch(morph_deltas, t.x + v).xyz;
        }
        if (t.y >= 0) {
            dn += w * texelFetch(morph_deltas, t.y + v).xyz;
        }
    }
    vec3 m = n + dn;
    float len = length(m);
    n = len < 1e-6 ? n : m / len;
}
