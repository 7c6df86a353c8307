#version 450
// Direct Delta Mush's precomputation (vkdqs/ddm_gpu.py): one term of a Chebyshev expansion of
// the p implicit smoothing steps, f(D^-1 L) b with f(x) = (1 + s x)^-p, one bone column of one
// vertex per invocation. With A = (2 / (1 + r)) D^-1 L - I (its spectrum within [-1, 1]; r
// bounds sum_k |W_vk| / D_v), this pass computes T_(k+1) = 2 A T_k - T_(k-1) (T_1 = A T_0 on
// the first pass, T_0 = b) and adds c_(k+1) T_(k+1) to the sum. For a row with neighbours
// D^-1 L x = x - sum_k a_vk x_k (a_vk = W_vk / D_v), so A x = gamma x - delta sum_k a_vk x_k
// with gamma = (1 - r) / (1 + r), delta = 2 / (1 + r); a vertex with none (D_v = 0) has
// D^-1 L = 0 there, A x = -x. A column is three rgba32f texels: the 10 values of w u u^T
// (step lambda, coefficient c_rotation), then the weight (step kappa, c_translation), a pad.
// Invocation i works on item i, one (vertex, column) the expansion reaches (a column's support
// grown by the passes' reach): the others stay zero, as the host fills them.

layout(local_size_x_id = 1) in;

layout(set = 0, binding = 0) uniform isamplerBuffer rows;       // rgba32i: first entry, count
layout(set = 0, binding = 1) uniform isamplerBuffer neighbours; // rgba32i: vertex, bits of a_vk
layout(set = 0, binding = 2) uniform samplerBuffer current;     // rgba32f: T_k
layout(set = 0, binding = 3) uniform samplerBuffer previous;    // rgba32f: T_(k-1)
layout(set = 0, binding = 4, rgba32f) uniform writeonly imageBuffer next;  // T_(k+1)
layout(set = 0, binding = 5, rgba32f) uniform imageBuffer sum;   // the expansion so far
layout(set = 0, binding = 6) uniform usamplerBuffer items;      // r32ui: vertex * columns + column

layout(push_constant) uniform PushConstants {
    uint item_count;
    uint columns;          // per vertex
    uint row_invocations;  // invocations per row of the 2-D dispatch
    uint first;            // 1: T_1 = A T_0, else 2 A T_k - T_(k-1)
    float gamma;
    float delta;
    float c_rotation;      // c_(k+1) of f for lambda, and for kappa
    float c_translation;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * pc.row_invocations;
    if (i >= pc.item_count) {
        return;
    }
    uint g = texelFetch(items, int(i)).x;
    int stride = 3 * int(pc.columns);
    int v = int(g / pc.columns);
    int t = v * stride + 3 * int(g % pc.columns);
    vec4 x0 = texelFetch(current, t);
    vec4 x1 = texelFetch(current, t + 1);
    vec4 x2 = texelFetch(current, t + 2);
    ivec4 row = texelFetch(rows, v);
    vec4 a0;
    vec4 a1;
    vec4 a2;
    if (row.y == 0) {
        a0 = -x0;
        a1 = -x1;
        a2 = -x2;
    } else {
        vec4 s0 = vec4(0.0);
        vec4 s1 = vec4(0.0);
        vec4 s2 = vec4(0.0);
        for (int e = row.x; e < row.x + row.y; ++e) {
            ivec4 n = texelFetch(neighbours, e);
            float a = intBitsToFloat(n.y);
            int k = t + (n.x - v) * stride;
            s0 += a * texelFetch(current, k);
            s1 += a * texelFetch(current, k + 1);
            s2 += a * texelFetch(current, k + 2);
        }
        a0 = pc.gamma * x0 - pc.delta * s0;
        a1 = pc.gamma * x1 - pc.delta * s1;
        a2 = pc.gamma * x2 - pc.delta * s2;
    }
    if (pc.first == 0u) {
        a0 = 2.0 * a0 - texelFetch(previous, t);
        a1 = 2.0 * a1 - texelFetch(previous, t + 1);
        a2 = 2.0 * a2 - texelFetch(previous, t + 2);
    }
    imageStore(next, t, a0);
    imageStore(next, t + 1, a1);
    imageStore(next, t + 2, a2);
    float cr = pc.c_rotation;
    vec4 c2 = vec4(cr, cr, pc.c_translation, pc.c_translation);
    imageStore(sum, t, imageLoad(sum, t) + cr * a0);
    imageStore(sum, t + 1, imageLoad(sum, t + 1) + cr * a1);
    imageStore(sum, t + 2, imageLoad(sum, t + 2) + c2 * a2);
}
