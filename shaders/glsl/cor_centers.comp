#version 450
// Optimized centers of rotation (Le & Hodgins 2016, eq. 3 and 4), one vertex per invocation:
// the numerator sum_t s(w_i, w_t) A_t c_t and the denominator sum_t s(w_i, w_t) A_t. The host
// (vkdqs/methods/cor/reference.py, pair_bins) groups the triangles' terms by bone pair (j < k)
// and merges triangles with nearly equal weights; a vertex visits only the entries of its own
// bone pairs, since a term of s needs both bones in both weight vectors. The host divides.
// Where a device's texel views are smaller than the buffers (vkdqs/methods/cor/gpu.py), the
// vertex views start at a tile's first vertex and pair_bins views a window of entries.

layout(local_size_x_id = 1) in;

layout(set = 0, binding = 1) uniform isamplerBuffer in_joints;     // rgba32i, slots 0..3
layout(set = 0, binding = 2) uniform samplerBuffer in_weights;     // rgba32f, slots 0..3
layout(set = 0, binding = 3) uniform isamplerBuffer in_joints_1;   // rgba32i, slots 4..7
layout(set = 0, binding = 4) uniform samplerBuffer in_weights_1;   // rgba32f, slots 4..7
layout(set = 0, binding = 5) uniform isamplerBuffer pair_ranges;   // rgba32i at j*B+k: first, count
layout(set = 0, binding = 6) uniform samplerBuffer pair_bins;      // rgba32f, 2 texels an entry
layout(set = 0, binding = 7, r32f) uniform imageBuffer out_data;  // num.xyz, den

layout(push_constant) uniform PushConstants {
    uint first_vertex;
    uint vertex_count;  // in this dispatch
    int bone_count;
    float inv_sigma2;
    // The window of entries pair_bins views: [entry_first, entry_end). Where one view cannot
    // hold every entry (maxTexelBufferElements), the host runs a dispatch per window, the first
    // writing the sums, the others adding theirs (accumulate).
    int entry_first;
    int entry_end;
    uint accumulate;
} pc;

void main() {
    uint g = gl_GlobalInvocationID.x;
    if (g >= pc.vertex_count) {
        return;
    }
    int v = int(pc.first_vertex + g);
    ivec4 j0 = texelFetch(in_joints, v);
    ivec4 j1 = texelFetch(in_joints_1, v);
    vec4 w0 = texelFetch(in_weights, v);
    vec4 w1 = texelFetch(in_weights_1, v);
    int js[8] = int[8](j0.x, j0.y, j0.z, j0.w, j1.x, j1.y, j1.z, j1.w);
    float ws[8] = float[8](w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w);
    // Compensated (Kahan) sums: a vertex can add up ~1e5 terms, and plain float32 sums of the
    // A c terms drift by ~1e-4 of the extent there. `precise` keeps the compiler from
    // simplifying (t - s) - y away.
    precise vec3 num = vec3(0.0);
    precise vec3 num_c = vec3(0.0);
    precise float den = 0.0;
    precise float den_c = 0.0;
    for (int s = 0; s < 8; ++s) {
        if (ws[s] <= 0.0) {
            continue;
        }
        for (int r = s + 1; r < 8; ++r) {
            if (ws[r] <= 0.0 || js[r] == js[s]) {
                continue;
            }
            int j = js[s];
            int k = js[r];
            float aj = ws[s];
            float ak = ws[r];
            if (j > k) {
                j = js[r];
                k = js[s];
                aj = ws[r];
                ak = ws[s];
            }
            ivec4 range = texelFetch(pair_ranges, j * pc.bone_count + k);
            float scale = 2.0 * aj * ak;
            int end = min(range.x + range.y, pc.entry_end);
            for (int e = max(range.x, pc.entry_first); e < end; ++e) {
                int t = 2 * (e - pc.entry_first);
                vec4 e0 = texelFetch(pair_bins, t);  // b_j, b_k, A
                vec4 e1 = texelFetch(pair_bins, t + 1);  // A c
                float d = aj * e0.y - ak * e0.x;
                float term = scale * e0.x * e0.y * exp(-d * d * pc.inv_sigma2);
                precise vec3 yn = term * e1.xyz - num_c;
                precise vec3 tn = num + yn;
                num_c = (tn - num) - yn;
                num = tn;
                precise float yd = term * e0.z - den_c;
                precise float td = den + yd;
                den_c = (td - den) - yd;
                den = td;
            }
        }
    }
    int o = 4 * v;
    if (pc.accumulate != 0u) {
        num += vec3(imageLoad(out_data, o).x, imageLoad(out_data, o + 1).x,
                    imageLoad(out_data, o + 2).x);
        den += imageLoad(out_data, o + 3).x;
    }
    imageStore(out_data, o, vec4(num.x));
    imageStore(out_data, o + 1, vec4(num.y));
    imageStore(out_data, o + 2, vec4(num.z));
    imageStore(out_data, o + 3, vec4(den));
}
