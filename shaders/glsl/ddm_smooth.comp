#version 450
// Direct Delta Mush's precomputation (vkdqs/ddm_gpu.py): one Chebyshev-accelerated Jacobi
// sweep of one implicit Laplacian smoothing step, one bone column of one vertex per invocation.
// A step solves (I + s D^-1 L) x = b (vkdqs/ddm.py); with the Jacobi update
//     y[v] = (b[v] + s * sum_k a_vk x[k]) / (1 + s),    a_vk = W_vk / D_v
// (the row-normalized cotangent weights), the sweep is
//     next[v] = previous[v] + omega * (y[v] - previous[v])
// (omega = 1: plain Jacobi, the first sweep). A vertex with no neighbour (D_v = 0) keeps b.
// A column is three rgba32f texels: the 10 values of w u u^T (step lambda), then the weight
// (step kappa) and a pad, so the third texel's z and w take kappa and its own omega.

layout(local_size_x_id = 1) in;

layout(set = 0, binding = 0) uniform isamplerBuffer rows;       // rgba32i: first entry, count
layout(set = 0, binding = 1) uniform isamplerBuffer neighbours; // rgba32i: vertex, bits of a_vk
layout(set = 0, binding = 2) uniform samplerBuffer rhs;         // rgba32f: b, the last step
layout(set = 0, binding = 3) uniform samplerBuffer current;     // rgba32f: x_m
layout(set = 0, binding = 4) uniform samplerBuffer previous;    // rgba32f: x_(m-1)
layout(set = 0, binding = 5, rgba32f) uniform writeonly imageBuffer next;  // x_(m+1)

layout(push_constant) uniform PushConstants {
    uint vertex_count;
    uint columns;          // per vertex
    uint row_invocations;  // invocations per row of the 2-D dispatch
    float rotation_step;     // lambda
    float translation_step;  // kappa
    float rotation_omega;    // Chebyshev weights of this sweep, per step size
    float translation_omega;
} pc;

void main() {
    uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * pc.row_invocations;
    if (g >= pc.vertex_count * pc.columns) {
        return;
    }
    int stride = 3 * int(pc.columns);
    int v = int(g / pc.columns);
    int c = 3 * int(g % pc.columns);
    int t = v * stride + c;
    vec4 b0 = texelFetch(rhs, t);
    vec4 b1 = texelFetch(rhs, t + 1);
    vec4 b2 = texelFetch(rhs, t + 2);
    ivec4 row = texelFetch(rows, v);
    if (row.y == 0) {
        imageStore(next, t, b0);
        imageStore(next, t + 1, b1);
        imageStore(next, t + 2, b2);
        return;
    }
    vec4 s0 = vec4(0.0);
    vec4 s1 = vec4(0.0);
    vec4 s2 = vec4(0.0);
    for (int e = row.x; e < row.x + row.y; ++e) {
        ivec4 n = texelFetch(neighbours, e);
        float a = intBitsToFloat(n.y);
        int k = n.x * stride + c;
        s0 += a * texelFetch(current, k);
        s1 += a * texelFetch(current, k + 1);
        s2 += a * texelFetch(current, k + 2);
    }
    float l = pc.rotation_step;
    vec4 s = vec4(l, l, pc.translation_step, pc.translation_step);
    vec4 w = vec4(pc.rotation_omega, pc.rotation_omega, pc.translation_omega,
                  pc.translation_omega);
    vec4 p0 = texelFetch(previous, t);
    vec4 p1 = texelFetch(previous, t + 1);
    vec4 p2 = texelFetch(previous, t + 2);
    imageStore(next, t, p0 + pc.rotation_omega * ((b0 + l * s0) / (1.0 + l) - p0));
    imageStore(next, t + 1, p1 + pc.rotation_omega * ((b1 + l * s1) / (1.0 + l) - p1));
    imageStore(next, t + 2, p2 + w * ((b2 + s * s2) / (1.0 + s) - p2));
}
