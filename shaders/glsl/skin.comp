#version 450
#extension GL_GOOGLE_include_directive : require
// Compute skinning for throughput and batches: the same skin_vertex() as skin.vert.
// Vertex data is read through uniform texel buffers and written through a storage texel buffer:
// on lavapipe texel-buffer access is an order of magnitude faster than storage-buffer access.
// Output layout: positions at position_base + 3*i, normals at normal_base + 3*i (floats), so the
// host reads them back as two tightly packed (N, 3) arrays.

#include "include/skin.glsl"
#include "include/morph.glsl"

layout(local_size_x_id = 1) in;

layout(set = 0, binding = 1) uniform samplerBuffer in_positions;   // rgba32f, xyz used
layout(set = 0, binding = 2) uniform samplerBuffer in_normals;     // rgba32f, xyz used
layout(set = 0, binding = 3) uniform isamplerBuffer in_joints;     // rgba32i
layout(set = 0, binding = 4) uniform samplerBuffer in_weights;     // rgba32f
layout(set = 0, binding = 5, r32f) uniform writeonly imageBuffer out_data;
#ifdef SKIN_INFLUENCES_8
layout(set = 0, binding = 7) uniform isamplerBuffer in_joints_1;   // rgba32i, slots 4..7
layout(set = 0, binding = 8) uniform samplerBuffer in_weights_1;   // rgba32f, slots 4..7
#endif
#ifdef SKIN_AUX
layout(set = 0, binding = 9) uniform samplerBuffer in_aux;  // rgba32f: center xyz, DQS blend w
#endif

layout(push_constant) uniform PushConstants {
    uint vertex_count;
    uint position_base;
    uint normal_base;
} pc;

void main() {
    uint v = gl_GlobalInvocationID.x;
    if (v >= pc.vertex_count) {
        return;
    }
    int iv = int(v);
    vec3 p = texelFetch(in_positions, iv).xyz;
    vec3 n = texelFetch(in_normals, iv).xyz;
    morph_vertex(iv, p, n);
    skin_vertex(texelFetch(in_joints, iv), texelFetch(in_weights, iv),
#ifdef SKIN_INFLUENCES_8
                texelFetch(in_joints_1, iv), texelFetch(in_weights_1, iv),
#endif
#ifdef SKIN_AUX
                texelFetch(in_aux, iv),
#endif
                p, n, p, n);
    int i = int(pc.position_base + 3u * v);
    int k = int(pc.normal_base + 3u * v);
    imageStore(out_data, i, vec4(p.x));
    imageStore(out_data, i + 1, vec4(p.y));
    imageStore(out_data, i + 2, vec4(p.z));
    imageStore(out_data, k, vec4(n.x));
    imageStore(out_data, k + 1, vec4(n.y));
    imageStore(out_data, k + 2, vec4(n.z));
}
