// Morph targets, applied to the rest vertex before skinning (skin.comp and every skin.vert
// variant; crowds are not morphed). Layouts and limits: vkdqs/shader_interface.py ("morph
// targets"). The deltas sit in one rgba32f texel buffer, sparse and vertex-major (each vertex's
// range of (target, delta) entries: a vertex pays for its own non-zero deltas, not for the
// pose's active targets; inactive ones add weight 0) or, for meshes where most targets move
// most vertices, dense and target-major (the pose's active targets listed in the MorphBlock,
// four at a time). On lavapipe a branch does not skip work, a shorter loop does, so neither
// loop has per-target branches.

#define MAX_MORPH_TARGETS 1024

// Bit 0: position deltas, bit 1: normal deltas, bit 2: the sparse layout. 0 (a mesh without
// targets, or a pose without active ones) compiles the code below away when the pipeline is
// made, and so does a missing kind or the other layout: on lavapipe a branch runs its body
// under a mask (a loop's body once even for zero trips), so only a specialization constant
// removes the work.
layout(constant_id = 2) const int MORPH_TARGETS = 0;

layout(set = 0, binding = 10) uniform samplerBuffer morph_deltas;  // rgba32f

layout(std140, set = 0, binding = 11) uniform MorphBlock {
    // x: active targets (dense: groups of 4), y: vertices, z: texel of sparse entry 0,
    // w: texels per delta record (2 with position and normal deltas, else 1)
    ivec4 morph_header;
    ivec4 morph_active[MAX_MORPH_TARGETS / 4];  // dense: the active targets, then -1
    vec4 morph_weights[MAX_MORPH_TARGETS / 4];  // target t's weight at [t / 4][t % 4]
};

float morph_weight(int t) {
    return t < 0 ? 0.0 : morph_weights[t >> 2][t & 3];
}

// Vertex v: p + sum_i w_i dp_i and normalize(n + sum_i w_i dn_i) (n where that sum vanishes).
void morph_vertex(int v, inout vec3 p, inout vec3 n) {
    if ((MORPH_TARGETS & 3) == 0) {
        return;
    }
    const bool positions = (MORPH_TARGETS & 1) != 0;
    const bool normals = (MORPH_TARGETS & 2) != 0;
    int stride = morph_header.w;
    vec3 dp = vec3(0.0);
    vec3 dn = vec3(0.0);
    if ((MORPH_TARGETS & 4) != 0) {
        vec4 r = texelFetch(morph_deltas, v >> 1);
        vec2 range = (v & 1) == 0 ? r.xy : r.zw;
        int e = morph_header.z + int(range.x) * stride;
        int end = e + int(range.y) * stride;
        for (; e < end; e += stride) {
            vec4 a = texelFetch(morph_deltas, e);  // (delta xyz, target)
            float w = morph_weights[int(a.w) >> 2][int(a.w) & 3];
            if (positions) {
                dp += w * a.xyz;
                if (normals) {
                    dn += w * texelFetch(morph_deltas, e + 1).xyz;
                }
            } else {
                dn += w * a.xyz;
            }
        }
    } else {
        int groups = morph_header.x;
        int count = morph_header.y;
        for (int g = 0; g < groups; ++g) {
            ivec4 t = morph_active[g];
            vec4 w = vec4(morph_weight(t.x), morph_weight(t.y), morph_weight(t.z), morph_weight(t.w));
            ivec4 b = (max(t, ivec4(0)) * count + v) * stride;
            if (positions) {
                dp += w.x * texelFetch(morph_deltas, b.x).xyz + w.y * texelFetch(morph_deltas, b.y).xyz +
                      w.z * texelFetch(morph_deltas, b.z).xyz + w.w * texelFetch(morph_deltas, b.w).xyz;
            }
            if (normals) {
                b += stride - 1;
                dn += w.x * texelFetch(morph_deltas, b.x).xyz + w.y * texelFetch(morph_deltas, b.y).xyz +
                      w.z * texelFetch(morph_deltas, b.z).xyz + w.w * texelFetch(morph_deltas, b.w).xyz;
            }
        }
    }
    p += dp;
    vec3 m = n + dn;
    float len = length(m);
    n = len < 1e-6 ? n : m / len;
}
