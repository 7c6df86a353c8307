// Morph targets, applied to the rest vertex before skinning (skin.comp and every skin.vert
// variant; crowds are not morphed). Layout and limits: vkdqs/shader_interface.py ("morph
// targets"). The deltas of all targets sit in one rgba32f texel buffer; per pose the MorphBlock
// lists only the targets with a non-zero weight, four at a time (a group: one ivec4 of texel
// offsets and one vec4 of weights, no per-target branches: on lavapipe a branch does not skip
// work, a shorter loop does), so a pose costs its active targets, not all of them, and a mesh
// without targets (0 groups, a one-texel buffer) runs the same code for ~nothing.

#define MAX_ACTIVE_MORPHS 64

// Which deltas the mesh has: bit 0 position, bit 1 normal deltas. 0 (a mesh without targets, or
// a pose without active ones) compiles the code below away when the pipeline is made, and so
// does a missing kind: on lavapipe a branch runs its body under a mask (a loop's body once even
// for zero trips), so only a specialization constant removes the work.
layout(constant_id = 2) const int MORPH_TARGETS = 0;

layout(set = 0, binding = 10) uniform samplerBuffer morph_deltas;  // rgba32f, xyz used

layout(std140, set = 0, binding = 11) uniform MorphBlock {
    // x: groups of 4 active targets, y: has position deltas, z: normal ones, w: texels a vertex
    ivec4 morph_header;
    ivec4 morph_position_base[MAX_ACTIVE_MORPHS / 4];  // texel of each target's vertex 0
    ivec4 morph_normal_base[MAX_ACTIVE_MORPHS / 4];
    vec4 morph_weights[MAX_ACTIVE_MORPHS / 4];  // 0 for the padding of the last group
};

// Vertex v: p + sum_i w_i dp_i and normalize(n + sum_i w_i dn_i) (n where that sum vanishes).
void morph_vertex(int v, inout vec3 p, inout vec3 n) {
    int groups = morph_header.x;
    if (MORPH_TARGETS == 0 || groups <= 0) {
        return;
    }
    vec3 dp = vec3(0.0);
    vec3 dn = vec3(0.0);
    for (int g = 0; g < groups; ++g) {
        vec4 w = morph_weights[g];
        if ((MORPH_TARGETS & 1) != 0) {
            ivec4 b = morph_position_base[g] + morph_header.w * v;
            dp += w.x * texelFetch(morph_deltas, b.x).xyz + w.y * texelFetch(morph_deltas, b.y).xyz +
                  w.z * texelFetch(morph_deltas, b.z).xyz + w.w * texelFetch(morph_deltas, b.w).xyz;
        }
        if ((MORPH_TARGETS & 2) != 0) {
            ivec4 b = morph_normal_base[g] + morph_header.w * v;
            dn += w.x * texelFetch(morph_deltas, b.x).xyz + w.y * texelFetch(morph_deltas, b.y).xyz +
                  w.z * texelFetch(morph_deltas, b.z).xyz + w.w * texelFetch(morph_deltas, b.w).xyz;
        }
    }
    p += dp;
    vec3 m = n + dn;
    float len = length(m);
    n = len < 1e-6 ? n : m / len;
}
