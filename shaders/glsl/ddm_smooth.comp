#version 450
// Direct Delta Mush's precomputation (vkdqs/ddm_gpu.py): one Jacobi sweep of one implicit
// Laplacian smoothing step, one texel of one vertex per invocation. A step solves
// (I + s D^-1 L) x = b (vkdqs/ddm.py); the sweep is
//     out[v] = (b[v] + s * sum_k a_vk x[k]) / (1 + s),    a_vk = W_vk / D_v,
// the row-normalized cotangent weights. A vertex with no neighbour (D_v = 0) keeps b. Each
// vertex has `texels` rgba32f texels: per bone three, the 10 values of w u u^T (step lambda)
// then the weight (step kappa) and a pad, so the third texel's z and w take kappa.

layout(local_size_x_id = 1) in;

layout(set = 0, binding = 0) uniform isamplerBuffer rows;       // rgba32i: first entry, count
layout(set = 0, binding = 1) uniform isamplerBuffer neighbours; // rgba32i: vertex, bits of a_vk
layout(set = 0, binding = 2) uniform samplerBuffer rhs;         // rgba32f: b, the last step
layout(set = 0, binding = 3) uniform samplerBuffer current;     // rgba32f: x, the last sweep
layout(set = 0, binding = 4, rgba32f) uniform writeonly imageBuffer next;  // the new x

layout(push_constant) uniform PushConstants {
    uint vertex_count;
    uint texels;         // per vertex, a multiple of 3
    uint row_invocations; // invocations per row of the 2-D dispatch
    float rotation_step;  // lambda
    float translation_step;  // kappa
} pc;

void main() {
    uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * pc.row_invocations;
    if (g >= pc.vertex_count * pc.texels) {
        return;
    }
    int v = int(g / pc.texels);
    int c = int(g % pc.texels);
    int t = v * int(pc.texels) + c;
    vec4 b = texelFetch(rhs, t);
    ivec4 row = texelFetch(rows, v);
    if (row.y == 0) {
        imageStore(next, t, b);
        return;
    }
    vec4 sum = vec4(0.0);
    for (int e = row.x; e < row.x + row.y; ++e) {
        ivec4 n = texelFetch(neighbours, e);
        sum += intBitsToFloat(n.y) * texelFetch(current, n.x * int(pc.texels) + c);
    }
    vec4 s = vec4(pc.rotation_step);
    if (c % 3 == 2) {
        s.zw = vec2(pc.translation_step);
    }
    imageStore(next, t, (b + s * sum) / (1.0 + s));
}
